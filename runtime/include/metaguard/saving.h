// Saving a LibTorch module as a Hugging Face checkpoint: transformers'
// save_pretrained with safetensors.
#pragma once

#include <metaguard/config.h>
#include <metaguard/size.h>

#include <torch/nn/module.h>

#include <filesystem>

namespace metaguard {

struct SaveOptions {
  // Shards above this size (bytes, or "5GB"/"500MiB" strings as accelerate
  // parses them). A tensor larger than the limit gets a shard of its own.
  Size max_shard_size = "5GB";
  // Written as config.json (2-space indent, sorted keys), so that
  // from_pretrained can rebuild the model. When null, the config the model
  // was built from is written instead: a PreTrainedModel's (its constructor
  // PreTrainedModel(config), from_pretrained, from_config or set_config),
  // or, for any other module, the one from_pretrained / from_config built
  // it from. A PreTrainedModel without any config is saved with a warning.
  Config config = nullptr;
  // false: write no config.json (an existing one is left as it is).
  bool save_config = true;
};

// Writes every parameter and buffer of `module` to `dir` (created if needed):
// model.safetensors when it fits in one shard, else shards plus
// model.safetensors.index.json (metadata.total_size, sorted weight_map,
// 2-space indent), and config.json (see SaveOptions). Shards are named
// model-0000i-of-0000n.safetensors, or model-<tag>-0000i-of-0000n.safetensors
// when the checkpoint already in `dir` uses the plain names.
//
// Crash-consistent as a whole: whatever instant the process dies at, `dir`
// loads either the old checkpoint or the new one, complete. Files are written
// and fsynced under temporary names, shards renamed to names the old
// checkpoint does not use, and one step commits (renaming model.safetensors,
// or the index, into place; for a single file replaced by shards, removing
// the old model.safetensors, which a load prefers while present). A failure
// before the commit (disk full, unwritable folder, a target that cannot be
// replaced) leaves `dir` as it was and throws FormatError saying why. After
// the commit, files the new checkpoint does not use are removed.
//
// Offloaded parameters (dispatched models) are checked with verify_dispatch
// and loaded shard by shard, so memory stays bounded by one shard.
void save_pretrained(const torch::nn::Module &module, const std::filesystem::path &dir,
                     const SaveOptions &options = {});

} // namespace metaguard
