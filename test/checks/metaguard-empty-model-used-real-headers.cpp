// The check on the real runtime header and the real LibTorch headers, so the
// matchers are proven on the real types (module holders, torch::nn::Module::to
// overloads, at::Tensor and at::TensorBase methods, torch::OrderedDict, the
// optimizers, metaguard's loaders and savers), not only on the mocks.
// REQUIRES: real-headers
// RUN: %check_clang_tidy -no-mocks %torch_std %s metaguard-empty-model-used -- -- -I %runtime_include %torch_includes

#include <metaguard/metaguard.h>
#include <metaguard/saving.h>
#include <torch/torch.h>

#include <filesystem>
#include <iostream>

namespace fs = std::filesystem;

struct TinyImpl : torch::nn::Module {
  explicit TinyImpl(const metaguard::Config &) {
    fc = register_module("fc", torch::nn::Linear(8, 8));
  }
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(Tiny);

Tiny skeleton(const metaguard::Config &config) {
  auto guard = metaguard::init_empty_weights();
  return metaguard::from_config<Tiny>(config);
}

void uses(const metaguard::Config &config, const fs::path &out,
          torch::Tensor x) {
  Tiny m = skeleton(config);
  m->forward(x);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'm' before it has weights
  m(x);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'm' before it has weights
  m->to(torch::kCUDA);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: moving empty model 'm' before it has weights
  metaguard::save_pretrained(*m, out);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: calling 'metaguard::save_pretrained' on empty model 'm' before it has weights
  std::cout << m->fc->weight.item<float>();
  // CHECK-MESSAGES: :[[@LINE-1]]:16: warning: 'item' reads a parameter of empty model 'm.fc' before it has weights
  m->fc->weight.data_ptr();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: 'data_ptr' reads a parameter of empty model 'm.fc' before it has weights
  for (const auto &item : m->named_parameters())
    std::cout << item.value();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: printing a parameter of empty model 'm' before it has weights
  torch::optim::Adam opt(m->parameters(), torch::optim::AdamOptions(1e-3));
  opt.step();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: 'step' of an optimizer updates the parameters of empty model 'm' before it has weights
}

void fine(const metaguard::Config &config, const fs::path &dir,
          torch::Tensor x) {
  Tiny m = skeleton(config);
  for (const auto &item : m->named_parameters())
    std::cout << item.key() << item.value().sizes() << item.value().numel();
  std::cout << *m;
  m->to(torch::kHalf);
  auto map = metaguard::infer_auto_device_map(*m, {{"cpu", 1 << 20}}, {});
  torch::optim::Adam opt(m->parameters(), torch::optim::AdamOptions(1e-3));
  metaguard::load_weights(*m, dir);
  m->forward(x);
  opt.step();
  Tiny n = skeleton(config);
  torch::load(n, "tiny.pt");
  n->to(torch::kCUDA);
}

void meta(const metaguard::Config &config, torch::Tensor x) {
  metaguard::set_default_device("meta");
  auto m = std::make_shared<TinyImpl>(config);
  metaguard::reset_default_device();
  m->forward(x);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'm' before it has weights
}

// to_empty gives memory, not weights: the real LibTorch initialisers and
// fills over parameters() give the values.
void givenMemory(const metaguard::Config &config, const fs::path &out,
                 torch::Tensor x) {
  Tiny m = skeleton(config);
  metaguard::to_empty(*m, torch::kCPU);
  m->forward(x);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: running the forward pass of model 'm' before its values are initialised
  m->fc->reset_parameters();
  metaguard::save_pretrained(*m, out);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: calling 'metaguard::save_pretrained' on model 'm' before its values are initialised
}

void initialised(const metaguard::Config &config, const fs::path &out,
                 torch::Tensor x) {
  Tiny m = skeleton(config);
  metaguard::to_empty(*m, torch::kCPU);
  {
    torch::NoGradGuard no_grad;
    for (auto &p : m->parameters())
      torch::nn::init::normal_(p, 0.0, 0.02);
  }
  m->forward(x);
  Tiny n = skeleton(config);
  metaguard::to_empty(*n, torch::kCPU);
  for (auto &item : n->named_parameters())
    item.value().data().zero_();
  metaguard::save_pretrained(*n, out);
  Tiny k = skeleton(config);
  metaguard::to_empty(*k, torch::kCPU);
  k->apply([](torch::nn::Module &module) {
    if (auto *linear = module.as<torch::nn::Linear>())
      linear->reset_parameters();
  });
  k->forward(x);
}
