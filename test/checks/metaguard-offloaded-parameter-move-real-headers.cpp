// The check on the real runtime header and the real LibTorch headers, so the
// matchers are proven on the real types (torch::nn::Module::to overloads,
// torch::OrderedDict, module holders, metaguard::PreTrainedModel, ...), not
// only on the mocks.
// REQUIRES: real-headers
// RUN: %check_clang_tidy -no-mocks %torch_std %s metaguard-offloaded-parameter-move -- -- -I %runtime_include %torch_includes

#include <metaguard/metaguard.h>
#include <torch/torch.h>

#include <filesystem>

namespace fs = std::filesystem;

struct BlockImpl : torch::nn::Module {
  BlockImpl() { fc = register_module("fc", torch::nn::Linear(8, 8)); }
  torch::Tensor forward(torch::Tensor x) {
    metaguard::OnloadGuard onload(*this);
    return fc(x.to(onload.device()));
  }
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(Block);

struct TinyImpl : metaguard::PreTrainedModel {
  explicit TinyImpl(const metaguard::Config &) {
    first = register_module("first", Block());
    second = register_module("second", Block());
  }
  torch::Tensor forward(torch::Tensor x) { return second(first(x)); }
  Block first{nullptr};
  Block second{nullptr};
};
TORCH_MODULE(Tiny);

void moves(Tiny model, const fs::path &offload) {
  metaguard::dispatch_model(*model, {{"first", "cpu"}, {"second", "disk"}},
                            offload);
  model->to(torch::kCUDA);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving dispatched model 'model' with 'to'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'model' is dispatched here by 'metaguard::dispatch_model'
  model->to(torch::kFloat16); // dtype only: fine.
  model->second->to(torch::Device("cuda:0"), torch::kFloat16);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving 'model.second' of dispatched model 'model' with 'to'
  // CHECK-NOTES: :[[@LINE-8]]:3: note: 'model' is dispatched here
}

void parameters(const fs::path &dir, torch::Tensor x) {
  metaguard::LoadOptions options;
  options.device_map = metaguard::DeviceMap::automatic();
  auto model = metaguard::from_pretrained<Tiny>(dir, options);
  model->named_parameters()["second.fc.weight"].set_data(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'set_data' on a parameter of dispatched model 'model'
  // CHECK-NOTES: :[[@LINE-3]]:16: note: 'model' is loaded by 'metaguard::from_pretrained' with an explicit device map here, which dispatches it
  for (auto &p : model->parameters())
    p.set_data(p.to(torch::kCUDA));
  // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'set_data' on a parameter of dispatched model 'model'
  // CHECK-NOTES: :[[@LINE-7]]:16: note: 'model' is loaded by
  for (auto &item : model->named_parameters())
    item.value().data().copy_(x);
  // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'copy_' on a parameter of dispatched model 'model'
  // CHECK-NOTES: :[[@LINE-11]]:16: note: 'model' is loaded by
  if (auto *w = model->named_parameters().find("first.fc.bias"))
    w->copy_(x);
  // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'copy_' on a parameter of dispatched model 'model'
  // CHECK-NOTES: :[[@LINE-15]]:16: note: 'model' is loaded by
  model->second->fc->weight = torch::zeros({8, 8});
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: assigning to a parameter of 'model.second.fc' of dispatched model 'model'
  // CHECK-NOTES: :[[@LINE-18]]:16: note: 'model' is loaded by

  // Copies are fine.
  torch::Tensor copy =
      metaguard::load_offloaded_parameter(*model, "second.fc.weight");
  copy.copy_(x);
  auto on_gpu = model->named_parameters()["first.fc.weight"].to(torch::kCUDA);
  on_gpu.mul_(2);
}

void hooks(const fs::path &dir, const fs::path &out, torch::Tensor x) {
  auto model = metaguard::from_pretrained<Tiny>(
      dir, metaguard::LoadOptions{metaguard::DeviceMap::sequential()});
  metaguard::remove_hook_from_module(*model->second, /*recurse=*/true);
  auto first = model->first(x); // first keeps its hook.
  auto y = model(x);
  // CHECK-NOTES: :[[@LINE-1]]:12: warning: 'forward' needs the offloading hooks of 'model'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'metaguard::remove_hook_from_module' removes the hooks of 'model.second' here
  // CHECK-NOTES: :[[@LINE-7]]:16: note: 'model' is loaded by 'metaguard::from_pretrained' with an explicit device map here
  metaguard::save_pretrained(*model, out);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::save_pretrained' needs the offloading hooks of 'model'
  // CHECK-NOTES: :[[@LINE-8]]:3: note: 'metaguard::remove_hook_from_module' removes the hooks of 'model.second' here
  // CHECK-NOTES: :[[@LINE-11]]:16: note: 'model' is loaded by
  // Dispatching again reads the offloaded weights through the hooks that
  // are gone: OffloadError at run time.
  metaguard::dispatch_model(*model, metaguard::DeviceMap::on(torch::kCPU));
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::dispatch_model' needs the offloading hooks of 'model'
  // CHECK-NOTES: :[[@LINE-14]]:3: note: 'metaguard::remove_hook_from_module' removes the hooks of 'model.second' here
  // CHECK-NOTES: :[[@LINE-17]]:16: note: 'model' is loaded by
  metaguard::verify_dispatch(*model); // Reported once, at the dispatch.
}

// Writes that never land, on the real at::Tensor, torch::nn::init,
// torch::optim and torch::load.
void writes(const fs::path &dir, torch::Tensor x) {
  metaguard::LoadOptions options;
  options.device_map = metaguard::DeviceMap::automatic();
  auto model = metaguard::from_pretrained<Tiny>(dir, options);
  for (auto &item : model->named_parameters())
    item.value().mul_(0.5);
  // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'mul_' on a parameter of dispatched model 'model'
  // CHECK-NOTES: :[[@LINE-4]]:16: note: 'model' is loaded by
  model->first->fc->bias.zero_();
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'zero_' on a parameter of 'model.first.fc' of dispatched model 'model'
  // CHECK-NOTES: :[[@LINE-7]]:16: note: 'model' is loaded by
  torch::nn::init::normal_(model->second->fc->weight, 0.0, 0.02);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'torch::nn::init::normal_' on a parameter of 'model.second.fc' of dispatched model 'model'
  // CHECK-NOTES: :[[@LINE-10]]:16: note: 'model' is loaded by
  torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-4));
  opt.zero_grad();
  opt.step();
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'step' of an optimizer over the parameters of dispatched model 'model'
  // CHECK-NOTES: :[[@LINE-4]]:23: note: the optimizer 'opt' is built here from the parameters of 'model'
  // CHECK-NOTES: :[[@LINE-16]]:16: note: 'model' is loaded by
  torch::load(model, "finetuned.pt");
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'torch::load' writes a checkpoint into the parameters of dispatched model 'model'
  // CHECK-NOTES: :[[@LINE-19]]:16: note: 'model' is loaded by

