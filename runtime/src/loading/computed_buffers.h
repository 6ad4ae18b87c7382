// Private: the buffers a model's constructor computes (rotary frequencies,
// position ids), for models built with buffers on the meta device. Such a
// model has no value for them anywhere: a checkpoint does not hold a
// non-persistent buffer, and to_empty gives it poison. from_config knows how
// to build the model again, so it leaves a recipe here (loading.h,
// buffer_recipe); a load asks for the buffers it did not read and runs each
// model's recipe once.
#pragma once

#include <metaguard/loading.h>

#include <map>
#include <string>
#include <vector>

namespace metaguard::detail {

// The values the constructor computes for `wanted` (name in the model being
// loaded -> its tensor), by name; a tensor without a recipe (its model was
// not built by from_config, or was built with buffers real), or whose
// recomputed value no longer has its shape, is left out.
std::map<std::string, torch::Tensor>
constructed_values(const std::vector<std::pair<std::string, torch::Tensor>> &wanted);

} // namespace metaguard::detail
