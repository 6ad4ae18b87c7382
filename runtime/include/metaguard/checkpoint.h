// A Hugging Face safetensors checkpoint: `model.safetensors`, or shards listed
// by `model.safetensors.index.json`, opened and validated as a whole.
#pragma once

#include <metaguard/checkpoint_reader.h>
#include <metaguard/safetensors.h>

#include <filesystem>
#include <future>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace metaguard {

class SafetensorsCheckpoint : public CheckpointReader {
public:
  // `location` is a folder holding a safetensors checkpoint (find_checkpoint
  // decides which files), a .safetensors file, or an index file. Every shard
  // is opened and validated; the index must name files inside the folder
  // that exist and hold the tensors it maps to them, and no tensor may be in
  // two shards. Throws FormatError naming the file, the tensor and the reason.
  explicit SafetensorsCheckpoint(const std::filesystem::path &location,
                                 const SafetensorsOptions &options = {});

  const std::filesystem::path &folder() const override { return folder_; }
  const char *format() const override { return "safetensors"; }
  bool sharded() const override { return sharded_; }
  std::vector<std::filesystem::path> files() const override;
  const std::vector<std::string> &names() const override { return shards_.names(); }
  bool contains(std::string_view name) const override { return shards_.contains(name); }
  const TensorInfo &info(std::string_view name) const override { return file_of(name).info(name); }
  const std::filesystem::path &path_of(std::string_view name) const override {
    return file_of(name).path();
  }
  std::map<std::string, std::string> metadata() const override;
  torch::Tensor tensor(std::string_view name) const override { return file_of(name).tensor(name); }
  torch::Tensor private_tensor(std::string_view name) const override {
    return file_of(name).private_tensor(name);
  }
  torch::Tensor tensor(std::string_view name, torch::Dtype dtype,
                       torch::Device device = torch::kCPU) const override {
    return file_of(name).tensor(name, dtype, device);
  }

  // The safetensors files, shard by shard in file order.
  const std::vector<SafetensorsFile> &shard_files() const { return shards_.files(); }
  // The shard holding `name`; throws FormatError when there is none.
  const SafetensorsFile &file_of(std::string_view name) const {
    return shards_.file_of(name, folder_);
  }

private:
  void open_sharded(const std::filesystem::path &index, const SafetensorsOptions &options);

  std::filesystem::path folder_;
  bool sharded_ = false;
  std::filesystem::path index_;
  std::map<std::string, std::string> index_metadata_;
  detail::ShardSet<SafetensorsFile> shards_;
};

} // namespace metaguard
