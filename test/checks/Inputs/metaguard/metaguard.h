// Mock of the metaguard runtime API for the check tests (same names and
// signatures as runtime/include/metaguard, no implementation).
#pragma once

#include <torch/torch.h>

#include <filesystem>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#define METAGUARD_LOADS_WEIGHTS [[clang::annotate("metaguard::loads_weights")]]

namespace metaguard {

void set_default_device(torch::Device device);
void set_default_device(c10::DeviceType type);
void set_default_device(std::string_view name);
void set_default_device(const std::string &name);
void set_default_device(const char *name);
void reset_default_device();
bool meta_device_active();

class DeviceScope {
public:
  explicit DeviceScope(torch::Device device);
  ~DeviceScope();
  DeviceScope(const DeviceScope &) = delete;
  DeviceScope &operator=(const DeviceScope &) = delete;

protected:
  DeviceScope(torch::Device device, bool include_buffers);
};

class MetaDeviceScope : public DeviceScope {
public:
  MetaDeviceScope() : MetaDeviceScope(true) {}
  explicit MetaDeviceScope(bool include_buffers)
      : DeviceScope(torch::kMeta, include_buffers) {}
};

[[nodiscard]] MetaDeviceScope init_empty_weights(bool include_buffers = false);

template <class F> decltype(auto) with_meta_device(F &&f) {
  MetaDeviceScope scope;
  return static_cast<F &&>(f)();
}

using Config = std::map<std::string, std::string>;
// Like the real ones (runtime/include/metaguard/device_map.h).
class Placement {
public:
  Placement(torch::Device device);
  Placement(c10::DeviceType type);
  Placement(std::string_view name);
  Placement(const char *name);
  Placement(const std::string &name);
  static Placement disk();
};
class DeviceMap {
public:
  DeviceMap() = default;
  DeviceMap(
      std::initializer_list<std::pair<const std::string, Placement>> entries);
  static DeviceMap automatic();
  static DeviceMap balanced();
  static DeviceMap sequential();
  static DeviceMap on(Placement placement);
  bool empty() const;
  void set(std::string prefix, Placement placement);
  // std::map-style writes, used by the first check's tests.
  void insert(std::pair<const std::string, Placement> entry);
  template <class... Args> void emplace(Args &&...args);
};
using MaxMemory = std::map<std::string, long long>;

struct LoadOptions {
  DeviceMap device_map;
  std::optional<torch::Dtype> dtype;
  std::filesystem::path offload_folder;
  MaxMemory max_memory;
  std::vector<std::string> no_split_modules;
  bool strict = true;
};

Config load_config(const std::filesystem::path &dir_or_file);

template <class Model> Model from_config(const Config &config) {
  return Model(config);
}

template <class Model>
METAGUARD_LOADS_WEIGHTS Model from_pretrained(const std::filesystem::path &dir,
                                              const LoadOptions &options = {});

void load_weights(torch::nn::Module &module, const std::filesystem::path &dir,
                  const LoadOptions &options = {});

// Like the real ones (runtime/include/metaguard/loading.h, module.h).
METAGUARD_LOADS_WEIGHTS void
load_checkpoint_and_dispatch(torch::nn::Module &model,
                             const std::filesystem::path &checkpoint,
                             const LoadOptions &options = {});
void to_empty(torch::nn::Module &module, torch::Device device,
              bool recurse = true);

// ---- Offload API (metaguard-offloaded-parameter-move) ----------------------

void dispatch_model(torch::nn::Module &model, const DeviceMap &map,
                    const std::filesystem::path &offload_folder = {});
class WeightsMap {
public:
  virtual ~WeightsMap() = default;
};
void attach_offload_hooks(torch::nn::Module &model, const DeviceMap &resolved,
                          const std::shared_ptr<const WeightsMap> &weights);
DeviceMap infer_auto_device_map(const torch::nn::Module &model,
                                const MaxMemory &max_memory,
                                const std::vector<std::string> &no_split_modules);
torch::Tensor load_offloaded_parameter(const torch::nn::Module &model,
                                       const std::string &name);
void remove_hook_from_module(torch::nn::Module &module, bool recurse = false);
void verify_dispatch(const torch::nn::Module &model);
bool has_offloaded_parameters(const torch::nn::Module &model);

struct SaveOptions {
  long long max_shard_size = 5000000000;
  Config config;
};
void save_pretrained(const torch::nn::Module &module,
                     const std::filesystem::path &dir,
                     const SaveOptions &options = {});

class PreTrainedModel : public torch::nn::Module {
public:
  void to(torch::Device device, torch::Dtype dtype,
          bool non_blocking = false) override;
  void to(torch::Dtype dtype, bool non_blocking = false) override;
  void to(torch::Device device, bool non_blocking = false) override;
};

class OnloadGuard {
public:
  explicit OnloadGuard(torch::nn::Module &module);
  ~OnloadGuard();
  torch::Device device() const { return torch::kCPU; }
};

} // namespace metaguard
