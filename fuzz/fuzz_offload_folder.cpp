// Fuzz target: accelerate's offload folder. The input is index.json, then a
// line "@@", then the bytes of w.dat; b.dat gets the first half of them.
// Every entry the index accepts is loaded.
#include "fuzz_util.h"

#include <metaguard/offload_folder.h>

#include <torch/torch.h>

using namespace metaguard_fuzz;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string_view input = as_text(data, size);
  const std::size_t split = input.find("\n@@\n");
  const std::string_view index = input.substr(0, split);
  const std::string_view dat = split == std::string_view::npos ? std::string_view{} : input.substr(split + 4);
  const auto dir = fresh_dir("offload");
  write_file(dir / "index.json", index);
  write_file(dir / "w.dat", dat);
  write_file(dir / "b.dat", dat.substr(0, dat.size() / 2));
  expect_typed_errors([&] {
    const metaguard::OffloadFolder folder(dir);
    for (const auto &name : folder.names())
      expect_typed_errors([&] {
        const torch::Tensor t = folder.load(name);
        if (t.sizes() != c10::IntArrayRef(folder.shape(name)) || t.scalar_type() != folder.dtype(name))
          violated("a loaded offloaded tensor differs from its index entry");
        if (t.numel() > 0)
          (void)t.to(torch::kFloat64).sum().item<double>();
      });
  });
  return 0;
}
