#include <metaguard/safetensors_weights_map.h>

namespace metaguard {

SafetensorsWeightsMap::SafetensorsWeightsMap(std::shared_ptr<const SafetensorsCheckpoint> checkpoint,
                                             std::map<std::string, torch::Dtype> dtypes)
    : checkpoint_(std::move(checkpoint)), dtypes_(std::move(dtypes)) {
  if (!checkpoint_)
    throw Error("SafetensorsWeightsMap needs a checkpoint, got a null pointer");
}

SafetensorsWeightsMap::SafetensorsWeightsMap(const std::filesystem::path &location,
                                             const SafetensorsOptions &options)
    : SafetensorsWeightsMap(std::make_shared<const SafetensorsCheckpoint>(location, options)) {}

bool SafetensorsWeightsMap::contains(const std::string &name) const {
  return checkpoint_->contains(name);
}

torch::Tensor SafetensorsWeightsMap::load(const std::string &name) const {
  const auto it = dtypes_.find(name);
  if (it == dtypes_.end())
    return checkpoint_->tensor(name);
  return checkpoint_->tensor(name, it->second);
}

std::vector<std::string> SafetensorsWeightsMap::names() const { return checkpoint_->names(); }

} // namespace metaguard
