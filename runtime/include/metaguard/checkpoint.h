// A Hugging Face safetensors checkpoint: `model.safetensors`, or shards listed
// by `model.safetensors.index.json`, opened and validated as a whole.
#pragma once

#include <metaguard/safetensors.h>

#include <filesystem>
#include <future>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace metaguard {

inline constexpr const char *kSafetensorsWeightsName = "model.safetensors";
inline constexpr const char *kSafetensorsIndexName = "model.safetensors.index.json";

class SafetensorsCheckpoint {
public:
  // `location` is a folder (model.safetensors is preferred over the index, as
  // transformers does), a .safetensors file, or an index file. Every shard is
  // opened and validated; the index must name files inside the folder that
  // exist and hold the tensors it maps to them, and no tensor may be in two
  // shards. Throws FormatError naming the file, the tensor and the reason.
  explicit SafetensorsCheckpoint(const std::filesystem::path &location,
                                 const SafetensorsOptions &options = {});

  // The folder holding the files.
  const std::filesystem::path &folder() const { return folder_; }
  bool sharded() const { return sharded_; }
  const std::vector<SafetensorsFile> &files() const { return files_; }
  // Every tensor name, shard by shard in file order.
  const std::vector<std::string> &names() const { return names_; }
  bool contains(std::string_view name) const;
  // The shard holding `name`; throws FormatError when there is none.
  const SafetensorsFile &file_of(std::string_view name) const;
  const TensorInfo &info(std::string_view name) const { return file_of(name).info(name); }
  torch::Tensor tensor(std::string_view name) const { return file_of(name).tensor(name); }
  torch::Tensor tensor(std::string_view name, torch::Dtype dtype,
                       torch::Device device = torch::kCPU) const {
    return file_of(name).tensor(name, dtype, device);
  }

private:
  void open_single(const std::filesystem::path &file, const SafetensorsOptions &options);
  void open_sharded(const std::filesystem::path &index, const SafetensorsOptions &options);
  void open_shard(const std::filesystem::path &file, const SafetensorsOptions &options,
                  std::vector<std::future<void>> &populating);
  void add_names_of(std::size_t file_index);

  std::filesystem::path folder_;
  bool sharded_ = false;
  std::vector<SafetensorsFile> files_;
  std::vector<std::string> names_;
  std::map<std::string, std::size_t, std::less<>> shard_of_;
};

} // namespace metaguard
