#include "formats/pytorch_checkpoint.h"

#include "formats/checkpoint_index.h"

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
  auto files = open_shards<PytorchFile>(
      index, [&](const std::filesystem::path &path) { return PytorchFile(path, options); });
  for (auto &file : files)
    add(std::move(file));
}

} // namespace metaguard::detail
