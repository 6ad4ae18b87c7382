// Private helpers to visit a module tree. Module::named_modules(include_self)
// needs the root to be owned by a shared_ptr; models are often plain objects,
// so the root is visited by reference and only its descendants by name.
#pragma once

#include <torch/nn/module.h>

#include <string>

namespace metaguard::detail {

// Calls f(full_name, module) for `root` (name "") and every descendant, in
// registration order (parents before children).
template <class F> void for_each_module(const torch::nn::Module &root, F &&f) {
  f(std::string(), root);
  for (const auto &item : root.named_modules("", /*include_self=*/false))
    f(item.key(), static_cast<const torch::nn::Module &>(*item.value()));
}

inline std::string join_name(const std::string &prefix, const std::string &name) {
  return prefix.empty() ? name : prefix + "." + name;
}

// The parameter called `local` directly in `module`, or an undefined tensor.
inline torch::Tensor direct_parameter(const torch::nn::Module &module, const std::string &local) {
  const auto params = module.named_parameters(/*recurse=*/false);
  const auto *found = params.find(local);
  return found ? *found : torch::Tensor();
}

} // namespace metaguard::detail
