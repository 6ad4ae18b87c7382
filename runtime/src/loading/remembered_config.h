// Private to the library: the configs from_config and from_pretrained built
// plain torch::nn::Modules from (a PreTrainedModel keeps its own), so that
// save_pretrained writes config.json for them without being told.
#pragma once

#include <metaguard/config.h>

#include <torch/nn/module.h>

namespace metaguard::detail {

// The config `module` was built from by from_config / from_pretrained, or
// null. A module is recognised by its tensors: the same names held by the
// same TensorImpls as when it was built (loading and dispatching change data
// in place, so they keep it; a submodule or a clone() is another module).
Config remembered_config(const torch::nn::Module &module);

} // namespace metaguard::detail
