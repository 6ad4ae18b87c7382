// Turning a device map into one explicit placement per parameter:
// accelerate's infer_auto_device_map and the strategies built on it.
#pragma once

#include <metaguard/device_map.h>

#include <torch/nn/module.h>

#include <string>
#include <vector>

namespace metaguard {

// Fills devices in MaxMemory order (GPUs by index, then "cpu", then "disk"),
// module by module in registration order, as accelerate does: a module that
// does not fit is split into its children unless it has none or its type name
// (Module::name(), e.g. "Block" or "torch::nn::LinearImpl") is listed in
// no_split_modules; on the main devices room is kept for the largest
// unsplittable layer, since offloaded layers execute there. Entries whose
// children all share a placement are merged into the parent.
DeviceMap infer_auto_device_map(const torch::nn::Module &model, const MaxMemory &max_memory,
                                const std::vector<std::string> &no_split_modules);

// An explicit map that covers every parameter of `model`: a strategy is
// resolved with infer_auto_device_map (an empty MaxMemory means the memory
// available now on each device); an explicit map is checked for coverage.
// Throws Error listing every uncovered parameter name.
DeviceMap resolve_device_map(const torch::nn::Module &model, const DeviceMap &map,
                             const MaxMemory &max_memory = {},
                             const std::vector<std::string> &no_split_modules = {});

} // namespace metaguard
