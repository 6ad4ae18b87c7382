#include <metaguard/checkpoint.h>

#include "formats/checkpoint_index.h"

#include <future>

namespace metaguard {

SafetensorsCheckpoint::SafetensorsCheckpoint(const std::filesystem::path &location,
                                             const SafetensorsOptions &options) {
  const CheckpointLayout layout = checkpoint_layout(location);
  if (layout.format != CheckpointFormat::Safetensors)
    throw FormatError(FormatError::Kind::unsupported, "checkpoint '" + location.string() + "': its weights are '" +
                      layout.file.string() +
                      "', a PyTorch pickle, not safetensors: open it with open_checkpoint");
  folder_ = layout.file.parent_path();
  if (layout.sharded)
    open_sharded(layout.file, options);
  else
    add(SafetensorsFile(layout.file, options));
}

// Populating is kernel work: done on other threads while the next headers
// are parsed and validated, it hides their cost.
void SafetensorsCheckpoint::open_sharded(const std::filesystem::path &index,
                                         const SafetensorsOptions &options) {
  index_ = index;
  const detail::ShardIndex shards = detail::read_shard_index(index, options.max_header_size);
  index_metadata_ = shards.metadata;
  SafetensorsOptions lazy = options;
  lazy.populate = false;
  std::vector<std::future<void>> populating;
  auto files = detail::open_shards<SafetensorsFile>(shards, [&](const std::filesystem::path &path) {
    SafetensorsFile file(path, lazy);
    if (options.populate)
      populating.push_back(std::async(std::launch::async, [file] { file.populate(); }));
    return file;
  });
  for (auto &done : populating)
    done.wait();
  for (auto &file : files)
    add(std::move(file));
}

std::map<std::string, std::string> SafetensorsCheckpoint::metadata() const {
  if (sharded())
    return index_metadata_;
  return shard_files().front().metadata();
}

std::vector<torch::Tensor> SafetensorsCheckpoint::private_tensors(const std::vector<std::string> &names) const {
  for (const auto &name : names)
    if (&file_of(name) != &file_of(names.front()))
      return CheckpointReader::private_tensors(names);
  return names.empty() ? std::vector<torch::Tensor>{} : file_of(names.front()).private_tensors(names);
}

} // namespace metaguard
