#include <metaguard/module.h>

#include "loading/declarations.h"

namespace metaguard {

torch::Tensor &Module::register_buffer(std::string name, torch::Tensor tensor,
                                       bool persistent) {
  if (persistent)
    non_persistent_.erase(name);
  else
    non_persistent_.insert(name);
  return torch::nn::Module::register_buffer(std::move(name), std::move(tensor));
}

std::vector<std::pair<std::string, torch::Tensor>>
checkpoint_state(const torch::nn::Module &module) {
  const detail::Declarations declared = detail::declarations_of(module);
  std::vector<std::pair<std::string, torch::Tensor>> state;
  auto add = [&](const std::string &name, const torch::Tensor &tensor) {
    // Undefined tensors are placeholders (MultiheadAttention's unused
    // q_proj_weight): nothing to save.
    if (tensor.defined())
      state.emplace_back(name, tensor);
  };
  const auto params = module.named_parameters(/*recurse=*/true);
  for (const auto &item : params) {
    const auto tie = declared.tied.find(item.key());
    if (tie != declared.tied.end()) {
      const auto *source = params.find(tie->second);
      if (source && detail::shares_memory(item.value(), *source))
        continue; // the checkpoint holds it once, under the source's name
    }
    add(item.key(), item.value());
  }
  for (const auto &item : module.named_buffers(/*recurse=*/true))
    if (!declared.non_persistent.count(item.key()))
      add(item.key(), item.value());
  return state;
}

} // namespace metaguard
