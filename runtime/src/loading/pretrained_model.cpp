#include <metaguard/offload_hook.h>
#include <metaguard/policy.h>
#include <metaguard/pretrained_model.h>

#include "devices/empty_model.h"
#include "devices/uninitialised.h"
#include "offload/offload_dispatch.h"
#include "offload/offload_registry.h"

namespace metaguard {

// A stack-allocated model has no weak_ptr to expire: forget its hook so a
// later module at the same address does not inherit it.
PreTrainedModel::~PreTrainedModel() { detail::drop_hook(*this, /*orphan=*/false); }

void PreTrainedModel::refuse_if_offloaded(const std::string &target) const {
  if (policy() == Policy::Off)
    return;
  const auto names = offloaded_parameter_names(*this);
  if (names.empty())
    return;
  std::string list;
  for (const auto &n : names)
    list += (list.empty() ? "" : ", ") + n;
  detail::enforce(OffloadError(
      "cannot move the model to " + target + ": " + std::to_string(names.size()) +
      " parameter(s) are offloaded to disk (" + list +
      "), and moving them would separate them from their hooks (their data would be lost). To change where "
      "parameters live, call dispatch_model with a new device map, or reload with from_pretrained and "
      "LoadOptions.device_map; for a copy of a parameter use load_offloaded_parameter."));
}

void PreTrainedModel::to(torch::Device device, torch::Dtype dtype, bool non_blocking) {
  refuse_if_offloaded(device.str() + " / " + c10::toString(dtype));
  if (!device.is_meta()) {
    detail::refuse_empty_move(*this, device.str());
    detail::refuse_uninitialised_move(*this, device.str());
  }
  Module::to(device, dtype, non_blocking);
}

void PreTrainedModel::to(torch::Dtype dtype, bool non_blocking) {
  // A dtype change moves nothing, so accelerate allows it on a dispatched
  // model and so do we: offloaded parameters stay meta with the new dtype,
  // and their hooks convert the stored values each time they are loaded.
  detail::untag_offloaded_parameters(*this); // converted as meta tensors, without loading
  Module::to(dtype, non_blocking);
  detail::adopt_offloaded_dtypes(*this);
}

void PreTrainedModel::to(torch::Device device, bool non_blocking) {
  refuse_if_offloaded(device.str());
  if (!device.is_meta()) {
    detail::refuse_empty_move(*this, device.str());
    detail::refuse_uninitialised_move(*this, device.str());
  }
  Module::to(device, non_blocking);
}

} // namespace metaguard
