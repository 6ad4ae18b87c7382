#include "pytorch_checkpoint.h"

#include "checkpoint_index.h"

namespace metaguard::detail {

PytorchCheckpoint::PytorchCheckpoint(const CheckpointLayout &layout, const SafetensorsOptions &options) {
  folder_ = layout.file.parent_path();
  if (!layout.sharded) {
    add(PytorchFile(layout.file, options));
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
    add(std::move(file));
}

} // namespace metaguard::detail
