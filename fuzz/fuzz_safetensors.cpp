// Fuzz target: a single safetensors file, header parsing and layout
// validation, then every tensor read zero-copy and converted.
#include "fuzz_util.h"

#include <metaguard/safetensors.h>

#include <torch/torch.h>

using namespace metaguard_fuzz;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const auto file = scratch() / "fuzz.safetensors";
  write_file(file, as_text(data, size));
  expect_typed_errors([&] {
    const metaguard::SafetensorsFile st(file);
    // What validation guarantees: every tensor lies inside the data section
    // and its bytes are exactly what its shape and dtype need.
    for (const auto &name : st.names()) {
      const auto &info = st.info(name);
      if (info.begin < 0 || info.end < info.begin ||
          st.data_offset() + info.end > st.file_size())
        violated("a validated tensor lies outside the file");
      expect_typed_errors([&] {
        const torch::Tensor t = st.tensor(name);
        if (static_cast<std::int64_t>(t.nbytes()) != info.nbytes())
          violated("tensor size differs from its validated byte range");
        // Touch every byte: ASan sees any read outside the mapping.
        if (t.numel() > 0)
          (void)t.to(torch::kFloat64).sum().item<double>();
      });
      expect_typed_errors([&] { (void)st.tensor(name, torch::kBFloat16); });
    }
  });
  return 0;
}
