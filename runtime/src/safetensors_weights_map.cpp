#include <metaguard/dtype.h>
#include <metaguard/safetensors_weights_map.h>

namespace metaguard {

SafetensorsWeightsMap::SafetensorsWeightsMap(std::shared_ptr<const SafetensorsCheckpoint> checkpoint,
                                             std::map<std::string, torch::Dtype> dtypes,
                                             std::map<std::string, std::string> keys)
    : checkpoint_(std::move(checkpoint)), dtypes_(std::move(dtypes)), keys_(std::move(keys)) {
  if (!checkpoint_)
    throw Error("SafetensorsWeightsMap needs a checkpoint, got a null pointer");
}

SafetensorsWeightsMap::SafetensorsWeightsMap(const std::filesystem::path &location,
                                             const SafetensorsOptions &options)
    : SafetensorsWeightsMap(std::make_shared<const SafetensorsCheckpoint>(location, options)) {}

const std::string &SafetensorsWeightsMap::key_of(const std::string &name) const {
  const auto it = keys_.find(name);
  return it == keys_.end() ? name : it->second;
}

bool SafetensorsWeightsMap::contains(const std::string &name) const {
  return checkpoint_->contains(key_of(name));
}

torch::Tensor SafetensorsWeightsMap::load(const std::string &name) const {
  const std::string &key = key_of(name);
  const SafetensorsFile &file = checkpoint_->file_of(key);
  const auto it = dtypes_.find(name);
  // A private tensor, fresh at every load: the hook hands it to a forward
  // (or load_offloaded_parameter to the caller), and a write through it must
  // not reach the next load. (Converted tensors are fresh copies anyway.)
  if (it == dtypes_.end() || torch_dtype_from_safetensors(file.info(key).dtype) == it->second)
    return file.private_tensor(key);
  return file.tensor(key, it->second);
}

std::vector<std::string> SafetensorsWeightsMap::names() const {
  std::vector<std::string> names = checkpoint_->names();
  for (const auto &[name, key] : keys_)
    names.push_back(name);
  return names;
}

} // namespace metaguard
