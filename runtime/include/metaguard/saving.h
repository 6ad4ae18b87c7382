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
  // Written as config.json (2-space indent, sorted keys) unless null, so that
  // from_pretrained can rebuild the model.
  Config config = nullptr;
};

// Writes every parameter and buffer of `module` to `dir` (created if needed):
// model.safetensors when it fits in one shard, else
// model-0000i-of-0000n.safetensors plus model.safetensors.index.json
// (metadata.total_size, sorted weight_map, 2-space indent). Each file carries
// {"format":"pt"} metadata. Atomic per file: everything is written under
// temporary names first, so a failure (disk full, unwritable folder, a target
// that cannot be replaced) leaves any earlier checkpoint in `dir` intact and
// throws FormatError saying why. Files of an earlier checkpoint that the new
// one does not use (old shards, a single file replaced by shards or the
// reverse) are removed after the new one is in place.
//
// Offloaded parameters (dispatched models) are checked with verify_dispatch
// and loaded shard by shard, so memory stays bounded by one shard.
void save_pretrained(const torch::nn::Module &module, const std::filesystem::path &dir,
                     const SaveOptions &options = {});

} // namespace metaguard
