#include <metaguard/auto_device_map.h>
#include <metaguard/dispatch.h>
#include <metaguard/dtype.h>
#include <metaguard/loading.h>
#include <metaguard/policy.h>
#include <metaguard/checkpoint_weights_map.h>

#include "loading/checkpoint_keys.h"
#include "loading/tied_placements.h"
#include "loading/valueless_tensors.h"

#include <torch/torch.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

namespace metaguard {
namespace {

// A tensor slot of a module: a parameter or a buffer, by full name.
struct Slot {
  std::string name;
  torch::Tensor tensor;
  bool parameter;
};

std::vector<Slot> slots_of(const torch::nn::Module &module) {
  std::vector<Slot> slots;
  // Undefined tensors are placeholders (e.g. MultiheadAttention's unused
  // q_proj_weight): nothing to load.
  for (const auto &item : module.named_parameters(/*recurse=*/true))
    if (item.value().defined())
      slots.push_back({item.key(), item.value(), true});
  for (const auto &item : module.named_buffers(/*recurse=*/true))
    if (item.value().defined())
      slots.push_back({item.key(), item.value(), false});
  return slots;
}

// Gives `slot` the storage, shape, dtype and device of `value` without
// replacing the tensor object: the module, optimizers and anything else
// holding this Parameter see the new data.
void replace_in_place(const torch::Tensor &slot, const torch::Tensor &value) {
  slot.unsafeGetTensorImpl()->shallow_copy_from(value.getIntrusivePtr());
}

std::string shape_text(c10::IntArrayRef shape) {
  std::ostringstream out;
  out << shape;
  return out.str();
}

std::string join(const std::vector<std::string> &names) {
  std::string text;
  for (const auto &name : names)
    text += (text.empty() ? "" : ", ") + name;
  return text;
}

void warn(const std::string &message) { std::cerr << "metaguard: warning: " << message << '\n'; }

std::string meta_cause() {
  const auto fallback = default_device();
  if (fallback && fallback->is_meta())
    return "the process default device is meta (set_default_device(\"meta\"); "
           "reset_default_device() undoes it)";
  return "a MetaDeviceScope, init_empty_weights or with_meta_device scope is live on this "
         "thread";
}

torch::Dtype target_dtype(const torch::Tensor &slot, const LoadOptions &options) {
  if (options.dtype && slot.is_floating_point() && c10::isFloatingType(*options.dtype))
    return *options.dtype;
  return slot.scalar_type();
}

// Missing/unexpected keys, shape mismatches and unloadable dtypes, all found
// before any slot changes: a failed load leaves the module as it was. Under
// strict = false returns the report of missing / unexpected keys, which the
// load prints once it knows what became of the missing tensors ("" when
// there is nothing to report).
std::string check_keys(const std::vector<Slot> &slots, const CheckpointReader &checkpoint,
                const detail::CheckpointKeys &keys, const LoadOptions &options) {
  const std::string where = "checkpoint '" + checkpoint.folder().string() + "'";
  std::vector<std::string> mismatched;
  for (const auto &slot : slots) {
    const std::string *key = keys.source_of(slot.name);
    if (!key)
      continue;
    const std::string named = *key == slot.name ? "tensor '" + slot.name + "'"
                                                : "tensor '" + *key + "' (for '" + slot.name + "')";
    const TensorInfo &info = checkpoint.info(*key);
    if (slot.tensor.sizes() != c10::IntArrayRef(info.shape))
      mismatched.push_back(named + ": shape " + shape_text(info.shape) + " in the checkpoint, " +
                           shape_text(slot.tensor.sizes()) + " in the model");
    else if (!torch_dtype_from_safetensors(info.dtype))
      throw FormatError(FormatError::Kind::mismatch, where + ": " + named + " has dtype " + info.dtype +
                        ", which LibTorch 1.13 cannot hold (file '" +
                        checkpoint.path_of(*key).string() + "')");
  }
  const std::string note = keys.prefix_note().empty() ? "" : " (" + keys.prefix_note() + ")";
  if (!mismatched.empty())
    throw FormatError(FormatError::Kind::mismatch, where + " does not fit the model" + note + ": " + join(mismatched));
  if (!keys.head_keys().empty())
    warn(where + " holds tensors of a head the model has no place for, not loaded: " +
         join(keys.head_keys()));
  const auto &missing = keys.missing();
  const auto &unexpected = keys.unexpected();
  if (missing.empty() && unexpected.empty())
    return {};
  std::string message = where + " does not match the model" + note + ":";
  if (!missing.empty())
    message += " missing keys (in the model, not in the checkpoint): " + join(missing) + ";";
  if (!unexpected.empty())
    message += " unexpected keys (in the checkpoint, not in the model): " + join(unexpected) + ";";
  if (options.strict)
    throw FormatError(FormatError::Kind::mismatch, message + " pass LoadOptions.strict = false to load the matching "
                                "tensors anyway");
  return message + " loading the matching tensors (strict = false).";
}

const Slot *find_slot(const std::vector<Slot> &slots, const std::string &name) {
  for (const auto &slot : slots)
    if (slot.name == name)
      return &slot;
  return nullptr;
}

bool same_values(const torch::Tensor &a, const torch::Tensor &b) {
  return a.sizes() == b.sizes() && torch::equal(a, b.to(a.scalar_type()));
}

// A checkpoint holding both sides of a tie: transformers ties them when the
// two copies are equal and otherwise keeps each copy and breaks the tie.
// A model whose two names are one tensor cannot hold two values: that is
// refused (strict) or loaded tied with the source's value, with a warning.
void decide_ties(const std::vector<Slot> &slots, const CheckpointReader &checkpoint,
                 detail::CheckpointKeys &keys, const LoadOptions &options) {
  const std::string where = "checkpoint '" + checkpoint.folder().string() + "'";
  for (const auto &tie : keys.ties_with_two_copies()) {
    const TensorInfo &source = checkpoint.info(tie.source_key), &target = checkpoint.info(tie.target_key);
    if (!torch_dtype_from_safetensors(source.dtype) || !torch_dtype_from_safetensors(target.dtype) ||
        same_values(checkpoint.tensor(tie.source_key), checkpoint.tensor(tie.target_key)))
      continue;
    const Slot *source_slot = find_slot(slots, tie.source), *target_slot = find_slot(slots, tie.target);
    const std::string what = where + " holds tied tensors '" + tie.source_key + "' and '" +
                             tie.target_key + "' with different values";
    if (!source_slot || !target_slot ||
        source_slot->tensor.unsafeGetTensorImpl() != target_slot->tensor.unsafeGetTensorImpl()) {
      warn(what + ": the tie is broken and each is loaded from its own copy, as transformers "
                  "does; if the model is meant to be untied, say so in its config "
                  "(tie_word_embeddings: false)");
      keys.untie(tie.target);
      continue;
    }
    const std::string message =
        what + ", and the model holds '" + tie.target + "' and '" + tie.source +
        "' as one tensor, so it cannot keep both (transformers unties them). Build the model "
        "untied (tie_word_embeddings: false in config.json, or no tied_weights_keys entry), or "
        "re-save the checkpoint with one copy";
    if (options.strict)
      throw FormatError(FormatError::Kind::mismatch, message + "; LoadOptions.strict = false loads the tie with the "
                                  "values of '" + tie.source_key + "'");
    warn(message + "; loading the tie with the values of '" + tie.source_key + "' (strict = false)");
  }
}

bool is_single_placement(const DeviceMap &map) {
  return map.is_explicit() && map.entries().size() == 1 && map.entries().count("") == 1;
}

// An explicit map with one placement for every slot: the user's map when
// it has no disk entry and needs no strategy, else the offload resolver's.
DeviceMap resolve_placements(const torch::nn::Module &module, const std::vector<Slot> &slots,
                             const DeviceMap &map, const LoadOptions &options) {
  if (!map.is_explicit() || map.has_disk())
    return resolve_device_map(module, map, options.max_memory, options.no_split_modules);
  std::vector<std::string> uncovered;
  for (const auto &slot : slots)
    if (!map.placement_for(slot.name))
      uncovered.push_back(slot.name);
  if (!uncovered.empty())
    throw Error("LoadOptions.device_map places no entry over " + join(uncovered) +
                "; add entries for them (or \"\" for everything else)");
  detail::check_tied_placements(detail::tied_groups(module), map);
  return map;
}

// transformers loads a map that splits a tie between a device and "disk",
// with a warning; so does this (tied_placements.h says how).
DeviceMap place_split_ties(const torch::nn::Module &module, const DeviceMap &map) {
  std::vector<std::string> warnings;
  DeviceMap kept = detail::keep_split_ties_in_memory(detail::tied_groups(module), map, warnings);
  for (const auto &message : warnings)
    warn(message);
  return kept;
}

Placement placement_of(const DeviceMap &resolved, const DeviceMap &requested, const Slot &slot) {
  if (auto placement = resolved.placement_for(slot.name))
    return *placement;
  // Strategies place modules by their parameters; a module with buffers
  // only can be left out, and buffers are small: the CPU.
  if (!requested.is_explicit() && !slot.parameter)
    return Placement(torch::kCPU);
  throw Error("the device map places no entry over '" + slot.name + "'");
}

// Where offloaded layers run, as dispatch_model decides it: the first
// accelerator of the map, else the CPU.
torch::Device execution_device(const DeviceMap &resolved) {
  for (const auto &[prefix, placement] : resolved.entries())
    if (!placement.is_disk() && !placement.device().is_cpu() && !placement.device().is_meta())
      return placement.device();
  return torch::kCPU;
}

// The tensors the checkpoint gives no values to (no key for them) and that
// have none: on meta, or holding only to_empty's poison.
std::vector<detail::Valueless> valueless_slots(const std::vector<Slot> &slots,
                                               const detail::CheckpointKeys &keys,
                                               const detail::Declarations &declared) {
  std::vector<detail::Valueless> valueless;
  for (const auto &slot : slots)
    if (!keys.source_of(slot.name) && detail::has_no_values(slot.tensor))
      valueless.push_back({slot.name, slot.tensor, slot.parameter,
                           !slot.parameter && declared.non_persistent.count(slot.name) > 0,
                           slot.tensor.is_meta()});
  return valueless;
}

// Decided before anything changes: computed buffers that nothing can
// compute are a violation under the Policy (one message naming them all,
// with the strict = false report when there is one); otherwise the
// strict = false report, saying what became of the missing tensors, is the
// load's one warning.
void report_valueless(const detail::ValuelessPlan &plan, const std::string &lenient,
                      const CheckpointReader &checkpoint) {
  const std::string where = "checkpoint '" + checkpoint.folder().string() + "'";
  const std::string unrecoverable = detail::describe_unrecoverable(plan, where);
  const std::string report = detail::describe_lenient(plan, lenient);
  if (unrecoverable.empty()) {
    if (!report.empty())
      warn(report);
    return;
  }
  std::string message = unrecoverable + (report.empty() ? "" : " Also: " + report);
  if (policy() == Policy::Warn)
    message += " [policy warn: they are left as they are]";
  const bool any_meta = std::any_of(plan.unrecoverable.begin(), plan.unrecoverable.end(),
                                    [](const detail::Valueless &t) { return t.meta; });
  if (any_meta)
    detail::enforce(MetaDeviceError(message));
  else
    detail::enforce(UninitializedMemoryError(message));
  if (policy() == Policy::Off && !report.empty())
    warn(report);
}

// Ties the model declares hold after the load, as after transformers'
// tie_weights: a target read from the same key as its source (or from none,
// both missing) shares its source's tensor. A tie the load broke on purpose
// (two different copies in the checkpoint) reads two keys and is left alone.
void hold_declared_ties(const std::vector<Slot> &slots, const detail::CheckpointKeys &keys,
                        const detail::Declarations &declared) {
  for (const auto &[target, source] : declared.tied) {
    const Slot *target_slot = find_slot(slots, target), *source_slot = find_slot(slots, source);
    if (!target_slot || !source_slot)
      continue;
    const std::string *target_key = keys.source_of(target), *source_key = keys.source_of(source);
    const bool same_key = target_key && source_key ? *target_key == *source_key : !target_key && !source_key;
    const torch::Tensor &from = source_slot->tensor, &to = target_slot->tensor;
    if (!same_key || from.is_meta() || to.is_meta() || detail::shares_memory(from, to) ||
        from.sizes() != to.sizes() || from.scalar_type() != to.scalar_type() || from.device() != to.device())
      continue;
    replace_in_place(to, from);
  }
}

// Reads every tensor the checkpoint holds into its slot, in place, on its
// placement; disk parameters are left meta for the offload hooks. Returns
// the dtype each disk parameter is to have.
std::map<std::string, torch::Dtype> read_tensors(const std::vector<Slot> &slots, const CheckpointReader &checkpoint,
                                                 const detail::CheckpointKeys &keys, const DeviceMap &resolved,
                                                 const DeviceMap &map, const LoadOptions &options) {
  std::map<std::string, torch::Dtype> disk_dtypes;
  // Tensors read so far by checkpoint key: a tied target takes its source's
  // tensor itself (one copy in memory, as transformers' tie_weights).
  std::map<std::string, torch::Tensor> loaded;
  torch::NoGradGuard no_grad;
  for (const auto &slot : slots) {
    const std::string *key = keys.source_of(slot.name);
    if (!key)
      continue;
    const Placement placement = placement_of(resolved, map, slot);
    const torch::Dtype dtype = target_dtype(slot.tensor, options);
    if (placement.is_disk() && slot.parameter) {
      // Left to the offload hooks, which read it from the shard on demand.
      replace_in_place(slot.tensor,
                       torch::empty(slot.tensor.sizes(), torch::TensorOptions().dtype(dtype).device(torch::kMeta)));
      disk_dtypes.emplace(slot.name, dtype);
      continue;
    }
    // Buffers stay in memory, on the device offloaded layers run on
    // (accelerate does not offload buffers by default).
    const torch::Device device = placement.is_disk() ? execution_device(resolved) : placement.device();
    const auto earlier = loaded.find(*key);
    if (earlier != loaded.end() && earlier->second.scalar_type() == dtype &&
        earlier->second.device() == device) {
      if (!detail::shares_memory(slot.tensor, earlier->second))
        replace_in_place(slot.tensor, earlier->second);
      continue;
    }
    replace_in_place(slot.tensor, checkpoint.tensor(*key, dtype, device));
    loaded.emplace(*key, slot.tensor);
  }
  return disk_dtypes;
}

// Puts the disk parameters behind offload hooks that read the checkpoint's
// files in place.
void hook_disk_tensors(torch::nn::Module &module, const std::shared_ptr<const CheckpointReader> &checkpoint,
                       const detail::CheckpointKeys &keys, const DeviceMap &resolved,
                       std::map<std::string, torch::Dtype> disk_dtypes, const LoadOptions &options) {
  if (disk_dtypes.empty())
    return;
  // Only convert what differs from the checkpoint: the rest is zero-copy.
  for (auto it = disk_dtypes.begin(); it != disk_dtypes.end();)
    it = torch_dtype_from_safetensors(checkpoint->info(*keys.source_of(it->first)).dtype) == it->second
             ? disk_dtypes.erase(it)
             : std::next(it);
  attach_offload_hooks(module, resolved,
                       std::make_shared<CheckpointWeightsMap>(checkpoint, std::move(disk_dtypes), keys.renamed()),
                       options.offload);
}

} // namespace

namespace detail {

void release_to_meta(torch::nn::Module &module, bool include_buffers,
                     const std::function<bool(const std::string &)> &select) {
  for (const auto &slot : slots_of(module)) {
    if (slot.tensor.is_meta() || (!slot.parameter && !include_buffers) ||
        (select && !select(slot.name)))
      continue;
    replace_in_place(slot.tensor,
                     torch::empty_like(slot.tensor, slot.tensor.options().device(torch::kMeta)));
  }
}

DeviceMap load_device_map(const char *api, const std::filesystem::path &dir,
                          const LoadOptions &options) {
  if (!options.device_map.empty())
    return options.device_map; // an explicit map says where weights go
  const auto ambient = ambient_device();
  if (!ambient)
    return DeviceMap::on(torch::kCPU);
  if (!ambient->is_meta())
    return DeviceMap::on(*ambient);
  // Warn and Off go on as if no meta scope were live: onto the CPU.
  if (policy() == Policy::Off)
    return DeviceMap::on(torch::kCPU);
  std::string message =
      std::string(api) + "('" + dir.string() +
      "') was called while the ambient device is meta: " + meta_cause() +
      ". Loaded weights would have nowhere real to go and the model would be silently "
      "empty. Build the empty model with from_config<Model>(config) or Model(config) "
      "inside the meta scope and load after the scope ends, or pass "
      "LoadOptions.device_map to say where the weights go.";
  if (policy() == Policy::Warn)
    message += " [policy warn: loading onto the CPU instead]";
  enforce(MetaDeviceError(message));
  return DeviceMap::on(torch::kCPU);
}

std::shared_ptr<const CheckpointReader>
open_weights(const std::filesystem::path &dir, const DeviceMap &map, const LoadOptions &options) {
  SafetensorsOptions reader = options.safetensors;
  // Everything will be read in place on the CPU: fault the files in with one
  // sequential pass now rather than page by page later.
  reader.populate = !options.dtype && is_single_placement(map) &&
                    !map.entries().at("").is_disk() && map.entries().at("").device().is_cpu();
  return open_checkpoint(dir, reader);
}

bool has_buffers(const torch::nn::Module &module) {
  for (const auto &slot : slots_of(module))
    if (!slot.parameter)
      return true;
  return false;
}

bool checkpoint_covers(const torch::nn::Module &module, const CheckpointReader &checkpoint) {
  const CheckpointKeys keys(module, checkpoint);
  for (const auto &slot : slots_of(module))
    if (!keys.source_of(slot.name))
      return false;
  return true;
}

void prepare_skeleton(torch::nn::Module &module, const CheckpointReader &checkpoint) {
  const CheckpointKeys keys(module, checkpoint);
  release_to_meta(module, /*include_buffers=*/true,
                  [&](const std::string &name) { return keys.source_of(name) != nullptr; });
}

void load_checkpoint(torch::nn::Module &module,
                     const std::shared_ptr<const CheckpointReader> &checkpoint,
                     const DeviceMap &map, const LoadOptions &options) {
  const auto slots = slots_of(module);
  CheckpointKeys keys(module, *checkpoint);
  const Declarations declared = declarations_of(module);
  decide_ties(slots, *checkpoint, keys, options);
  const std::string lenient = check_keys(slots, *checkpoint, keys, options);
  const DeviceMap resolved =
      resolve_placements(module, slots, place_split_ties(module, map), options);
  const ValuelessPlan valueless = plan_valueless(valueless_slots(slots, keys, declared));
  report_valueless(valueless, lenient, *checkpoint);
  auto disk_dtypes = read_tensors(slots, *checkpoint, keys, resolved, map, options);
  apply_valueless_plan(valueless, [&](const Valueless &t) {
    const Placement placement = placement_of(resolved, map, *find_slot(slots, t.name));
    return placement.is_disk() ? execution_device(resolved) : placement.device();
  });
  hold_declared_ties(slots, keys, declared);
  hook_disk_tensors(module, checkpoint, keys, resolved, std::move(disk_dtypes), options);
}

} // namespace detail

namespace {
// Both entry points load into a built module the same way; `api` names the
// call in the meta-scope rule's message.
void load_into(const char *api, torch::nn::Module &module, const std::filesystem::path &dir,
               const LoadOptions &options) {
  const DeviceMap map = detail::load_device_map(api, dir, options);
  const auto checkpoint = detail::open_weights(dir, map, options);
  detail::load_checkpoint(module, checkpoint, map, options);
}
} // namespace

void load_weights(torch::nn::Module &module, const std::filesystem::path &dir,
                  const LoadOptions &options) {
  load_into("load_weights", module, dir, options);
}

void load_checkpoint_and_dispatch(torch::nn::Module &model, const std::filesystem::path &checkpoint,
                                  const LoadOptions &options) {
  load_into("load_checkpoint_and_dispatch", model, checkpoint, options);
}

} // namespace metaguard
