// Private: the side registry of offloading hooks. LibTorch modules cannot
// carry a hook themselves, so hooks are found by module address; each hook
// keeps a weak reference to its module (when the module is owned by a
// shared_ptr) so a dead module's hook is never handed to a new module that
// reuses its address, and a weak reference to the TensorImpl of each
// parameter it offloaded so replacement and moves can be told apart.
#pragma once

#include <metaguard/weights_map.h>

#include "offload/prefetcher.h"

#include <c10/core/TensorImpl.h>
#include <c10/core/UndefinedTensorImpl.h>
#include <torch/nn/module.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace metaguard::detail {

using WeakImpl = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;

struct OffloadedParam {
  std::string local_name; // in the owning module
  std::string key;        // in the weights map
  WeakImpl impl;
  const c10::TensorImpl *address;
  std::vector<std::int64_t> sizes;
  torch::Dtype dtype;
  // The storage put in by the last materialisation: if the parameter holds
  // another one when the guard ends, user code replaced it (set_data) and it
  // is left alone for the checks to report, not silently thrown away.
  const void *materialised = nullptr;
  // Its place among the parameters of its block, for the prefetcher.
  std::size_t slot = 0;
};

struct OffloadHook : std::enable_shared_from_this<OffloadHook> {
  std::string module_name; // in the model it was attached to; for messages
  std::weak_ptr<const torch::nn::Module> owner;
  bool owner_shared = false;
  std::shared_ptr<const WeightsMap> weights;
  torch::Device execution_device{torch::kCPU};
  std::vector<OffloadedParam> params;
  // Reads the blocks after this one's ahead of use (null: no prefetch), and
  // the index of this hook's block there.
  std::shared_ptr<Prefetcher> prefetcher;
  std::size_t block = 0;
  // OffloadOptions::drop_page_cache.
  bool drop_page_cache = false;
  // Guards nest and may run on several threads: count them, materialise on
  // the first and return to meta on the last.
  std::mutex mutex;
  int active = 0;
};

// What to do instead of moving, replacing or stripping offloaded parameters;
// the end of every OffloadError about them.
extern const char *const kOffloadAdvice;

// Installs `hook` on `module`, replacing any previous one; its parameters
// stop counting as orphans.
void set_hook(const torch::nn::Module &module, std::shared_ptr<OffloadHook> hook);
std::shared_ptr<OffloadHook> find_hook(const torch::nn::Module &module);
// Removes the hook of `module`. With `orphan`, its parameters are remembered
// as offloaded-without-hook so later checks can say what happened.
void drop_hook(const torch::nn::Module &module, bool orphan);
// The name an orphaned (hook removed) parameter had, if `param` is one.
std::optional<std::string> orphan_name(const torch::Tensor &param);
// True when no hook and no orphan exists anywhere (the common, free case).
bool registry_empty();
// True when some parameter somewhere had its hook removed.
bool has_orphans();

// Builds the record of `param` (called `local` in its module) for a hook.
OffloadedParam make_record(const std::string &local, const std::string &key, const torch::Tensor &param);
// The value of an offloaded parameter from its hook's weights map, checked
// against the parameter's shape and converted to its dtype.
torch::Tensor load_record(const OffloadHook &hook, const OffloadedParam &record);
// The same for a use in a forward: tells the prefetcher the block is in use
// and takes the prefetched value when there is one.
torch::Tensor load_for_use(const OffloadHook &hook, const OffloadedParam &record);
// Replaces the storage of `param` in place (same TensorImpl, so the module,
// its member variable and any optimizer keep seeing the same parameter).
void swap_storage(const torch::Tensor &param, const torch::Tensor &value);
// After Module::to(dtype) converted the (meta) offloaded parameters of
// `model`, makes their hooks load them with that dtype from now on.
// Module::to(dtype) needs the offloaded parameters as plain meta tensors
// first (see untag_offloaded); adopt_offloaded_dtypes marks them again.
void untag_offloaded_parameters(const torch::nn::Module &model);
void adopt_offloaded_dtypes(const torch::nn::Module &model);

} // namespace metaguard::detail
