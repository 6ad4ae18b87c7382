// What a model's metaguard::Modules declare about its tensors
// (non-persistent buffers, ties, base model prefix, ignore lists), gathered
// with full names: read by checkpoint keys, saving and device-map planning.
#pragma once

#include <metaguard/module.h>

#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace metaguard::detail {

// The declarations of a model, with full names.
struct Declarations {
  std::set<std::string> non_persistent; // buffers
  TiedWeights tied;                     // target -> source
  std::string base_model_prefix;
  std::vector<std::regex> ignore_missing;
  std::vector<std::regex> ignore_unexpected;
};

Declarations declarations_of(const torch::nn::Module &root);

// Whether two tensors are the same memory (a tie): one tensor object, or the
// same data, shape and dtype.
bool shares_memory(const torch::Tensor &a, const torch::Tensor &b);

// Groups of parameter names that hold one tensor, each sorted, ordered by
// their first name: accelerate's find_tied_parameters (names sharing one
// tensor object), joined with the declared ties whose two names exist (a
// declared tie the constructor did not make is made by loading).
using TieGroups = std::vector<std::vector<std::string>>;
TieGroups tied_groups(const torch::nn::Module &root);

} // namespace metaguard::detail
