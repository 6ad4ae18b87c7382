// Private: transparent offload. An offloaded parameter is a meta tensor that
// also carries metaguard's tensor key (tensor_mark.h); the key's fallback
// sees every operator that receives one, loads the real values through the
// parameter's hook for that call only, and runs the operator on them. The
// meta storage's context points back to the hook, so finding the bytes costs
// no registry lookup; tensors without the key never reach the fallback.
#pragma once

#include "offload/offload_registry.h"
#include "core/torch_compat.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include <memory>

namespace metaguard::detail {

// Replaces every offloaded argument of `op` on `stack` (tensor lists
// included) by its real values on its execution device, each loaded once.
// A broken rule (hook removed, parameter replaced or written) raises
// OffloadError under the policy, or leaves the meta tensor in place.
void replace_offloaded(const c10::OperatorHandle &op, torch::jit::Stack &stack);

// Turns `param` (record `index` of `hook`) into an offloaded meta tensor
// with the record's shape and dtype that loads itself when an operator
// touches it. Same TensorImpl: modules and optimizers keep their handle.
void tag_offloaded(const torch::Tensor &param, const std::shared_ptr<OffloadHook> &hook, std::size_t index);

// Whether `tensor` is an offloaded parameter that loads itself.
bool is_tagged_offloaded(const torch::Tensor &tensor);

// Makes `param` a plain meta tensor again (same TensorImpl, shape and
// dtype). LibTorch's set_data accepts a meta value only into a plain meta
// tensor, so Module::to(dtype) needs this first.
void untag_offloaded(const torch::Tensor &param);

} // namespace metaguard::detail
