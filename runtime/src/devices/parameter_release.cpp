#include "devices/parameter_release.h"

#include "devices/empty_model.h"

#include <metaguard/debug_checks.h>

#include <ATen/ATen.h>
#include <c10/core/TensorImpl.h>
#include <c10/core/UndefinedTensorImpl.h>

#include <algorithm>
#include <unordered_map>
#include <vector>

namespace metaguard::detail {
namespace {

using WeakImpl = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;

// Tensors created under one parameters-only scope, by address. Weak: a
// temporary that dies is simply forgotten at the next sweep.
using Frame = std::unordered_map<const c10::TensorImpl *, WeakImpl>;

thread_local std::vector<Frame> frames;
// Creating the meta replacement runs an operator too; it must not sweep.
thread_local bool sweeping = false;

bool may_become_parameter(const at::Tensor &tensor) {
  return tensor.defined() && !tensor.is_meta() &&
         (tensor.is_floating_point() || tensor.is_complex());
}

void watch(const at::Tensor &tensor) {
  if (may_become_parameter(tensor))
    frames.back().emplace(tensor.unsafeGetTensorImpl(), WeakImpl(tensor.getIntrusivePtr()));
}

// Same shape, strides and dtype on meta; the TensorImpl (and so the
// Parameter the module and its member variable hold) stays the same object.
void to_meta_in_place(const at::Tensor &tensor) {
  const at::Tensor meta = at::empty_strided(tensor.sizes(), tensor.strides(),
                                            tensor.options().device(at::kMeta));
  tensor.unsafeGetTensorImpl()->shallow_copy_from(meta.getIntrusivePtr());
  if (empty_model_checks()) // debug builds: it belongs to an empty model now
    mark_empty(tensor);
}

// Releases the watched tensors that are parameters now; forgets them and the
// dead ones.
bool sweep(Frame &frame) {
  bool released = false;
  sweeping = true;
  for (auto it = frame.begin(); it != frame.end();) {
    const auto impl = it->second.lock();
    if (!impl) {
      it = frame.erase(it);
      continue;
    }
    const at::Tensor tensor(impl);
    if (tensor.is_meta()) {
      it = frame.erase(it);
    } else if (tensor.requires_grad() && tensor.is_leaf()) {
      to_meta_in_place(tensor);
      released = true;
      it = frame.erase(it);
    } else {
      ++it;
    }
  }
  sweeping = false;
  return released;
}

} // namespace

void begin_parameter_release() { frames.emplace_back(); }

void end_parameter_release() {
  if (frames.empty())
    return;
  sweep(frames.back());
  frames.pop_back();
}

bool release_new_parameters() {
  if (sweeping || frames.empty())
    return false;
  return sweep(frames.back());
}

void watch_outputs(const torch::jit::Stack &stack, std::size_t returns) {
  if (sweeping || frames.empty())
    return;
  for (std::size_t i = stack.size() - std::min(returns, stack.size()); i < stack.size(); ++i) {
    const auto &value = stack[i];
    if (value.isTensor())
      watch(value.toTensor());
    else if (value.isTensorList())
      for (const at::Tensor &tensor : value.toTensorList().vec())
        watch(tensor);
  }
}

} // namespace metaguard::detail
