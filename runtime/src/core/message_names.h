// Private to the library: how messages name a tensor's dtype and shape
// ("Float [16, 16]") and an operator ("aten::add.Tensor"), the same way in
// every message that names one.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/types.h>

#include <sstream>
#include <string>

namespace metaguard::detail {

inline std::string dtype_and_shape(const torch::Tensor &tensor) {
  std::ostringstream text;
  text << tensor.scalar_type() << " " << tensor.sizes();
  return text.str();
}

inline std::string operator_name(const c10::OperatorHandle &op) {
  const auto &name = op.schema().operator_name();
  return name.overload_name.empty() ? name.name : name.name + "." + name.overload_name;
}

} // namespace metaguard::detail
