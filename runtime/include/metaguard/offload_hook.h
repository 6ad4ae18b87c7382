// Offloading hooks: the side registry that lets an offloaded (meta) parameter
// find its bytes, the guard that materialises them for a forward pass, and the
// checks that catch code which moves, replaces or strips them.
//
// LibTorch modules have no forward hooks and no slot to store one, so hooks
// live in a registry keyed by module identity; each hook remembers the
// TensorImpl of every parameter it offloaded so that replacement (assigning a
// new tensor) and moves (set_data, to()) are detected.
#pragma once

#include <metaguard/errors.h>
#include <metaguard/offload_checks.h>

#include <torch/nn/module.h>
#include <torch/types.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace metaguard {

namespace detail {
struct OffloadHook;
}

// A copy of parameter `name` (full dotted name from `model`) with its real
// values, on the CPU: walks the name's ancestors from the deepest to the root
// and loads through the first module with an offloading hook. Throws
// OffloadError naming the parameter when none has one.
torch::Tensor load_offloaded_parameter(const torch::nn::Module &model, const std::string &name);

// The real value of parameter `name`, offloaded or not: the parameter itself
// when it is not offloaded, load_offloaded_parameter otherwise. Throws
// OffloadError for a meta parameter that no hook can load.
torch::Tensor parameter_value(const torch::nn::Module &model, const std::string &name);

// Whether `model` (any submodule included) has parameters behind hooks.
bool has_offloaded_parameters(const torch::nn::Module &model);
// Full names of the offloaded parameters of `model`, sorted.
std::vector<std::string> offloaded_parameter_names(const torch::nn::Module &model);

// Removes the offloading hook of `module` (and of every submodule when
// `recurse`). Its offloaded parameters stay meta tensors with no way back to
// their bytes: later forwards, saves and verify_dispatch report them.
void remove_hook_from_module(torch::nn::Module &module, bool recurse = false);

// Throws OffloadError listing every offloaded parameter of `model` whose hook
// is gone, whose tensor was replaced, or which was moved off the meta device
// (also every meta parameter that no hook covers). Applies the Policy.
void verify_dispatch(const torch::nn::Module &model);

// Materialises the offloaded parameters of `module` and its submodules on
// their execution device for the guard's lifetime, then returns them to meta.
// Put it first in a forward:
//
//   torch::Tensor forward(torch::Tensor x) {
//     metaguard::OnloadGuard onload(*this);
//     return fc2(torch::relu(fc1(x.to(onload.device()))));
//   }
//
// Free when nothing under `module` is offloaded. Guards nest (an outer guard
// keeps parameters materialised for inner ones); the outermost guard on a
// module's parameters returns them to meta. For inference: autograd must not
// keep the materialised tensors for a later backward.
//
// Optional: without a guard, every operator that receives an offloaded
// parameter loads it for that call (docs/runtime-offload.md). A guard loads a
// block's parameters once for all its operators, the fast path.
class OnloadGuard {
public:
  explicit OnloadGuard(torch::nn::Module &module);
  ~OnloadGuard();
  OnloadGuard(const OnloadGuard &) = delete;
  OnloadGuard &operator=(const OnloadGuard &) = delete;

  // The execution device of the offloaded parameters (CPU when none).
  torch::Device device() const { return device_; }

private:
  std::vector<std::shared_ptr<detail::OffloadHook>> hooks_;
  torch::Device device_{torch::kCPU};
};

// Calls a module holder (e.g. a torch::nn::Embedding member) with its
// offloaded parameters materialised, for submodules whose forward you cannot
// edit:  auto h = metaguard::run_onloaded(embed, ids);
template <class Holder, class... Args> decltype(auto) run_onloaded(Holder &module, Args &&...args) {
  OnloadGuard onload(*module);
  return module->forward(std::forward<Args>(args)...);
}

} // namespace metaguard
