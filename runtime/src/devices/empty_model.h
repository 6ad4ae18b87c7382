// Private: the empty-model checks (debug_checks.h). While they are on, every
// meta tensor a model gets while the meta device is ambient carries
// metaguard's tensor key (tensor_mark.h) and an EmptyTicket saying where it
// was made; giving the tensor weights (loading, offload hooks, to_empty,
// set_data with a real value) replaces its storage and so its mark. The
// tensor key's fallback then refuses the uses that need the missing values.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/nn/module.h>

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace metaguard::detail {

// Whether `tensor` carries an empty model's mark.
bool is_marked_empty(const torch::Tensor &tensor);

// For a marked tensor: its full name in its model (empty when unknown) and
// where the model was built empty ("a model built on the meta device by
// from_config<NetImpl> under init_empty_weights()"); nullopt when unmarked.
struct EmptyOrigin {
  std::string name;
  std::string built;
};
std::optional<EmptyOrigin> empty_origin(const torch::Tensor &tensor);

// Marks `tensor` when it is a meta tensor without a mark, saying that it was
// made while the meta device was ambient (as ambient_meta_description()).
void mark_empty(const torch::Tensor &tensor);

// Marks every meta tensor among the `returns` outputs at the end of `stack`
// (an operator run under a meta scope or the meta default device).
void mark_outputs_empty(const torch::jit::Stack &stack, std::size_t returns);

// Called by the tensor key's fallback before the operator runs: raises
// MetaDeviceError (under the policy) when `op` reads an empty model's
// tensor together with real tensors or copies one to a device, outside a
// meta scope; keeps the mark through a set_data with a meta value.
void check_empty_use(const c10::OperatorHandle &op, torch::jit::Stack &stack);

// save_pretrained of a model without offloaded parameters: MetaDeviceError
// (under the policy) listing the meta tensors of `state`, which have no data.
void refuse_empty_save(const std::vector<std::pair<std::string, torch::Tensor>> &state,
                       const std::filesystem::path &dir);

// PreTrainedModel::to(device): with the checks on, MetaDeviceError (under
// the policy) listing the marked tensors of `module`, before anything moves.
void refuse_empty_move(const torch::nn::Module &module, const std::string &target);

// A tensor's full name and its model's type, from the models built while the
// meta device was ambient that are still alive (BuiltEmptyRecord, module.h).
struct BuiltEmptyName {
  std::string name;
  std::string model;
};
std::optional<BuiltEmptyName> built_empty_name(const c10::StorageImpl *storage);

// Implemented in device.cpp: whether a meta scope is the innermost scope of
// this thread (models are being built there: their uses are not checked),
// and what made the meta device ambient, for messages.
bool thread_meta_scope_live();
std::string ambient_meta_description();

} // namespace metaguard::detail
