#include "offload/offload_registry.h"
#include "core/freed_callback.h"
#include "io/page_cache.h"

#include <metaguard/errors.h>

#include <atomic>
#include <sstream>
#include <unordered_map>
#include <vector>

namespace metaguard::detail {
namespace {

struct Orphan {
  WeakImpl impl;
  std::string name;
};

struct HookRegistry {
  std::mutex mutex;
  std::unordered_map<const torch::nn::Module *, std::shared_ptr<OffloadHook>> hooks;
  std::unordered_map<const c10::TensorImpl *, Orphan> orphans;
  std::atomic<std::size_t> size{0};
  std::atomic<std::size_t> orphan_count{0};

  void update_size() {
    size.store(hooks.size() + orphans.size(), std::memory_order_relaxed);
    orphan_count.store(orphans.size(), std::memory_order_relaxed);
  }
};

HookRegistry &hook_registry() {
  static HookRegistry *r = new HookRegistry; // never destroyed: hooks may outlive static destruction order
  return *r;
}

bool all_expired(const OffloadHook &hook) {
  for (const auto &p : hook.params)
    if (!p.impl.expired())
      return false;
  return true;
}

// A hook whose module died: its address may now belong to another module.
bool stale(const OffloadHook &hook) {
  return hook.owner_shared ? hook.owner.expired() : (!hook.params.empty() && all_expired(hook));
}

void prune_orphans(HookRegistry &r) {
  for (auto it = r.orphans.begin(); it != r.orphans.end();)
    it = it->second.impl.expired() ? r.orphans.erase(it) : std::next(it);
}

} // namespace

void set_hook(const torch::nn::Module &module, std::shared_ptr<OffloadHook> hook) {
  auto weak = module.weak_from_this();
  hook->owner_shared = !weak.expired();
  hook->owner = weak;
  HookRegistry &r = hook_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const auto &p : hook->params)
    r.orphans.erase(p.address);
  prune_orphans(r);
  r.hooks[&module] = std::move(hook);
  r.update_size();
}

std::shared_ptr<OffloadHook> find_hook(const torch::nn::Module &module) {
  HookRegistry &r = hook_registry();
  if (r.size.load(std::memory_order_relaxed) == 0)
    return nullptr;
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.hooks.find(&module);
  if (it == r.hooks.end())
    return nullptr;
  if (stale(*it->second)) {
    r.hooks.erase(it);
    r.update_size();
    return nullptr;
  }
  return it->second;
}

void drop_hook(const torch::nn::Module &module, bool orphan) {
  HookRegistry &r = hook_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.hooks.find(&module);
  if (it == r.hooks.end())
    return;
  if (orphan && !stale(*it->second))
    for (const auto &p : it->second->params)
      if (!p.impl.expired())
        r.orphans.insert_or_assign(p.address, Orphan{p.impl, p.key});
  r.hooks.erase(it);
  r.update_size();
}

std::optional<std::string> orphan_name(const torch::Tensor &param) {
  HookRegistry &r = hook_registry();
  if (r.size.load(std::memory_order_relaxed) == 0 || !param.defined())
    return std::nullopt;
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.orphans.find(param.unsafeGetTensorImpl());
  if (it == r.orphans.end() || it->second.impl.lock().get() != param.unsafeGetTensorImpl())
    return std::nullopt;
  return it->second.name;
}

bool has_orphans() { return hook_registry().orphan_count.load(std::memory_order_relaxed) != 0; }

bool registry_empty() { return hook_registry().size.load(std::memory_order_relaxed) == 0; }

OffloadedParam make_record(const std::string &local, const std::string &key, const torch::Tensor &param) {
  return OffloadedParam{local,
                        key,
                        WeakImpl(param.getIntrusivePtr()),
                        param.unsafeGetTensorImpl(),
                        param.sizes().vec(),
                        param.scalar_type()};
}

namespace {
torch::Tensor checked_value(const OffloadedParam &record, torch::Tensor value) {
  if (value.sizes() != c10::IntArrayRef(record.sizes)) {
    std::ostringstream msg;
    msg << "the offloaded data of parameter '" << record.key << "' has shape " << value.sizes()
        << " but the parameter has shape " << c10::IntArrayRef(record.sizes)
        << "; the offload folder or checkpoint is stale: dispatch the model again (or reload it)";
    throw OffloadError(msg.str());
  }
  if (value.scalar_type() != record.dtype)
    value = value.to(record.dtype);
  return value;
}

// `value` as a tensor whose memory, once freed, takes `key`'s pages out of
// the page cache. A mapped load keeps its pages cached for as long as it is
// mapped, and a view keeps it mapped (an operator without a guard gets
// `aten::t` of a weight, and the matrix product uses the view), so the drop
// waits for the last holder.
torch::Tensor dropping_pages_when_freed(torch::Tensor value, std::shared_ptr<const WeightsMap> weights,
                                        std::string key) {
  return calling_when_freed(std::move(value), [weights = std::move(weights), key = std::move(key)] {
    drop_page_cache(*weights, key);
  });
}
} // namespace

torch::Tensor load_record(const OffloadHook &hook, const OffloadedParam &record) {
  return checked_value(record, hook.weights->load(record.key));
}

torch::Tensor load_for_use(const OffloadHook &hook, const OffloadedParam &record) {
  torch::Tensor value;
  if (hook.prefetcher) {
    hook.prefetcher->on_use(hook.block);
    value = hook.prefetcher->take(hook.block, record.slot);
  }
  if (!value.defined())
    value = hook.weights->load(record.key);
  if (hook.drop_page_cache && value.numel() > 0)
    value = dropping_pages_when_freed(std::move(value), hook.weights, record.key);
  return checked_value(record, std::move(value));
}

void swap_storage(const torch::Tensor &param, const torch::Tensor &value) {
  param.unsafeGetTensorImpl()->shallow_copy_from(value.getIntrusivePtr());
}


} // namespace metaguard::detail
