// Private: metaguard's tensor key. A meta tensor may carry metaguard's
// functionality key (kOffloadKey, torch_compat.h) and a meta
// storage whose data pointer is null and whose context says what the mark
// means: an offloaded parameter that loads itself (offload_dispatch.h) or a
// tensor of a model built empty (empty_model.h). One boxed fallback on the
// key serves both; tensors without the key never reach it.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/types.h>

#include <cstddef>
#include <cstdint>

namespace metaguard::detail {

// Whether the fallback is registered (on first call). False when another
// library took the key first; a warning on stderr says so, and marks then
// keep their context without the key (nothing reaches the fallback).
bool tensor_key_installed();

// What a mark puts on a tensor, besides its context.
struct MarkShape {
  c10::DispatchKeySet keys; // the tensor's own keys, without metaguard's
  caffe2::TypeMeta dtype;
  std::size_t nbytes;
  c10::IntArrayRef sizes;
  c10::IntArrayRef strides;
  std::int64_t storage_offset;
};

// Gives `tensor` a meta storage of `shape.nbytes` bytes whose data pointer
// is null and holds `context` (freed with `deleter` with the storage), the
// shape's keys plus metaguard's key, dtype, sizes, strides and offset. Same
// TensorImpl: modules, optimizers and member variables keep their handle.
void put_mark(const torch::Tensor &tensor, const MarkShape &shape, void *context, c10::DeleterFnPtr deleter);

// The context of `tensor`'s mark when the mark was put with `deleter`, else
// null.
void *mark_context(const torch::Tensor &tensor, c10::DeleterFnPtr deleter);

// Operators on a tensor's autograd bookkeeping or identity, not its values:
// they run on the meta tensor (views keep the mark and the storage).
bool reads_no_values(const c10::OperatorHandle &op);

} // namespace metaguard::detail
