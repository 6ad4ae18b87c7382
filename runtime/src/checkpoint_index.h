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

} // namespace metaguard::detail
