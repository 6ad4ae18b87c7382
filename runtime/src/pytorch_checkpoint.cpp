#include "pytorch_checkpoint.h"

#include "checkpoint_index.h"

namespace metaguard::detail {

PytorchCheckpoint::PytorchCheckpoint(const CheckpointLayout &layout, const SafetensorsOptions &options)
    : folder_(layout.file.parent_path()) {
  if (!layout.sharded) {
    shards_.add(PytorchFile(layout.file, options));
    return;
  }
  index_ = layout.file;
  const ShardIndex index = read_shard_index(layout.file, options.max_header_size);
  metadata_ = index.metadata;
  std::vector<PytorchFile> files;
  for (const auto &name : index.shards)
    files.emplace_back(folder_ / name, options);
  std::vector<const std::vector<std::string> *> names;
  for (const auto &file : files)
    names.push_back(&file.names());
  check_shard_contents(index, names);
  for (auto &file : files)
    shards_.add(std::move(file));
}

std::vector<std::filesystem::path> PytorchCheckpoint::files() const {
  std::vector<std::filesystem::path> paths;
  if (sharded())
    paths.push_back(index_);
  for (const auto &file : shards_.files())
    paths.push_back(file.path());
  return paths;
}

} // namespace metaguard::detail
