#include <metaguard/dtype.h>
#include <metaguard/checkpoint_weights_map.h>
#include <metaguard/checkpoint.h>

namespace metaguard {

CheckpointWeightsMap::CheckpointWeightsMap(std::shared_ptr<const CheckpointReader> checkpoint,
                                             std::map<std::string, torch::Dtype> dtypes,
                                             std::map<std::string, std::string> keys)
    : checkpoint_(std::move(checkpoint)), dtypes_(std::move(dtypes)), keys_(std::move(keys)) {
  if (!checkpoint_)
    throw Error("CheckpointWeightsMap needs a checkpoint, got a null pointer");
}

CheckpointWeightsMap::CheckpointWeightsMap(const std::filesystem::path &location,
                                             const SafetensorsOptions &options)
    : CheckpointWeightsMap(open_checkpoint(location, options)) {}

const std::string &CheckpointWeightsMap::key_of(const std::string &name) const {
  const auto it = keys_.find(name);
  return it == keys_.end() ? name : it->second;
}

bool CheckpointWeightsMap::contains(const std::string &name) const {
  return checkpoint_->contains(key_of(name));
}

bool CheckpointWeightsMap::loaded_as_stored(const std::string &name) const {
  const auto it = dtypes_.find(name);
  return it == dtypes_.end() || torch_dtype_from_safetensors(checkpoint_->info(key_of(name)).dtype) == it->second;
}

torch::Tensor CheckpointWeightsMap::load(const std::string &name) const {
  // A private tensor, fresh at every load: the hook hands it to a forward
  // (or load_offloaded_parameter to the caller), and a write through it must
  // not reach the next load. (Converted tensors are fresh copies anyway.)
  if (loaded_as_stored(name))
    return checkpoint_->private_tensor(key_of(name));
  return checkpoint_->tensor(key_of(name), dtypes_.at(name));
}

torch::Tensor CheckpointWeightsMap::load_direct(const std::string &name) const {
  const auto *safetensors = dynamic_cast<const SafetensorsCheckpoint *>(checkpoint_.get());
  if (safetensors == nullptr)
    return {};
  const std::string &key = key_of(name);
  torch::Tensor value = safetensors->file_of(key).direct_tensor(key);
  if (!value.defined() || loaded_as_stored(name))
    return value;
  return value.to(dtypes_.at(name));
}

std::vector<torch::Tensor> CheckpointWeightsMap::load_together(const std::vector<std::string> &names) const {
  std::vector<std::string> keys;
  for (const auto &name : names) {
    if (!loaded_as_stored(name))
      return WeightsMap::load_together(names);
    keys.push_back(key_of(name));
  }
  return checkpoint_->private_tensors(keys);
}

std::vector<std::string> CheckpointWeightsMap::names() const {
  std::vector<std::string> names = checkpoint_->names();
  for (const auto &[name, key] : keys_)
    names.push_back(name);
  return names;
}

StorageLocation CheckpointWeightsMap::location(const std::string &name) const {
  const std::string &key = key_of(name);
  if (!checkpoint_->contains(key))
    return {};
  const std::string file = checkpoint_->path_of(key).string();
  if (const auto *safetensors = dynamic_cast<const SafetensorsCheckpoint *>(checkpoint_.get())) {
    const SafetensorsFile &shard = safetensors->file_of(key);
    const TensorInfo &info = shard.info(key);
    return {file, shard.data_offset() + info.begin, info.nbytes()};
  }
  return {file, 0, 0}; // a torch.save archive: storages may be shared, so the whole file
}

} // namespace metaguard
