// A downstream program built against metaguard, once through
// find_package(metaguard) and once through add_subdirectory(metaguard).
// It uses the runtime's scopes and typed errors, and holds the bug that
// metaguard-from-pretrained-in-meta-scope exists for (the installed driver
// must report it).
#include <metaguard/metaguard.h>
#include <torch/torch.h>

#include <iostream>

struct TinyImpl : torch::nn::Module {
  explicit TinyImpl(const metaguard::Config &) {
    layer = register_module("layer", torch::nn::Linear(2, 2));
  }
  torch::nn::Linear layer{nullptr};
};
TORCH_MODULE(Tiny);

int main() {
  std::cout << "meta before scope: " << metaguard::meta_device_active() << '\n';
  auto guard = metaguard::init_empty_weights();
  std::cout << "meta in scope: " << metaguard::meta_device_active() << '\n';
  try {
    auto model = metaguard::from_pretrained<Tiny>("no-such-checkpoint");
    std::cout << "loaded under meta: not caught\n";
  } catch (const metaguard::MetaDeviceError &) {
    std::cout << "caught metaguard::MetaDeviceError\n";
  }
  return 0;
}
