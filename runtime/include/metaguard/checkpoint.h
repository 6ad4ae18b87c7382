// A Hugging Face safetensors checkpoint: `model.safetensors`, or shards listed
// by `model.safetensors.index.json`, opened and validated as a whole.
#pragma once

#include <metaguard/checkpoint_reader.h>
#include <metaguard/safetensors.h>

#include <filesystem>
#include <future> // kept: code written against the first release used std::future through it
#include <map>
#include <string>
#include <vector>

namespace metaguard {

class SafetensorsCheckpoint : public detail::ShardedCheckpoint<SafetensorsFile> {
public:
  // `location` is a folder holding a safetensors checkpoint (find_checkpoint
  // decides which files), a .safetensors file, or an index file. Every shard
  // is opened and validated; the index must name files inside the folder
  // that exist and hold the tensors it maps to them, and no tensor may be in
  // two shards. Throws FormatError naming the file, the tensor and the reason.
  explicit SafetensorsCheckpoint(const std::filesystem::path &location,
                                 const SafetensorsOptions &options = {});

  const char *format() const override { return "safetensors"; }
  std::map<std::string, std::string> metadata() const override;
  // Tensors of one shard share one private mapping where they lie together
  // (SafetensorsFile::private_tensors); across shards, one each.
  std::vector<torch::Tensor> private_tensors(const std::vector<std::string> &names) const override;

  // The safetensors files, shard by shard in file order.
  const std::vector<SafetensorsFile> &shard_files() const { return opened_files(); }
  // shard_files(), by the name it had in the first release; it hides
  // CheckpointReader::files(), the paths, which file_paths() gives.
  [[deprecated("use shard_files(), or file_paths() for the files' paths")]]
  const std::vector<SafetensorsFile> &files() const { return opened_files(); }

private:
  void open_sharded(const std::filesystem::path &index, const SafetensorsOptions &options);

  std::map<std::string, std::string> index_metadata_;
};

} // namespace metaguard
