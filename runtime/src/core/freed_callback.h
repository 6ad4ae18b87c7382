// Private to the library: running an action once a tensor's memory is let
// go by its last holder (views included).
#pragma once

#include <torch/types.h>

#include <functional>
#include <utility>
#include <vector>

namespace metaguard::detail {

// A tensor over `value`'s memory, with its sizes, strides and options; when
// its last holder lets it go, `value` is released first (unmapped, or
// returned to its pool), then `after` runs.
inline torch::Tensor calling_when_freed(torch::Tensor value, std::function<void()> after) {
  void *data = value.data_ptr();
  const std::vector<std::int64_t> sizes = value.sizes().vec();
  const std::vector<std::int64_t> strides = value.strides().vec();
  const torch::TensorOptions options = value.options();
  return torch::from_blob(
      data, sizes, strides,
      [held = std::move(value), after = std::move(after)](void *) mutable {
        held = torch::Tensor();
        after();
      },
      options);
}

} // namespace metaguard::detail
