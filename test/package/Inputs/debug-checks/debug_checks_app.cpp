// Prints whether metaguard's debug checks are on, and what an in-place
// operator into an offloaded parameter does.
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
  return 0;
}
