// to_empty: an empty model gets memory for its tensors in place.
#include <metaguard/errors.h>
#include <metaguard/module.h>
#include <metaguard/offload_hook.h>

#include "devices/empty_model.h"
#include "offload/offload_registry.h"
#include "core/torch_compat.h"
#include "devices/uninitialised.h"

#include <c10/core/impl/LocalDispatchKeySet.h>

#include <torch/torch.h>

#include <set>
#include <unordered_set>

namespace metaguard {
namespace {

struct Named {
  std::string name;
  torch::Tensor tensor;
};

// The parameters and buffers to_empty touches, each tensor once (a tie
// registers one under two names).
std::vector<Named> tensors_of(const torch::nn::Module &module, bool recurse) {
  std::vector<Named> tensors;
  std::unordered_set<const c10::TensorImpl *> seen;
  auto add = [&](const std::string &name, const torch::Tensor &tensor) {
    if (tensor.defined() && seen.insert(tensor.unsafeGetTensorImpl()).second)
      tensors.push_back({name, tensor});
  };
  for (const auto &item : module.named_parameters(recurse))
    add(item.key(), item.value());
  for (const auto &item : module.named_buffers(recurse))
    add(item.key(), item.value());
  return tensors;
}

// Offloaded tensors live on disk behind their hook: memory of their own
// would cut them off from it. Refused before anything changes.
void refuse_offloaded(const std::vector<Named> &tensors, const torch::nn::Module &module) {
  const auto offloaded = offloaded_parameter_names(module);
  if (offloaded.empty())
    return;
  const std::set<std::string> names(offloaded.begin(), offloaded.end());
  std::string touched;
  for (const auto &item : tensors)
    if (names.count(item.name))
      touched += (touched.empty() ? "" : ", ") + item.name;
  if (touched.empty())
    return;
  throw OffloadError("to_empty cannot give memory to offloaded parameters (" + touched +
                     "): their bytes live on disk behind their offloading hook, and memory of their own "
                     "would cut them off from it. Nothing was changed. " +
                     std::string(detail::kOffloadAdvice));
}

} // namespace

void to_empty(torch::nn::Module &module, torch::Device device, bool recurse) {
  const auto tensors = tensors_of(module, recurse);
  refuse_offloaded(tensors, module);
  torch::NoGradGuard no_grad;
  // Everything is allocated (or copied) before any tensor changes, so a
  // failed allocation leaves the module as it was.
  std::vector<std::pair<torch::Tensor, torch::Tensor>> replacements;
  const std::string given = "to_empty(model, " + device.str() + ")";
  for (const auto &item : tensors) {
    const torch::Tensor &tensor = item.tensor;
    if (tensor.is_meta()) {
      if (device.is_meta())
        continue;
      torch::Tensor value =
          torch::empty_strided(tensor.sizes(), tensor.strides(), tensor.options().device(device));
      // Poison in every build: a model used before it is initialised computes
      // NaNs (or sentinels), never whatever bytes the allocator had.
      detail::fill_poison(value);
      detail::UninitOrigin origin{item.name, {}, given};
      if (const auto empty = detail::empty_origin(tensor)) {
        if (!empty->name.empty())
          origin.name = empty->name;
        origin.built = empty->built;
      }
      replacements.emplace_back(tensor, detail::mark_uninitialised(value, std::move(origin)));
    } else if (tensor.device() != device) {
      // A tensor still holding to_empty's poison is copied as it is, not
      // refused as a read: the copy holds the poison (without the debug mark).
      c10::impl::ExcludeDispatchKeyGuard exclude(detail::kOffloadKey);
      replacements.emplace_back(tensor, tensor.to(device));
    }
  }
  for (const auto &[tensor, value] : replacements)
    detail::swap_storage(tensor, value);
}

} // namespace metaguard
