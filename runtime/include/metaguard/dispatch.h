// Placing a model's parameters as a resolved device map says: on devices, or
// on "disk" behind offloading hooks (accelerate's dispatch_model).
#pragma once

#include <metaguard/auto_device_map.h>
#include <metaguard/device_map.h>
#include <metaguard/offload_hook.h>
#include <metaguard/offload_options.h>
#include <metaguard/weights_map.h>

#include <torch/nn/module.h>

#include <filesystem>
#include <memory>

namespace metaguard {

// For every parameter that `resolved` places on "disk": the parameter becomes
// (or stays) a meta tensor, in place, and the module that owns it gets a hook
// that loads it from `weights` (by its full parameter name) when an
// OnloadGuard runs. `resolved` must be explicit and cover every parameter
// (see resolve_device_map). Non-disk parameters are left untouched. Throws
// OffloadError listing disk parameters that `weights` lacks or whose dtype or
// shape differ, before any parameter is changed.
void attach_offload_hooks(torch::nn::Module &model, const DeviceMap &resolved,
                          const std::shared_ptr<const WeightsMap> &weights);
// The same, reading offloaded blocks as `options` say (read-ahead depth).
void attach_offload_hooks(torch::nn::Module &model, const DeviceMap &resolved,
                          const std::shared_ptr<const WeightsMap> &weights, const OffloadOptions &options);

// Dispatches an in-memory model: resolves `map`, moves every non-disk
// parameter and buffer to its device in place, writes the disk ones to
// `offload_folder` in accelerate's format, turns them into meta tensors and
// attaches hooks backed by that folder. Throws before changing anything when
// the map needs disk and `offload_folder` is empty, or the map leaves
// parameters uncovered.
void dispatch_model(torch::nn::Module &model, const DeviceMap &map,
                    const std::filesystem::path &offload_folder = {});
// The same, reading offloaded blocks as `options` say (read-ahead depth).
void dispatch_model(torch::nn::Module &model, const DeviceMap &map, const std::filesystem::path &offload_folder,
                    const OffloadOptions &options);

} // namespace metaguard
