// Private to the library: the index of a sharded checkpoint
// (`*.index.json`: a "weight_map" from tensor names to shard files, and a
// "metadata" object), read and checked the same way for every format.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace metaguard::detail {

struct ShardIndex {
  std::filesystem::path path;
  // tensor name -> shard file name (inside the index's folder)
  std::map<std::string, std::string> weight_map;
  // Each shard once, by name.
  std::vector<std::string> shards;
  // The string values of "metadata".
  std::map<std::string, std::string> metadata;
};

// Reads and validates `index`: a JSON object whose weight_map names files
// inside its folder that exist. Throws FormatError naming the index, the
// tensor and the reason. `max_size` caps the file's size.
ShardIndex read_shard_index(const std::filesystem::path &index, std::int64_t max_size);

// Checks that the shards hold exactly what the index maps to them:
// `names[i]` are the tensors found in `index.shards[i]`.
void check_shard_contents(const ShardIndex &index,
                          const std::vector<const std::vector<std::string> *> &names);

// Opens every shard of `index` with `open(path)` (a File has names()) and
// checks that they hold exactly what the index maps to them.
template <class File, class Open>
std::vector<File> open_shards(const ShardIndex &index, Open &&open) {
  std::vector<File> files;
  for (const auto &name : index.shards)
    files.push_back(open(index.path.parent_path() / name));
  std::vector<const std::vector<std::string> *> names;
  for (const auto &file : files)
    names.push_back(&file.names());
  check_shard_contents(index, names);
  return files;
}

} // namespace metaguard::detail
