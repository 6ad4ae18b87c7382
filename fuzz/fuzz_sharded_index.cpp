// Fuzz target: model.safetensors.index.json of a sharded checkpoint whose
// shards are fixed and valid. The index is the attacker's: it must never make
// the reader open a file outside the folder or accept a wrong mapping.
#include "fuzz_util.h"

#include <metaguard/checkpoint.h>

#include <torch/torch.h>

using namespace metaguard_fuzz;

namespace {

const std::filesystem::path &checkpoint_dir() {
  static const std::filesystem::path dir = [] {
    // A decoy beside the folder: an index that escapes would find it.
    metaguard::save_safetensors(scratch() / "outside.safetensors",
                                {{"a", torch::ones({2})}, {"secret", torch::zeros({1})}});
    auto d = fresh_dir("sharded");
    metaguard::save_safetensors(d / "model-00001-of-00002.safetensors",
                                {{"a", torch::arange(2, torch::kFloat32)},
                                 {"b", torch::tensor({7}, torch::kInt64)}});
    metaguard::save_safetensors(d / "model-00002-of-00002.safetensors",
                                {{"c", torch::ones({2, 2}, torch::kFloat16)}});
    return d;
  }();
  return dir;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const auto &dir = checkpoint_dir();
  const auto index = dir / metaguard::kSafetensorsIndexName;
  write_file(index, as_text(data, size));
  expect_typed_errors([&] {
    const metaguard::SafetensorsCheckpoint checkpoint(index);
    for (const auto &file : checkpoint.shard_files())
      if (file.path().parent_path() != dir)
        violated("the index made the reader open a file outside the checkpoint folder");
    if (checkpoint.names().size() != 3)
      violated("an accepted index does not cover exactly the shards' tensors");
    for (const auto &name : checkpoint.names())
      (void)checkpoint.tensor(name).sum();
  });
  return 0;
}
