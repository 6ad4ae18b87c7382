#include <metaguard/dtype.h>
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
  const SafetensorsFile &file = checkpoint_->file_of(name);
  const auto it = dtypes_.find(name);
  // A private tensor, fresh at every load: the hook hands it to a forward
  // (or load_offloaded_parameter to the caller), and a write through it must
  // not reach the next load. (Converted tensors are fresh copies anyway.)
  if (it == dtypes_.end() || torch_dtype_from_safetensors(file.info(name).dtype) == it->second)
    return file.private_tensor(name);
  return file.tensor(name, it->second);
}

std::vector<std::string> SafetensorsWeightsMap::names() const { return checkpoint_->names(); }

} // namespace metaguard
