#include <metaguard/checkpoint.h>
#include <metaguard/offload_hook.h>
#include <metaguard/saving.h>

#include "posix_file.h"
#include "safetensors_writer.h"

#include <torch/torch.h>

#include <cstdio>
#include <regex>
#include <set>
#include <system_error>

namespace metaguard {
namespace {

struct Entry {
  std::string name;
  torch::Tensor tensor;
  std::int64_t nbytes;
};

std::vector<Entry> entries_of(const torch::nn::Module &module) {
  std::vector<Entry> entries;
  auto add = [&](const std::string &name, const torch::Tensor &t) {
    if (!t.defined()) // a placeholder (e.g. MultiheadAttention's unused q_proj_weight)
      return;
    entries.push_back({name, t, t.numel() * static_cast<std::int64_t>(t.element_size())});
  };
  for (const auto &item : module.named_parameters(/*recurse=*/true))
    add(item.key(), item.value());
  for (const auto &item : module.named_buffers(/*recurse=*/true))
    add(item.key(), item.value());
  return entries;
}

// transformers' split: fill shards in module order, opening a new one when
// the next tensor would push the current one past the limit.
std::vector<std::vector<const Entry *>> plan_shards(const std::vector<Entry> &entries,
                                                    std::int64_t max_shard_size) {
  std::vector<std::vector<const Entry *>> shards(1);
  std::int64_t size = 0;
  for (const auto &entry : entries) {
    if (!shards.back().empty() && size + entry.nbytes > max_shard_size) {
      shards.emplace_back();
      size = 0;
    }
    shards.back().push_back(&entry);
    size += entry.nbytes;
  }
  return shards;
}

std::string shard_name(std::size_t index, std::size_t count) {
  char name[64];
  std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", index + 1, count);
  return name;
}

[[noreturn]] void fail(const std::filesystem::path &dir, const std::string &reason) {
  throw FormatError("cannot save the checkpoint to '" + dir.string() + "': " + reason +
                    "; nothing in the folder was changed");
}

// Real values of one shard's tensors: offloaded parameters are loaded here,
// one shard at a time.
NamedTensors materialise(const torch::nn::Module &module, const std::vector<const Entry *> &shard,
                         bool offloaded) {
  NamedTensors tensors;
  for (const Entry *entry : shard)
    tensors.emplace_back(entry->name, offloaded && entry->tensor.is_meta()
                                          ? parameter_value(module, entry->name)
                                          : entry->tensor);
  return tensors;
}

void write_text(std::vector<detail::AtomicFile> &files, const std::filesystem::path &path,
                const std::string &text) {
  files.emplace_back(path);
  files.back().write(text.data(), text.size());
  files.back().finish();
}

// Renaming onto a directory fails only after earlier renames succeeded:
// refuse before publishing anything.
void check_targets(const std::filesystem::path &dir, const std::vector<detail::AtomicFile> &files) {
  for (const auto &file : files) {
    std::error_code error;
    const auto status = std::filesystem::symlink_status(file.target(), error);
    if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
      fail(dir, "'" + file.target().filename().string() +
                    "' exists and is not a regular file, so it cannot be replaced");
  }
}

// Files of an earlier checkpoint that the new one does not use.
void remove_stale(const std::filesystem::path &dir, const std::set<std::string> &written) {
  static const std::regex shard(R"(model-\d{5}-of-\d{5}\.safetensors)");
  std::error_code error;
  for (const auto &item : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = item.path().filename().string();
    const bool ours = name == kSafetensorsWeightsName || name == kSafetensorsIndexName ||
                      std::regex_match(name, shard);
    if (ours && !written.count(name) && item.is_regular_file(error))
      std::filesystem::remove(item.path(), error);
  }
}

} // namespace

void save_pretrained(const torch::nn::Module &module, const std::filesystem::path &dir,
                     const SaveOptions &options) {
  const bool offloaded = has_offloaded_parameters(module);
  if (offloaded)
    verify_dispatch(module); // an offloaded parameter without its bytes must not be saved empty
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error || !std::filesystem::is_directory(dir))
    fail(dir, "cannot create the folder: " + (error ? error.message() : "not a directory"));

  const auto entries = entries_of(module);
  const auto shards = plan_shards(entries, options.max_shard_size.bytes());
  std::vector<detail::AtomicFile> files;
  nlohmann::json weight_map = nlohmann::json::object();
  std::int64_t total_size = 0;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const std::string name =
        shards.size() == 1 ? std::string(kSafetensorsWeightsName) : shard_name(i, shards.size());
    files.emplace_back(dir / name);
    detail::write_safetensors(files.back(), materialise(module, shards[i], offloaded),
                              {{"format", "pt"}});
    files.back().finish();
    for (const Entry *entry : shards[i]) {
      weight_map[entry->name] = name;
      total_size += entry->nbytes;
    }
  }
  if (shards.size() > 1) {
    const nlohmann::json index = {{"metadata", {{"total_size", total_size}}},
                                  {"weight_map", weight_map}};
    write_text(files, dir / kSafetensorsIndexName, index.dump(2) + "\n");
  }
  if (!options.config.is_null())
    write_text(files, dir / "config.json", options.config.dump(2) + "\n");

  check_targets(dir, files);
  std::set<std::string> written;
  for (auto &file : files) {
    file.publish(); // the index after its shards: readers never see it first
    written.insert(file.target().filename().string());
  }
  detail::sync_directory(dir);
  remove_stale(dir, written);
}

} // namespace metaguard
