#include "formats/checkpoint_index.h"

#include "core/file_errors.h"

#include "formats/json_strict.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <system_error>

namespace metaguard::detail {
namespace {

[[noreturn]] void fail_index(FormatKind kind, const std::filesystem::path &index,
                             const std::string &reason) {
  fail_file(kind, "checkpoint index", index, reason);
}

nlohmann::json read_json(const std::filesystem::path &index, std::int64_t max_size) {
  std::error_code error;
  const auto size = std::filesystem::file_size(index, error);
  if (error)
    fail_index(FormatKind::io, index, "cannot read: " + error.message());
  if (size > static_cast<std::uintmax_t>(max_size))
    fail_index(FormatKind::malformed, index, "is " + std::to_string(size) + " bytes, above the limit of " +
                          std::to_string(max_size) + " (SafetensorsOptions::max_header_size)");
  std::ifstream in(index, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (is_lfs_pointer(text))
    fail_index(FormatKind::lfs_pointer, index, "this is a git-lfs pointer file, not the index: run `git lfs pull`");
  if (const auto bad = find_invalid_utf8(text))
    fail_index(FormatKind::malformed, index, "not valid UTF-8 (byte " + std::to_string(*bad) + ")");
  try {
    return parse_json_strict(text);
  } catch (const std::runtime_error &e) {
    fail_index(FormatKind::malformed, index, e.what());
  }
}

// A shard name must stay inside the checkpoint folder: an index is data
// downloaded from elsewhere and must not make us read arbitrary files.
void check_shard_name(const std::filesystem::path &index, const std::string &tensor,
                      const std::string &name) {
  const std::filesystem::path path(name);
  bool escapes = name.empty() || path.is_absolute() || path.has_root_name() ||
                 name.find('\0') != std::string::npos;
  for (const auto &part : path)
    escapes = escapes || part == "..";
  if (escapes)
    fail_index(FormatKind::malformed, index, "tensor '" + tensor + "' is mapped to file '" + name +
                          "', which is not a file name inside the checkpoint folder");
}

std::map<std::string, std::string> weight_map_of(const std::filesystem::path &index,
                                                 const nlohmann::json &json) {
  if (!json.is_object())
    fail_index(FormatKind::malformed, index, "not a JSON object");
  const auto it = json.find("weight_map");
  if (it == json.end() || !it->is_object())
    fail_index(FormatKind::malformed, index, "has no \"weight_map\" object");
  std::map<std::string, std::string> map;
  for (const auto &[tensor, file] : it->items()) {
    if (!file.is_string())
      fail_index(FormatKind::malformed, index, "tensor '" + tensor + "' is mapped to " + file.dump() +
                            ", not to a file name");
    check_shard_name(index, tensor, file.get<std::string>());
    map.emplace(tensor, file.get<std::string>());
  }
  return map;
}

std::map<std::string, std::string> metadata_of(const nlohmann::json &json) {
  std::map<std::string, std::string> metadata;
  const auto it = json.find("metadata");
  if (it == json.end() || !it->is_object())
    return metadata;
  for (const auto &[key, value] : it->items())
    if (value.is_string())
      metadata.emplace(key, value.get<std::string>());
  return metadata;
}

} // namespace

ShardIndex read_shard_index(const std::filesystem::path &index, std::int64_t max_size) {
  ShardIndex result;
  result.path = index;
  const nlohmann::json json = read_json(index, max_size);
  result.weight_map = weight_map_of(index, json);
  result.metadata = metadata_of(json);
  const auto folder = index.parent_path();
  for (const auto &[tensor, file] : result.weight_map) {
    if (std::find(result.shards.begin(), result.shards.end(), file) != result.shards.end())
      continue;
    std::error_code error;
    if (!std::filesystem::is_regular_file(folder / file, error))
      fail_index(FormatKind::missing, index, "tensor '" + tensor + "' is mapped to '" + file +
                            "', which does not exist in '" + folder.string() + "'");
    result.shards.push_back(file);
  }
  std::sort(result.shards.begin(), result.shards.end());
  return result;
}

void check_shard_contents(const ShardIndex &index,
                          const std::vector<const std::vector<std::string> *> &names) {
  // Where every tensor actually is, before trusting the index's claims.
  std::map<std::string, std::string> found_in;
  for (std::size_t i = 0; i < index.shards.size(); ++i)
    for (const auto &tensor : *names[i]) {
      const auto [it, inserted] = found_in.emplace(tensor, index.shards[i]);
      if (!inserted)
        fail_index(FormatKind::malformed, index.path, "tensor '" + tensor + "' is in two shards, '" + it->second +
                                   "' and '" + index.shards[i] + "'");
    }
  for (const auto &[tensor, file] : index.weight_map) {
    const auto it = found_in.find(tensor);
    if (it == found_in.end() || it->second != file)
      fail_index(FormatKind::malformed, index.path, "tensor '" + tensor + "' is mapped to '" + file +
                                 "', which does not hold it" +
                                 (it == found_in.end() ? "" : " ('" + it->second + "' does)"));
  }
  for (const auto &[tensor, file] : found_in)
    if (!index.weight_map.count(tensor))
      fail_index(FormatKind::malformed, index.path, "shard '" + file + "' holds tensor '" + tensor +
                                 "', which the index does not list (stale index?)");
}

} // namespace metaguard::detail
