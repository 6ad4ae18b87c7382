// Mock LibTorch for the check tests: just the names the checks look at.
#pragma once

#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace c10 {
enum class DeviceType : signed char { CPU = 0, CUDA = 1, Meta = 14, MPS = 13 };
constexpr DeviceType kCPU = DeviceType::CPU;
constexpr DeviceType kCUDA = DeviceType::CUDA;
constexpr DeviceType kMeta = DeviceType::Meta;
constexpr DeviceType kMPS = DeviceType::MPS;
using DeviceIndex = signed char;
struct Device {
  /* implicit */ Device(DeviceType type, DeviceIndex index = -1)
      : type_(type), index_(index) {}
  /* implicit */ Device(const std::string &device_string);
  DeviceType type() const { return type_; }
  bool is_meta() const { return type_ == DeviceType::Meta; }

private:
  DeviceType type_;
  DeviceIndex index_;
};
enum class ScalarType { Float, Half, BFloat16 };
} // namespace c10

namespace torch {
using c10::Device;
using c10::DeviceType;
using c10::kCPU;
using c10::kCUDA;
using c10::kMeta;
using c10::kMPS;
using Dtype = c10::ScalarType;
constexpr Dtype kFloat = c10::ScalarType::Float;
constexpr Dtype kHalf = c10::ScalarType::Half;

struct Tensor {
  Tensor to(Device) const { return *this; }
  // Used by the metaguard-offloaded-parameter-move tests.
  Tensor to(Dtype) const { return *this; }
  Tensor to(Device, Dtype) const { return *this; }
  void set_data(const Tensor &) const {}
  Tensor &copy_(const Tensor &, bool non_blocking = false) { return *this; }
  Tensor data() const { return *this; }
  Tensor detach() const { return *this; }
  Tensor clone() const { return *this; }
  Tensor &zero_() { return *this; }
  Tensor &fill_(double) { return *this; }
  // In place (trailing underscore), and their out-of-place twins.
  Tensor &mul_(double) { return *this; }
  Tensor &add_(const Tensor &) { return *this; }
  Tensor &normal_(double mean = 0, double std = 1) { return *this; }
  Tensor &uniform_(double from = 0, double to = 1) { return *this; }
  Tensor &clamp_(double min, double max) { return *this; }
  Tensor &masked_fill_(const Tensor &mask, double value) { return *this; }
  Tensor &index_put_(std::vector<Tensor> indices, const Tensor &values) {
    return *this;
  }
  Tensor &requires_grad_(bool requires_grad = true) { return *this; }
  Tensor mul(double) const { return *this; }
  Tensor add(const Tensor &) const { return *this; }
  Tensor &grad() { return *this; }
  Tensor sum() const { return *this; }
  Device device() const { return Device(DeviceType::CPU); }
  bool is_meta() const { return false; }
  // Metadata, and what reads the data (used by metaguard-empty-model-used).
  std::vector<long> sizes() const { return {}; }
  long size(long dim) const { return 0; }
  long numel() const { return 0; }
  c10::ScalarType dtype() const { return c10::ScalarType::Float; }
  template <class T> T item() const { return T(); }
  template <class T> T *data_ptr() const { return nullptr; }
  void *data_ptr() const { return nullptr; }
  Tensor cpu() const { return *this; }
  Tensor abs() const { return *this; }
  // Like at::Tensor: assigning to an rvalue copies the values into it.
  Tensor &operator=(const Tensor &) & = default;
  Tensor &operator=(const Tensor &x) && {
    copy_(x);
    return *this;
  }
  Tensor &operator+=(const Tensor &) { return *this; }
};
std::ostream &operator<<(std::ostream &out, const Tensor &tensor);
Tensor zeros(std::vector<long> sizes);
Tensor randn(std::vector<long> sizes);

// torch::OrderedDict, as returned by Module::named_parameters().
template <class Key, class Value> class OrderedDict {
public:
  class Item {
  public:
    const Key &key() const { return key_; }
    Value &value() { return value_; }
    const Value &value() const { return value_; }
    Value *operator->() { return &value_; }
    Value &operator*() { return value_; }

  private:
    Key key_;
    Value value_;
  };
  Value &operator[](const Key &key);
  Item &operator[](size_t index);
  Value *find(const Key &key) noexcept;
  bool contains(const Key &key) const noexcept;
  size_t size() const { return items_.size(); }
  const std::vector<Item> &items() const noexcept { return items_; }
  std::vector<Key> keys() const;
  std::vector<Value> values() const;
  std::vector<std::pair<Key, Value>> pairs() const;
  typename std::vector<Item>::iterator begin() { return items_.begin(); }
  typename std::vector<Item>::iterator end() { return items_.end(); }

private:
  std::vector<Item> items_;
};

namespace serialize {
class InputArchive {};
} // namespace serialize

namespace nn {
class Module {
public:
  virtual ~Module() = default;
  virtual void load(serialize::InputArchive &archive);
  template <class M>
  std::shared_ptr<M> register_module(std::string, std::shared_ptr<M> m) {
    return m;
  }
  virtual void to(Device device, Dtype dtype, bool non_blocking = false) {}
  virtual void to(Dtype dtype, bool non_blocking = false) {}
  virtual void to(Device device, bool non_blocking = false) {}
  std::vector<Tensor> parameters(bool recurse = true) const { return {}; }
  OrderedDict<std::string, Tensor> named_parameters(bool recurse = true) const {
    return {};
  }
  Tensor &register_parameter(std::string name, Tensor tensor,
                             bool requires_grad = true);
  template <class T> T *as() { return dynamic_cast<T *>(this); }
  const std::string &name() const;
  void eval();
  using ModuleApplyFunction = std::function<void(Module &)>;
  void apply(const ModuleApplyFunction &function);
};

template <class Contained> class ModuleHolder {
public:
  ModuleHolder() : impl_(std::make_shared<Contained>()) {}
  template <class Head, class... Tail>
  explicit ModuleHolder(Head &&head, Tail &&...tail)
      : impl_(new Contained(std::forward<Head>(head),
                            std::forward<Tail>(tail)...)) {}
  ModuleHolder(std::nullptr_t) {}
  Contained *operator->() { return impl_.get(); }
  Contained &operator*() { return *impl_; }
  Contained *get() { return impl_.get(); }
  std::shared_ptr<Contained> ptr() const { return impl_; }
  template <class... Args> auto operator()(Args &&...args) {
    return impl_->forward(std::forward<Args>(args)...);
  }
  template <class Arg> decltype(auto) operator[](Arg &&arg) {
    return (*impl_)[std::forward<Arg>(arg)];
  }

private:
  std::shared_ptr<Contained> impl_;
};

struct ModuleListImpl : Module {
  std::shared_ptr<Module> operator[](size_t index) const;
  template <class T> T &at(size_t index);
  void push_back(std::shared_ptr<Module> module);
};
struct ModuleList : ModuleHolder<ModuleListImpl> {
  using ModuleHolder<ModuleListImpl>::ModuleHolder;
};

struct LinearImpl : Module {
  LinearImpl(int, int) {}
  void reset_parameters();
  Tensor weight;
  Tensor bias;
};
struct Linear : ModuleHolder<LinearImpl> {
  using ModuleHolder<LinearImpl>::ModuleHolder;
};
std::ostream &operator<<(std::ostream &out, const Module &module);
template <class Contained>
std::ostream &operator<<(std::ostream &out,
                         const ModuleHolder<Contained> &module);
} // namespace nn

// Initialisers that fill their argument in place.
namespace nn::init {
Tensor normal_(Tensor tensor, double mean = 0, double std = 1);
Tensor zeros_(Tensor tensor);
Tensor xavier_uniform_(Tensor tensor, double gain = 1.0);
Tensor uniform_(Tensor tensor, double low = 0, double high = 1);
Tensor constant_(Tensor tensor, double value);
double calculate_gain(int nonlinearity);
} // namespace nn::init

namespace optim {
class OptimizerParamGroup {
public:
  explicit OptimizerParamGroup(std::vector<Tensor> params);
};
class Optimizer {
public:
  explicit Optimizer(std::vector<OptimizerParamGroup> groups);
  virtual ~Optimizer() = default;
  virtual Tensor step(std::function<Tensor()> closure = nullptr) = 0;
  void zero_grad(bool set_to_none = true);
};
struct AdamOptions {
  AdamOptions(double lr = 1e-3);
};
class Adam : public Optimizer {
public:
  explicit Adam(std::vector<OptimizerParamGroup> groups, AdamOptions = {});
  explicit Adam(std::vector<Tensor> params, AdamOptions = {});
  Tensor step(std::function<Tensor()> closure = nullptr) override;
};
class AdamW : public Optimizer {
public:
  explicit AdamW(std::vector<Tensor> params, AdamOptions = {});
  Tensor step(std::function<Tensor()> closure = nullptr) override;
};
} // namespace optim

// torch::load(model, path): reads a checkpoint into the model's tensors.
template <class Value, class... Args> void load(Value &value, Args &&...args);
} // namespace torch

#define TORCH_MODULE(Name)                                                     \
  class Name : public torch::nn::ModuleHolder<Name##Impl> {                    \
  public:                                                                      \
    using torch::nn::ModuleHolder<Name##Impl>::ModuleHolder;                   \
  }

// TORCH_CHECK(cond, ...): throws c10::Error when cond is false; expanded as
// c10/util/Exception.h does, through C10_UNLIKELY and a [[noreturn]] call.
namespace c10::detail {
[[noreturn]] void torchCheckFail(const char *func, const char *file,
                                 unsigned line, const char *msg);
} // namespace c10::detail
#define TORCH_CHECK(cond, ...)                                                 \
  if (__builtin_expect(static_cast<bool>(!(cond)), 0)) {                       \
    ::c10::detail::torchCheckFail(__func__, __FILE__, __LINE__,                \
                                  "Expected " #cond " to be true");            \
  }