  // Fine: out of place, copies, autograd flags, gradients.
  auto scaled = model->first->fc->weight.mul(2);
  torch::Tensor copy =
      metaguard::load_offloaded_parameter(*model, "second.fc.weight");
  torch::nn::init::xavier_uniform_(copy);
  for (auto &p : model->parameters())
    p.requires_grad_(false);
  model->first->fc->weight.mutable_grad().zero_();
}

// items(), pairs() and structured bindings of the real torch::OrderedDict,
// and std::for_each over the real parameters().
void walks(const fs::path &dir, torch::Tensor x) {
  metaguard::LoadOptions options;
  options.device_map = metaguard::DeviceMap::automatic();
  auto model = metaguard::from_pretrained<Tiny>(dir, options);
  for (const auto &item : model->named_parameters().items())
    item.value().zero_();
  // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'zero_' on a parameter of dispatched model 'model'
  // CHECK-NOTES: :[[@LINE-4]]:16: note: 'model' is loaded by
  for (auto &[name, p] : model->named_parameters().pairs())
    p.add_(x);
  // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'add_' on a parameter of dispatched model 'model'
  // CHECK-NOTES: :[[@LINE-8]]:16: note: 'model' is loaded by
  auto params = model->parameters();
  std::for_each(params.begin(), params.end(),
                [](torch::Tensor &p) { p.clamp_(-1, 1); });
  // CHECK-NOTES: :[[@LINE-2]]:3: warning: 'lambda' changes a parameter of dispatched model 'model' in place (with 'clamp_')
  // CHECK-NOTES: :[[@LINE-2]]:40: note: its parameter is changed here with 'clamp_', in 'lambda'
  // CHECK-NOTES: :[[@LINE-14]]:16: note: 'model' is loaded by

  // Fine: reading, and copies.
  for (auto &[name, p] : model->named_parameters().pairs())
    auto norm = p.norm();
  for (auto &copy : model->named_parameters().values())
    auto doubled = copy.mul(2);
}
