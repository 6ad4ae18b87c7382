// dispatch_model and attach_offload_hooks: accelerate's big_modeling
// dispatch, with hooks kept in metaguard's side registry.
#include <metaguard/dispatch.h>
#include <metaguard/offload_folder.h>

#include "io/direct_read.h"
#include "devices/module_walk.h"
#include "offload/offload_dispatch.h"
#include "offload/offload_registry.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace metaguard {
namespace {

struct DiskParam {
  std::string local;
  std::string full;
  torch::Tensor param;
};

struct OwnedDiskParams {
  const torch::nn::Module *module;
  std::string module_name;
  std::vector<DiskParam> params;
};

std::string join_list(const std::vector<std::string> &names) {
  std::string out;
  for (const auto &n : names)
    out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Offloaded layers run on the first accelerator of the map, else the CPU, as
// in accelerate's dispatch_model.
torch::Device main_device(const DeviceMap &resolved) {
  for (const auto &[prefix, placement] : resolved.entries())
    if (!placement.is_disk() && placement.device().type() != torch::kCPU &&
        placement.device().type() != torch::kMeta)
      return placement.device();
  return torch::kCPU;
}

void require_explicit(const DeviceMap &resolved) {
  if (!resolved.is_explicit())
    throw Error("attach_offload_hooks needs a resolved (explicit) device map; pass the map through "
                "resolve_device_map first");
}

// Disk parameters grouped by the module that owns them; throws listing
// uncovered parameters.
std::vector<OwnedDiskParams> disk_parameters(const torch::nn::Module &model, const DeviceMap &resolved) {
  std::vector<OwnedDiskParams> owned;
  std::vector<std::string> uncovered;
  detail::for_each_module(model, [&](const std::string &prefix, const torch::nn::Module &module) {
    OwnedDiskParams group{&module, prefix, {}};
    for (const auto &item : module.named_parameters(false)) {
      const std::string full = detail::join_name(prefix, item.key());
      const auto placement = resolved.placement_for(full);
      if (!placement)
        uncovered.push_back(full);
      else if (placement->is_disk())
        group.params.push_back({item.key(), full, item.value()});
    }
    if (!group.params.empty())
      owned.push_back(std::move(group));
  });
  if (!uncovered.empty())
    throw Error("the device map gives no placement for " + std::to_string(uncovered.size()) +
                " parameter(s): " + join_list(uncovered) + "; resolve it with resolve_device_map first");
  return owned;
}

// Every disk parameter must be loadable from `weights` with its shape.
void check_weights(const std::vector<OwnedDiskParams> &owned, const WeightsMap &weights) {
  std::vector<std::string> problems;
  const auto *folder = dynamic_cast<const OffloadFolder *>(&weights);
  for (const auto &group : owned)
    for (const auto &p : group.params) {
      if (!weights.contains(p.full)) {
        problems.push_back(p.full + ": not in the weights map");
        continue;
      }
      if (!folder)
        continue;
      try {
        if (c10::IntArrayRef(folder->shape(p.full)) != p.param.sizes()) {
          std::ostringstream msg;
          msg << p.full << ": index.json says shape " << c10::IntArrayRef(folder->shape(p.full))
              << " but the parameter has shape " << p.param.sizes() << " (stale index.json)";
          problems.push_back(msg.str());
          continue;
        }
        folder->check(p.full);
      } catch (const OffloadError &e) {
        problems.push_back(e.what());
      }
    }
  if (problems.empty())
    return;
  std::ostringstream msg;
  msg << "cannot attach offloading hooks: " << problems.size() << " offloaded parameter(s) have no usable data";
  if (folder)
    msg << " in " << folder->path().string();
  msg << ":\n";
  for (const auto &p : problems)
    msg << "  - " << p << "\n";
  msg << "No parameter was changed. Dispatch the in-memory model again with dispatch_model to rewrite the "
         "offload folder, or reload it with from_pretrained.";
  throw OffloadError(msg.str());
}

// The entry of `resolved` that places `name` (its longest covering prefix).
std::string covering_entry(const DeviceMap &resolved, const std::string &name) {
  std::string best;
  bool found = false;
  for (const auto &[prefix, placement] : resolved.entries()) {
    const bool covers = prefix.empty() || name == prefix ||
                        (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
                         name[prefix.size()] == '.');
    if (covers && (!found || prefix.size() > best.size())) {
      best = prefix;
      found = true;
    }
  }
  return best;
}

// The block a module belongs to for reading ahead: the name up to its first
// numbered component (the item of a ModuleList or Sequential: "blocks.6" for
// "blocks.6.attn.q", "h.2" for "h.2.mlp"), or the device-map entry that
// placed it when that is deeper. A map entry alone is too coarse: {"": disk}
// or a strategy's merged entries put every block under one prefix.
std::string block_name(const std::string &entry, const std::string &module_name) {
  std::size_t start = 0;
  while (start < module_name.size()) {
    std::size_t dot = module_name.find('.', start);
    if (dot == std::string::npos)
      dot = module_name.size();
    const bool numbered = dot > start && std::all_of(module_name.begin() + static_cast<std::ptrdiff_t>(start),
                                                     module_name.begin() + static_cast<std::ptrdiff_t>(dot),
                                                     [](char c) { return c >= '0' && c <= '9'; });
    if (numbered)
      return dot > entry.size() ? module_name.substr(0, dot) : entry;
    start = dot + 1;
  }
  return entry;
}

// Hooks are per module that owns parameters; the unit read ahead is a
// block (see block_name), which a forward uses as a whole. Assigns each
// hook its block and each parameter its slot there, and returns the
// prefetcher (null when off).
std::shared_ptr<detail::Prefetcher> make_prefetcher(const std::vector<OwnedDiskParams> &owned,
                                                    const std::vector<std::shared_ptr<detail::OffloadHook>> &hooks,
                                                    const std::shared_ptr<const WeightsMap> &weights,
                                                    const DeviceMap &resolved, const OffloadOptions &options) {
  if (options.prefetch_depth <= 0)
    return nullptr;
  std::vector<detail::Prefetcher::Block> blocks;
  std::map<std::string, std::size_t> block_of;
  for (std::size_t h = 0; h < owned.size(); ++h) {
    const std::string entry = covering_entry(resolved, owned[h].params.front().full);
    const auto [it, added] = block_of.emplace(block_name(entry, owned[h].module_name), blocks.size());
    if (added)
      blocks.push_back({weights, {}, {}});
    auto &block = blocks[it->second];
    hooks[h]->block = it->second;
    for (auto &record : hooks[h]->params) {
      record.slot = block.keys.size();
      block.keys.push_back(record.key);
    }
  }
  if (blocks.empty())
    return nullptr; // one block has nothing to read ahead, but its reader still reads beside the forward
  auto prefetcher = std::make_shared<detail::Prefetcher>(std::move(blocks), options);
  for (const auto &hook : hooks)
    hook->prefetcher = prefetcher;
  return prefetcher;
}

// The weights map of OffloadReadMode::direct: every load reads with
// O_DIRECT where the wrapped map can (load_direct), else as usual. Small
// neighbours are read one by one (each read is its own aligned range).
class DirectWeightsMap : public WeightsMap {
public:
  explicit DirectWeightsMap(std::shared_ptr<const WeightsMap> inner) : inner_(std::move(inner)) {}
  bool contains(const std::string &name) const override { return inner_->contains(name); }
  torch::Tensor load(const std::string &name) const override {
    torch::Tensor value = inner_->load_direct(name);
    return value.defined() ? value : inner_->load(name);
  }
  torch::Tensor load_direct(const std::string &name) const override { return inner_->load_direct(name); }
  std::vector<std::string> names() const override { return inner_->names(); }
  StorageLocation location(const std::string &name) const override { return inner_->location(name); }

private:
  std::shared_ptr<const WeightsMap> inner_;
};

// The bytes of the model's CPU parameters and buffers that stay in memory
// (each storage once): whether read already or still to be faulted in from
// a mapped checkpoint, they take their share of the memory the page cache
// could otherwise keep.
std::uint64_t kept_in_memory(const torch::nn::Module &model, const std::vector<OwnedDiskParams> &owned) {
  std::set<std::string> offloaded;
  for (const auto &group : owned)
    for (const auto &p : group.params)
      offloaded.insert(p.full);
  std::set<const void *> counted;
  std::uint64_t bytes = 0;
  const auto count = [&](const std::string &name, const torch::Tensor &value) {
    if (!value.defined() || !value.device().is_cpu() || offloaded.count(name) != 0 ||
        !value.has_storage() || !counted.insert(value.storage().data()).second)
      return;
    bytes += value.storage().nbytes();
  };
  for (const auto &item : model.named_parameters(true))
    count(item.key(), item.value());
  for (const auto &item : model.named_buffers(true))
    count(item.key(), item.value());
  return bytes;
}

// OffloadOptions::read_mode (or METAGUARD_OFFLOAD_READ) resolved against the
// bytes the hooks will read: `weights` itself when cached, wrapped when direct.
std::shared_ptr<const WeightsMap> with_read_mode(const torch::nn::Module &model,
                                                 const std::vector<OwnedDiskParams> &owned,
                                                 std::shared_ptr<const WeightsMap> weights,
                                                 const OffloadOptions &options) {
  std::uint64_t offloaded = 0;
  for (const auto &group : owned)
    for (const auto &p : group.params)
      offloaded += static_cast<std::uint64_t>(p.param.numel()) * p.param.element_size();
  const std::uint64_t budget = offloaded > 0 ? detail::page_cache_budget(kept_in_memory(model, owned)) : 0;
  if (detail::resolve_read_mode(options.read_mode, offloaded, budget) == OffloadReadMode::direct)
    return std::make_shared<DirectWeightsMap>(std::move(weights));
  return weights;
}

void install_hooks(const torch::nn::Module &model, std::vector<OwnedDiskParams> &owned,
                   const std::shared_ptr<const WeightsMap> &given, const DeviceMap &resolved,
                   const OffloadOptions &options) {
  const std::shared_ptr<const WeightsMap> weights = with_read_mode(model, owned, given, options);
  const torch::Device device = main_device(resolved);
  std::vector<std::shared_ptr<detail::OffloadHook>> hooks;
  for (auto &group : owned) {
    auto hook = std::make_shared<detail::OffloadHook>();
    hook->module_name = group.module_name;
    hook->weights = weights;
    hook->execution_device = device;
    hook->drop_page_cache = options.drop_page_cache;
    for (const auto &p : group.params)
      hook->params.push_back(detail::make_record(p.local, p.full, p.param));
    hooks.push_back(std::move(hook));
  }
  make_prefetcher(owned, hooks, weights, resolved, options);
  for (std::size_t h = 0; h < owned.size(); ++h) {
    auto &group = owned[h];
    auto hook = hooks[h];
    // Meta already (a reload or a re-dispatch) or not, each parameter gets a
    // meta value that points back to this hook and loads itself when used.
    for (std::size_t i = 0; i < group.params.size(); ++i)
      detail::tag_offloaded(group.params[i].param, hook, i);
    detail::set_hook(*group.module, std::move(hook));
  }
}

// resolve_device_map covers every name or throws, so a miss here is a bug in
// the map's resolution, reported rather than dereferenced.
Placement covered_placement(const DeviceMap &resolved, const std::string &name) {
  if (auto placement = resolved.placement_for(name))
    return *placement;
  throw OffloadError("'" + name + "' has no placement in the resolved device map; no parameter was changed");
}

} // namespace

void attach_offload_hooks(torch::nn::Module &model, const DeviceMap &resolved,
                          const std::shared_ptr<const WeightsMap> &weights) {
  attach_offload_hooks(model, resolved, weights, OffloadOptions{});
}

void attach_offload_hooks(torch::nn::Module &model, const DeviceMap &resolved,
                          const std::shared_ptr<const WeightsMap> &weights, const OffloadOptions &options) {
  require_explicit(resolved);
  if (!weights)
    throw Error("attach_offload_hooks needs a weights map (got a null pointer)");
  auto owned = disk_parameters(model, resolved);
  check_weights(owned, *weights);
  install_hooks(model, owned, weights, resolved, options);
}

void dispatch_model(torch::nn::Module &model, const DeviceMap &map, const std::filesystem::path &offload_folder) {
  dispatch_model(model, map, offload_folder, OffloadOptions{});
}

void dispatch_model(torch::nn::Module &model, const DeviceMap &map, const std::filesystem::path &offload_folder,
                    const OffloadOptions &options) {
  const DeviceMap resolved = resolve_device_map(model, map);
  const torch::Device exec = main_device(resolved);

  // Gather every value first: offloaded ones come back through their hooks,
  // so a dispatched model can be dispatched again with a new map. Nothing is
  // changed until everything is known to work.
  std::map<std::string, torch::Tensor> to_disk;
  std::vector<std::pair<torch::Tensor, torch::Tensor>> moves; // parameter, new value
  for (const auto &item : model.named_parameters(true)) {
    const Placement placement = covered_placement(resolved, item.key());
    const torch::Tensor value = parameter_value(model, item.key());
    if (placement.is_disk())
      to_disk.emplace(item.key(), value);
    else if (value.device() != placement.device() || value.unsafeGetTensorImpl() != item.value().unsafeGetTensorImpl())
      moves.emplace_back(item.value(), value.to(placement.device()));
  }
  for (const auto &item : model.named_buffers(true)) {
    const Placement placement = covered_placement(resolved, item.key());
    const torch::Device device = placement.is_disk() ? exec : placement.device();
    if (item.value().device() != device)
      moves.emplace_back(item.value(), item.value().to(device));
  }
  if (!to_disk.empty() && offload_folder.empty()) {
    std::vector<std::string> names;
    names.reserve(to_disk.size());
    for (const auto &[name, value] : to_disk)
      names.push_back(name);
    throw OffloadError("the device map places " + std::to_string(names.size()) +
                       " parameter(s) on \"disk\" (" + join_list(names) +
                       ") but no offload_folder was given; pass one to dispatch_model (or LoadOptions."
                       "offload_folder). No parameter was changed.");
  }
  std::shared_ptr<const WeightsMap> weights;
  if (!to_disk.empty()) {
    offload_tensors(offload_folder, to_disk);
    weights = std::make_shared<OffloadFolder>(offload_folder);
  }

  // Commit: old hooks go (their parameters are re-placed, not orphaned).
  detail::for_each_module(model, [](const std::string &, const torch::nn::Module &m) { detail::drop_hook(m, false); });
  for (const auto &[param, value] : moves)
    detail::swap_storage(param, value);
  if (weights) {
    auto owned = disk_parameters(model, resolved);
    install_hooks(model, owned, weights, resolved, options);
  }
}

} // namespace metaguard
