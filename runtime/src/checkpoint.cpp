#include <metaguard/checkpoint.h>

#include "json_strict.h"

#include <fstream>
#include <future>
#include <iterator>
#include <set>
#include <system_error>

namespace metaguard {
namespace {

[[noreturn]] void fail_index(const std::filesystem::path &index, const std::string &reason) {
  throw FormatError("checkpoint index '" + index.string() + "': " + reason);
}

nlohmann::json read_index(const std::filesystem::path &index, std::int64_t max_size) {
  std::error_code error;
  const auto size = std::filesystem::file_size(index, error);
  if (error)
    fail_index(index, "cannot read: " + error.message());
  if (size > static_cast<std::uintmax_t>(max_size))
    fail_index(index, "is " + std::to_string(size) + " bytes, above the limit of " +
                          std::to_string(max_size) + " (SafetensorsOptions::max_header_size)");
  std::ifstream in(index, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.size() >= 42 && text.compare(0, 40, "version https://git-lfs.github.com/spec/") == 0)
    fail_index(index, "this is a git-lfs pointer file, not the index: run `git lfs pull`");
  if (const auto bad = detail::find_invalid_utf8(text))
    fail_index(index, "not valid UTF-8 (byte " + std::to_string(*bad) + ")");
  try {
    return detail::parse_json_strict(text);
  } catch (const std::runtime_error &e) {
    fail_index(index, e.what());
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
    fail_index(index, "tensor '" + tensor + "' is mapped to file '" + name +
                          "', which is not a file name inside the checkpoint folder");
}

// weight_map: tensor name -> shard file name, validated.
std::map<std::string, std::string> weight_map_of(const std::filesystem::path &index,
                                                 const nlohmann::json &json) {
  if (!json.is_object())
    fail_index(index, "not a JSON object");
  const auto it = json.find("weight_map");
  if (it == json.end() || !it->is_object())
    fail_index(index, "has no \"weight_map\" object");
  std::map<std::string, std::string> map;
  for (const auto &[tensor, file] : it->items()) {
    if (!file.is_string())
      fail_index(index, "tensor '" + tensor + "' is mapped to " + file.dump() +
                            ", not to a file name");
    check_shard_name(index, tensor, file.get<std::string>());
    map.emplace(tensor, file.get<std::string>());
  }
  return map;
}

} // namespace

SafetensorsCheckpoint::SafetensorsCheckpoint(const std::filesystem::path &location,
                                             const SafetensorsOptions &options) {
  std::error_code error;
  if (std::filesystem::is_directory(location, error)) {
    folder_ = location;
    if (std::filesystem::exists(location / kSafetensorsWeightsName, error))
      open_single(location / kSafetensorsWeightsName, options);
    else if (std::filesystem::exists(location / kSafetensorsIndexName, error))
      open_sharded(location / kSafetensorsIndexName, options);
    else
      throw FormatError(
          "checkpoint folder '" + location.string() + "': has neither " + kSafetensorsWeightsName +
          " nor " + kSafetensorsIndexName +
          (std::filesystem::exists(location / "pytorch_model.bin", error)
               ? "; it has pytorch_model.bin, a pickle checkpoint metaguard does not read: "
                 "convert it to safetensors (transformers: save_pretrained with "
                 "safe_serialization=True)"
               : ""));
    return;
  }
  if (!std::filesystem::exists(location, error))
    throw FormatError("checkpoint '" + location.string() + "': no such file or folder");
  folder_ = location.parent_path();
  const std::string name = location.filename().string();
  const std::string suffix = ".index.json";
  if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    open_sharded(location, options);
  else
    open_single(location, options);
}

void SafetensorsCheckpoint::open_single(const std::filesystem::path &file,
                                        const SafetensorsOptions &options) {
  files_.emplace_back(file, options);
  add_names_of(0);
}

// Populating is kernel work: done on other threads while the next headers
// are parsed and validated, it hides their cost.
void SafetensorsCheckpoint::open_shard(const std::filesystem::path &file,
                                       const SafetensorsOptions &options,
                                       std::vector<std::future<void>> &populating) {
  SafetensorsOptions lazy = options;
  lazy.populate = false;
  files_.emplace_back(file, lazy);
  if (options.populate)
    populating.push_back(std::async(std::launch::async, [shard = files_.back()] { shard.populate(); }));
}

void SafetensorsCheckpoint::open_sharded(const std::filesystem::path &index,
                                         const SafetensorsOptions &options) {
  sharded_ = true;
  const auto weight_map = weight_map_of(index, read_index(index, options.max_header_size));
  std::map<std::string, std::size_t> file_index;
  for (const auto &[tensor, file] : weight_map) {
    if (file_index.count(file))
      continue;
    std::error_code error;
    if (!std::filesystem::is_regular_file(folder_ / file, error))
      fail_index(index, "tensor '" + tensor + "' is mapped to '" + file +
                            "', which does not exist in '" + folder_.string() + "'");
    file_index.emplace(file, 0);
  }
  std::vector<std::future<void>> populating;
  for (auto &[file, i] : file_index) {
    i = files_.size();
    open_shard(folder_ / file, options, populating);
  }
  for (auto &done : populating)
    done.wait();
  // Where every tensor actually is, before trusting the index's claims.
  std::map<std::string, std::string> found_in;
  for (const auto &[file, i] : file_index)
    for (const auto &tensor : files_[i].names()) {
      const auto [it, inserted] = found_in.emplace(tensor, file);
      if (!inserted)
        fail_index(index, "tensor '" + tensor + "' is in two shards, '" + it->second + "' and '" +
                              file + "'");
    }
  for (const auto &[tensor, file] : weight_map) {
    const auto it = found_in.find(tensor);
    if (it == found_in.end() || it->second != file)
      fail_index(index, "tensor '" + tensor + "' is mapped to '" + file +
                            "', which does not hold it" +
                            (it == found_in.end() ? "" : " ('" + it->second + "' does)"));
  }
  for (const auto &[tensor, file] : found_in)
    if (!weight_map.count(tensor))
      fail_index(index, "shard '" + file + "' holds tensor '" + tensor +
                            "', which the index does not list (stale index?)");
  for (std::size_t i = 0; i < files_.size(); ++i)
    add_names_of(i);
}

void SafetensorsCheckpoint::add_names_of(std::size_t file_index) {
  for (const auto &name : files_[file_index].names()) {
    names_.push_back(name);
    shard_of_.emplace(name, file_index);
  }
}

bool SafetensorsCheckpoint::contains(std::string_view name) const {
  return shard_of_.find(name) != shard_of_.end();
}

const SafetensorsFile &SafetensorsCheckpoint::file_of(std::string_view name) const {
  const auto it = shard_of_.find(name);
  if (it == shard_of_.end())
    throw FormatError("checkpoint '" + folder_.string() + "': tensor '" + std::string(name) +
                      "': not in the checkpoint");
  return files_[it->second];
}

} // namespace metaguard
