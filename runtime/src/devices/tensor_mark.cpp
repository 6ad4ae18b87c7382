// The fallback of metaguard's tensor key: empty-model tensors are checked,
// offloaded parameters get their real values, then the operator runs.
#include "devices/tensor_mark.h"

#include "devices/empty_model.h"
#include "offload/offload_dispatch.h"
#include "core/process_fallback.h"
#include "core/torch_compat.h"
#include "devices/uninitialised.h"

#include <c10/core/impl/LocalDispatchKeySet.h>

#include <string>
#include <unordered_set>

namespace metaguard::detail {
namespace {

void tensor_key_fallback(const c10::OperatorHandle &op, torch::jit::Stack *stack) {
  check_empty_use(op, *stack);
  check_uninitialised_use(op, *stack);
  if (!reads_no_values(op))
    replace_offloaded(op, *stack);
  // The offloaded arguments are real tensors now (meta ones for bookkeeping
  // operators); excluding the key keeps anything left over from coming back.
  c10::impl::ExcludeDispatchKeyGuard exclude(kOffloadKey);
  op.callBoxed(stack);
}

} // namespace

bool tensor_key_installed() {
  static const bool installed = register_process_fallback(
      kOffloadKey, c10::KernelFunction::makeFromBoxedFunction<&tensor_key_fallback>(),
      "metaguard: offloaded parameters load themselves, empty models are checked",
      "make offloaded parameters load themselves",
      "models with offloaded parameters need OnloadGuard in their forward, and empty models are not checked "
      "at their first use");
  return installed;
}

void put_mark(const torch::Tensor &tensor, const MarkShape &shape, void *context, c10::DeleterFnPtr deleter) {
  c10::DataPtr data(nullptr, context, deleter, c10::Device(c10::kMeta));
  c10::Storage storage(c10::Storage::use_byte_size_t(), shape.nbytes, std::move(data), /*allocator=*/nullptr,
                       /*resizable=*/false);
  const c10::DispatchKeySet keys = tensor_key_installed() ? shape.keys.add(kOffloadKey) : shape.keys;
  auto impl = c10::make_intrusive<c10::TensorImpl>(std::move(storage), keys, shape.dtype);
  impl->set_sizes_and_strides(shape.sizes, shape.strides);
  impl->set_storage_offset(shape.storage_offset);
  tensor.unsafeGetTensorImpl()->shallow_copy_from(impl);
}

void *mark_context(const torch::Tensor &tensor, c10::DeleterFnPtr deleter) {
  if (!tensor.defined())
    return nullptr;
  const c10::TensorImpl *impl = tensor.unsafeGetTensorImpl();
  if (!impl->has_storage())
    return nullptr;
  const c10::DataPtr &ptr = impl->storage().data_ptr();
  return ptr.get_deleter() == deleter ? ptr.get_context() : nullptr;
}

bool reads_no_values(const c10::OperatorHandle &op) {
  static const std::unordered_set<std::string> names = {
      "aten::requires_grad_", "aten::retain_grad", "aten::retains_grad", "aten::is_leaf", "aten::output_nr",
      "aten::_version",       "aten::data",        "aten::_fw_primal",   "aten::detach"};
  return names.count(op.schema().name()) != 0;
}

} // namespace metaguard::detail
