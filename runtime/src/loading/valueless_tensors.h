// Private: the tensors a load gives no values to, and what it does with them
// so that none is left silently on meta or holding to_empty's poison
// (docs/runtime-loading.md, "Memory is not weights"):
//
// | the tensor                                  | after the load                        |
// |---------------------------------------------|---------------------------------------|
// | a buffer whose model from_config built with | the value its constructor computes    |
// | buffers on meta (computed_buffers.h)        | (recomputed once per load)            |
// | a missing key, strict = false               | zeros, named in the load's warning    |
// | a non-persistent buffer nothing can compute | named in one error under the Policy   |
//
// Tensors the model holds real values for (constructed, initialised after
// to_empty) are not valueless and keep them.
#pragma once

#include <torch/types.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace metaguard::detail {

struct Valueless {
  std::string name;
  torch::Tensor tensor;
  bool parameter = false;
  bool computed = false; // a non-persistent buffer: no checkpoint holds it
  bool meta = false;     // on meta; else it holds only to_empty's poison
};

// Whether `tensor` has no values: on meta, or holding only the poison
// to_empty filled it with. Debug builds know which tensors to_empty gave
// memory (their mark); release builds recognise floating-point poison by its
// NaN payload, and cannot tell an integer or bool sentinel from a value.
bool has_no_values(const torch::Tensor &tensor);

// What the load does with each valueless tensor, decided before it changes
// anything.
struct ValuelessPlan {
  std::map<std::string, torch::Tensor> constructed; // name -> the constructor's value
  std::vector<Valueless> recomputed;                // given `constructed`
  std::vector<Valueless> zeroed;                    // missing keys, strict = false
  std::vector<Valueless> unrecoverable;             // computed buffers nothing can compute
};
ValuelessPlan plan_valueless(const std::vector<Valueless> &valueless);

// One message for the plan: "" when there is nothing to say about it.
// `lenient` is the load's strict = false report of missing / unexpected keys
// ("" when none), which the message carries so that the load prints one.
std::string describe_unrecoverable(const ValuelessPlan &plan, const std::string &where);
std::string describe_lenient(const ValuelessPlan &plan, const std::string &lenient);

// Gives the recomputed and zeroed tensors their values in place, on
// `device_of(name)` for those on meta, else where they are.
void apply_valueless_plan(const ValuelessPlan &plan,
                          const std::function<torch::Device(const Valueless &)> &device_of);

} // namespace metaguard::detail
