#include <metaguard/checkpoint.h>
#include <metaguard/dtype.h>
#include <metaguard/module.h>
#include <metaguard/offload_hook.h>
#include <metaguard/pretrained_model.h>
#include <metaguard/saving.h>

#include "loading/committed_config.h"
#include "devices/empty_model.h"
#include "devices/uninitialised.h"
#include "loading/remembered_config.h"
#include "io/posix_file.h"
#include "saving/safetensors_writer.h"

#include <torch/torch.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <system_error>
#include <unistd.h>

namespace metaguard {
namespace {

struct Entry {
  std::string name;
  torch::Tensor tensor;
  std::int64_t nbytes;
};

// Non-persistent buffers and tied copies are left out (checkpoint_state).
std::vector<Entry> entries_of(const torch::nn::Module &module) {
  std::vector<Entry> entries;
  for (const auto &[name, t] : checkpoint_state(module))
    entries.push_back({name, t, t.numel() * static_cast<std::int64_t>(t.element_size())});
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
  throw FormatError(FormatError::Kind::io, "cannot save the checkpoint to '" + dir.string() + "': " + reason +
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

bool is_file(const std::filesystem::path &path) {
  std::error_code error;
  return std::filesystem::is_regular_file(std::filesystem::symlink_status(path, error));
}

// The safetensors files a load of `dir` uses now (find_checkpoint's rule:
// model.safetensors when present, else the index and the shards it names).
// An unreadable index names no shards; its files are then left alone. A
// PyTorch checkpoint is not ours to replace: the save goes beside it, and
// loads prefer safetensors.
std::set<std::string> published_files(const std::filesystem::path &dir) {
  std::set<std::string> files;
  const auto layout = find_checkpoint(dir);
  if (!layout || layout->format != CheckpointFormat::Safetensors || !is_file(layout->file))
    return files;
  files.insert(layout->file.filename().string());
  if (!layout->sharded)
    return files;
  try {
    std::ifstream in(layout->file, std::ios::binary);
    const auto index = nlohmann::json::parse(in);
    for (const auto &[tensor, file] : index.at("weight_map").items())
      if (file.is_string() && file.get<std::string>().find('/') == std::string::npos)
        files.insert(file.get<std::string>());
  } catch (const std::exception &) {
  }
  return files;
}

const std::regex &shard_pattern() {
  // model-00001-of-00002.safetensors, or with a save tag:
  // model-1a2b3c4d-00001-of-00002.safetensors
  static const std::regex pattern(R"(model-(?:[0-9a-f]{8}-)?\d{5}-of-\d{5}\.safetensors)");
  return pattern;
}

// Shard names for this save: transformers' names, unless the checkpoint in
// place uses one of them. Then the shards get a tag of this save, because
// they must not overwrite files that the published index still names before
// the new index replaces it.
std::vector<std::string> shard_names(std::size_t count, const std::set<std::string> &in_use) {
  std::vector<std::string> names;
  if (count == 1)
    return {kSafetensorsWeightsName};
  bool clash = false;
  for (std::size_t i = 0; i < count; ++i) {
    names.push_back(shard_name(i, count));
    clash = clash || in_use.count(names.back()) != 0;
  }
  if (!clash)
    return names;
  static std::atomic<unsigned> counter{0};
  for (unsigned attempt = 0;; ++attempt) {
    char tag[16];
    const auto seed = static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                      (static_cast<unsigned>(::getpid()) << 16) ^ (counter++ * 2654435761u) ^ attempt;
    std::snprintf(tag, sizeof tag, "%08x", seed);
    clash = false;
    for (std::size_t i = 0; i < count; ++i) {
      names[i] = "model-" + std::string(tag) + shard_name(i, count).substr(5);
      clash = clash || in_use.count(names[i]) != 0;
    }
    if (!clash)
      return names;
  }
}

// A temporary of an earlier save that died (its process is gone):
// .<one of our names>.tmp-<pid>-<n>.
bool is_dead_temporary(const std::string &name) {
  static const std::regex pattern(R"(\.(.+)\.tmp-(\d+)-\d+)");
  std::smatch match;
  if (!std::regex_match(name, match, pattern))
    return false;
  const std::string target = match[1];
  if (target != kSafetensorsWeightsName && target != kSafetensorsIndexName && target != "config.json" &&
      !std::regex_match(target, shard_pattern()))
    return false;
  const auto pid = static_cast<pid_t>(std::stoll(match[2]));
  return pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH;
}

// After the new checkpoint is published: the old checkpoint's files it does
// not use, shards that no index names (left by a save that died before
// publishing), and temporaries of dead saves. Best effort: whatever stays is
// never read by a load, and the next save tries again.
void remove_unused(const std::filesystem::path &dir, const std::set<std::string> &old_files,
                   const std::set<std::string> &written) {
  std::error_code error;
  for (const auto &item : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = item.path().filename().string();
    if (written.count(name) || !is_file(item.path()))
      continue;
    const bool ours = old_files.count(name) || name == kSafetensorsWeightsName ||
                      name == kSafetensorsIndexName || std::regex_match(name, shard_pattern()) ||
                      is_dead_temporary(name);
    if (ours)
      detail::remove_file(item.path());
  }
}

// Undoes the renames of a save that failed before its commit point.
void unpublish(const std::filesystem::path &dir, const std::set<std::string> &names) {
  for (const auto &name : names)
    detail::remove_file(dir / name);
}

// config.json's "dtype" says what the weights beside it are, and
// transformers' from_pretrained builds the model in it: write the dtype the
// saved tensors have, as transformers' save does (its rule for mixed dtypes:
// the first floating-point parameter's), not the one the config was loaded
// with. A legacy "torch_dtype" key is kept in agreement for older readers.
void record_saved_dtype(Config &config, const torch::nn::Module &module) {
  if (!config.is_object())
    return;
  for (const auto &parameter : module.parameters(/*recurse=*/true)) {
    if (!parameter.defined() || !parameter.is_floating_point())
      continue;
    const auto name = torch_dtype_name(parameter.scalar_type());
    if (!name)
      return;
    config["dtype"] = *name;
    if (config.contains("torch_dtype"))
      config["torch_dtype"] = *name;
    return;
  }
}

// SaveOptions.config, else the config the model was built from, with the
// dtype of the weights saved.
Config config_to_save(const torch::nn::Module &module, const std::filesystem::path &dir,
                      const SaveOptions &options) {
  if (!options.save_config)
    return nullptr;
  Config config = options.config.is_null() ? detail::remembered_config(module) : options.config;
  record_saved_dtype(config, module);
  if (!options.config.is_null())
    return config;
  // A PreTrainedModel is meant to reload by itself (transformers' always
  // writes config.json); a plain module may be saved as bare weights.
  if (config.is_null() && dynamic_cast<const PreTrainedModel *>(&module) != nullptr)
    std::cerr << "metaguard: warning: save_pretrained('" << dir.string()
              << "'): the model has no config, so no config.json is written and from_pretrained "
                 "cannot rebuild it from this folder; construct it with PreTrainedModel(config) "
                 "(or from_config / from_pretrained), call set_config, or pass SaveOptions.config "
                 "(SaveOptions.save_config = false saves bare weights without this warning)\n";
  return config;
}

// Publishes the written files so that a crash at any instant leaves a
// folder that loads either the old checkpoint or the new one (see
// docs/runtime-loading.md, "Crash consistency"). Everything is already
// written and fsynced under temporary names. Shards go first under names
// the old checkpoint does not use, then one step commits:
//   * single file: renaming model.safetensors into place (a load prefers it);
//   * sharded: renaming the index into place, then, if the old checkpoint
//     was a single file, removing model.safetensors (until then a load still
//     prefers the old file).
// config.json follows the commit, then the old files are removed.
void publish(const std::filesystem::path &dir, std::vector<detail::AtomicFile> &files,
             const std::set<std::string> &old_files, bool sharded) {
  const std::string commit_name = sharded ? kSafetensorsIndexName : kSafetensorsWeightsName;
  std::set<std::string> written, renamed;
  for (const auto &file : files)
    written.insert(file.target().filename().string());
  try {
    for (auto &file : files) {
      const std::string name = file.target().filename().string();
      if (name == commit_name || name == "config.json")
        continue;
      file.publish();
      renamed.insert(name);
    }
    detail::sync_directory(dir); // the shards are durable before anything names them
    for (auto &file : files)
      if (file.target().filename() == commit_name) {
        file.publish();
        renamed.insert(commit_name);
      }
    if (sharded && old_files.count(kSafetensorsWeightsName) &&
        !detail::remove_file(dir / kSafetensorsWeightsName))
      fail(dir, "the old " + std::string(kSafetensorsWeightsName) +
                    " could not be removed to make way for the sharded checkpoint: " +
                    detail::errno_text(errno));
  } catch (const FormatError &) {
    if (!renamed.count(commit_name) || sharded) {
      unpublish(dir, renamed); // the old checkpoint is still the one a load sees
      detail::sync_directory(dir);
    }
    throw;
  }
  detail::sync_directory(dir);
  std::string config_error;
  for (auto &file : files)
    if (file.target().filename() == "config.json") {
      try {
        file.publish();
      } catch (const FormatError &e) {
        // Its temporary tells load_config that the committed config is
        // the one that belongs to the weights (committed_config.h).
        file.keep_temporary();
        written.erase("config.json");
        config_error = e.what();
      }
    }
  remove_unused(dir, old_files, written);
  detail::sync_directory(dir);
  if (!config_error.empty())
    throw FormatError(FormatError::Kind::io, "saved the weights to '" + dir.string() +
                      "', but config.json could not be replaced (" + config_error +
                      "); metaguard loads the folder with the config saved with the weights, "
                      "other tools would read the previous config.json: save again once the "
                      "cause is fixed");
}

} // namespace

void save_pretrained(const torch::nn::Module &module, const std::filesystem::path &dir,
                     const SaveOptions &options) {
  const bool offloaded = has_offloaded_parameters(module);
  if (offloaded)
    verify_dispatch(module); // an offloaded parameter without its bytes must not be saved empty
  else
    detail::refuse_empty_save(checkpoint_state(module), dir); // a model built empty, never given weights
  detail::refuse_uninitialised_save(checkpoint_state(module), dir); // given memory by to_empty, never written
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error || !std::filesystem::is_directory(dir))
    fail(dir, "cannot create the folder: " + (error ? error.message() : "not a directory"));

  const auto entries = entries_of(module);
  const auto shards = plan_shards(entries, options.max_shard_size.bytes());
  const std::set<std::string> old_files = published_files(dir);
  const auto names = shard_names(shards.size(), old_files);
  std::vector<detail::AtomicFile> files;
  nlohmann::json weight_map = nlohmann::json::object();
  std::int64_t total_size = 0;
  const Config config = config_to_save(module, dir, options);
  const std::string config_text = config.is_null() ? "" : config.dump(2) + "\n";
  // The file that commits the save also carries the config, so that a crash
  // between the commit and config.json's rename cannot pair the new weights
  // with the old config (see committed_config.h).
  std::map<std::string, std::string> single_metadata = {{"format", "pt"}};
  if (shards.size() == 1 && !config_text.empty())
    single_metadata[detail::kCommittedConfigKey] = config_text;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    files.emplace_back(dir / names[i]);
    detail::write_safetensors(files.back(), materialise(module, shards[i], offloaded),
                              shards.size() == 1 ? single_metadata
                                                 : std::map<std::string, std::string>{{"format", "pt"}});
    files.back().finish();
    for (const Entry *entry : shards[i]) {
      weight_map[entry->name] = names[i];
      total_size += entry->nbytes;
    }
  }
  if (shards.size() > 1) {
    nlohmann::json index = {{"metadata", {{"total_size", total_size}}}, {"weight_map", weight_map}};
    if (!config_text.empty())
      index["metadata"][detail::kCommittedConfigKey] = config_text;
    write_text(files, dir / kSafetensorsIndexName, index.dump(2) + "\n");
  }
  if (!config_text.empty())
    write_text(files, dir / "config.json", config_text);
  check_targets(dir, files);
  publish(dir, files, old_files, shards.size() > 1);
}

} // namespace metaguard
