// Prints whether metaguard's debug checks are on, what an in-place operator
// into an offloaded parameter does, and what a forward of an empty model
// with real inputs does.
#include <metaguard/metaguard.h>

#include <torch/torch.h>

#include <filesystem>
#include <iostream>
#include <unistd.h>

int main() {
  std::cout << "debug checks: " << metaguard::verify_on_materialise() << "\n";
  torch::nn::Linear layer(4, 4);
  const auto folder = std::filesystem::temp_directory_path() / ("debug_checks_" + std::to_string(::getpid()));
  metaguard::dispatch_model(*layer, {{"", "disk"}}, folder);
  torch::NoGradGuard no_grad;
  try {
    layer->weight.mul_(2);
    std::cout << "in-place write: lost in a loaded copy\n";
  } catch (const metaguard::OffloadError &) {
    std::cout << "in-place write: OffloadError\n";
  }
  std::filesystem::remove_all(folder);

  std::cout << "empty-model checks: " << metaguard::empty_model_checks() << "\n";
  torch::nn::Linear empty{nullptr};
  {
    auto scope = metaguard::init_empty_weights();
    empty = torch::nn::Linear(4, 4);
  }
  try {
    const torch::Tensor y = empty(torch::ones({1, 4}));
    std::cout << "empty forward: " << (y.is_meta() ? "meta output" : "real output") << "\n";
  } catch (const metaguard::MetaDeviceError &) {
    std::cout << "empty forward: MetaDeviceError\n";
  }
  return 0;
}
