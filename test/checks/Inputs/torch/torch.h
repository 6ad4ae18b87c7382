// Mock LibTorch for the check tests: just the names the checks look at.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>

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
};

namespace nn {
class Module {
public:
  virtual ~Module() = default;
  template <class M>
  std::shared_ptr<M> register_module(std::string, std::shared_ptr<M> m) {
    return m;
  }
  void to(Device) {}
};

template <class Contained> class ModuleHolder {
public:
  ModuleHolder() : impl_(std::make_shared<Contained>()) {}
  template <class Head, class... Tail>
  explicit ModuleHolder(Head &&head, Tail &&...tail)
      : impl_(new Contained(std::forward<Head>(head),
                            std::forward<Tail>(tail)...)) {}
  Contained *operator->() { return impl_.get(); }
  std::shared_ptr<Contained> ptr() const { return impl_; }

private:
  std::shared_ptr<Contained> impl_;
};

struct LinearImpl : Module {
  LinearImpl(int, int) {}
};
struct Linear : ModuleHolder<LinearImpl> {
  using ModuleHolder<LinearImpl>::ModuleHolder;
};
} // namespace nn
} // namespace torch

#define TORCH_MODULE(Name)                                                     \
  class Name : public torch::nn::ModuleHolder<Name##Impl> {                    \
  public:                                                                      \
    using torch::nn::ModuleHolder<Name##Impl>::ModuleHolder;                   \
  }
