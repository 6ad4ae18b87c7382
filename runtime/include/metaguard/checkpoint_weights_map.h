// A WeightsMap that reads offloaded parameters straight from the checkpoint's
// files (safetensors or PyTorch shards), on demand: nothing is copied into an
// offload folder.
#pragma once

#include <metaguard/checkpoint_reader.h>
#include <metaguard/weights_map.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace metaguard {

class CheckpointWeightsMap : public WeightsMap {
public:
  // `dtypes` converts the named tensors on load (from_pretrained uses it when
  // LoadOptions.dtype or the model's dtype differs from the checkpoint's).
  // `keys` reads a name from another checkpoint key (a model name -> key map:
  // a base model prefix added or stripped, a tied target read from its
  // source); names without an entry are keys themselves.
  explicit CheckpointWeightsMap(std::shared_ptr<const CheckpointReader> checkpoint,
                                std::map<std::string, torch::Dtype> dtypes = {},
                                std::map<std::string, std::string> keys = {});
  // Opens `location` as open_checkpoint does.
  explicit CheckpointWeightsMap(const std::filesystem::path &location,
                                const SafetensorsOptions &options = {});

  bool contains(const std::string &name) const override;
  // A CPU tensor of its own, fresh at every call (the reader's
  // private_tensor, or a converted copy): writing to it never changes a later
  // load or the file. Throws FormatError naming the file and tensor.
  torch::Tensor load(const std::string &name) const override;
  // A safetensors tensor read with O_DIRECT (converted when `dtypes` says
  // so); undefined for other formats.
  torch::Tensor load_direct(const std::string &name) const override;
  // Tensors loaded as stored (no conversion) share one private mapping of
  // their stretch of a safetensors shard (CheckpointReader::private_tensors).
  std::vector<torch::Tensor> load_together(const std::vector<std::string> &names) const override;
  std::vector<std::string> names() const override;
  // The shard holding the tensor and its byte range there (a torch.save
  // archive: the whole file, whose storages may be shared).
  StorageLocation location(const std::string &name) const override;

  const CheckpointReader &checkpoint() const { return *checkpoint_; }

private:
  const std::string &key_of(const std::string &name) const;
  bool loaded_as_stored(const std::string &name) const;

  std::shared_ptr<const CheckpointReader> checkpoint_;
  std::map<std::string, torch::Dtype> dtypes_;
  std::map<std::string, std::string> keys_;
};

} // namespace metaguard
