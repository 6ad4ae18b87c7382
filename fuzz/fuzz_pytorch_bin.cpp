// Fuzz target: pytorch_model.bin, the zip archive torch.save writes, whose
// pickle is run by metaguard's restricted reader. The file is the attacker's:
// it must never make the reader run anything, read outside the file, or
// crash; a state dict it accepts must read back every tensor it names.
#include "fuzz_util.h"

#include <metaguard/checkpoint_reader.h>

#include <torch/torch.h>

using namespace metaguard_fuzz;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  static const auto dir = fresh_dir("pytorch_bin");
  write_file(dir / metaguard::kPytorchWeightsName, as_text(data, size));
  expect_typed_errors([&] {
    const auto checkpoint = metaguard::open_checkpoint(dir);
    if (std::string(checkpoint->format()) != "pytorch")
      violated("a pytorch_model.bin was read as another format");
    for (const auto &name : checkpoint->names()) {
      const auto &info = checkpoint->info(name);
      const torch::Tensor tensor = checkpoint->tensor(name);
      if (tensor.sizes() != c10::IntArrayRef(info.shape))
        violated("a tensor's shape differs from the one its info gives");
      (void)tensor.to(torch::kFloat64).sum();
      (void)checkpoint->private_tensor(name).sum();
      (void)checkpoint->tensor(name, torch::kFloat32).sum();
    }
  });
  return 0;
}
