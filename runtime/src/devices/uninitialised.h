// Private: the memory to_empty gives an empty model. Every tensor it
// allocates is filled with poison (a NaN with metaguard's payload for
// floating types, a sentinel for integer and bool types: the table in
// uninitialised.cpp and docs/runtime-loading.md), in every build, so that a
// model used before its values are there computes NaNs, not the stale
// bytes the allocator had. With the empty-model checks on (debug_checks.h)
// a CPU tensor also carries an UninitTicket in its storage's data pointer
// and metaguard's tensor key (tensor_mark.h): the key's fallback lets
// writes through (they clear the ticket) and refuses, with
// UninitializedMemoryError, an operator that reads a tensor whose storage
// still holds nothing but poison. The poison is the mark: a tensor written
// some other way (through its data pointer) is not taken for uninitialised
// unless every element still equals the poison bit for bit.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/nn/module.h>
#include <torch/types.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace metaguard::detail {

// Fills the whole storage of `tensor` with the poison of its dtype; false
// (nothing written) for a dtype without one (quantized, float8, ...).
bool fill_poison(const torch::Tensor &tensor);

// Whether `tensor`'s dtype has a poison and every element of its storage
// equals it bit for bit. Stops at the first other element.
bool holds_only_poison(const torch::Tensor &tensor);

// What to_empty knows about a tensor it gives memory to.
struct UninitOrigin {
  std::string name;  // its name in the model (full name when from_config built it)
  std::string built; // where the model was built empty, when known
  std::string given; // the call that gave it memory: "to_empty(model, cpu)"
};

// A tensor sharing `value`'s storage that carries the ticket and the tensor
// key (see above), or `value` itself when the checks cannot mark it (off,
// not a CPU tensor, a dtype without poison, or the key taken by another
// library).
torch::Tensor mark_uninitialised(const torch::Tensor &value, UninitOrigin origin);

// Whether `tensor` carries a ticket that no write has cleared yet.
bool is_marked_uninitialised(const torch::Tensor &tensor);

// Called by the tensor key's fallback before `op` runs: writes clear the
// ticket of the tensors they write; a read of a tensor that holds only
// poison raises UninitializedMemoryError (under the policy); a read of a
// tensor whose values were written some other way clears its ticket.
void check_uninitialised_use(const c10::OperatorHandle &op, torch::jit::Stack &stack);

// save_pretrained and PreTrainedModel::to: UninitializedMemoryError (under
// the policy) naming every marked tensor of `state` that holds only poison.
void refuse_uninitialised_save(const std::vector<std::pair<std::string, torch::Tensor>> &state,
                               const std::filesystem::path &dir);
void refuse_uninitialised_move(const torch::nn::Module &module, const std::string &target);

} // namespace metaguard::detail
