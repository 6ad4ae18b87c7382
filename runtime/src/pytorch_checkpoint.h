// Private to the library: a PyTorch checkpoint (`pytorch_model.bin`, or
// shards listed by `pytorch_model.bin.index.json`) behind the reader
// interface. transformers 5 writes no such files but still reads them, and
// many published models have nothing else.
#pragma once

#include <metaguard/checkpoint_reader.h>

#include "pytorch_file.h"

namespace metaguard::detail {

class PytorchCheckpoint : public CheckpointReader {
public:
  // `layout` says which file or index to open (checkpoint_layout).
  PytorchCheckpoint(const CheckpointLayout &layout, const SafetensorsOptions &options);

  const std::filesystem::path &folder() const override { return folder_; }
  const char *format() const override { return "pytorch"; }
  bool sharded() const override { return !index_.empty(); }
  std::vector<std::filesystem::path> files() const override;
  const std::vector<std::string> &names() const override { return shards_.names(); }
  bool contains(std::string_view name) const override { return shards_.contains(name); }
  const TensorInfo &info(std::string_view name) const override { return file_of(name).info(name); }
  const std::filesystem::path &path_of(std::string_view name) const override {
    return file_of(name).path();
  }
  std::map<std::string, std::string> metadata() const override { return metadata_; }
  torch::Tensor tensor(std::string_view name) const override { return file_of(name).tensor(name); }
  torch::Tensor private_tensor(std::string_view name) const override {
    return file_of(name).private_tensor(name);
  }
  torch::Tensor tensor(std::string_view name, torch::Dtype dtype,
                       torch::Device device = torch::kCPU) const override {
    return file_of(name).tensor(name, dtype, device);
  }

private:
  const PytorchFile &file_of(std::string_view name) const { return shards_.file_of(name, folder_); }

  std::filesystem::path folder_;
  std::filesystem::path index_;
  std::map<std::string, std::string> metadata_;
  ShardSet<PytorchFile> shards_;
};

} // namespace metaguard::detail
