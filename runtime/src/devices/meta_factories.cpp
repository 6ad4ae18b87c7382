#include "devices/meta_factories.h"
#include "core/torch_compat.h"

#include "devices/empty_model.h"
#include "devices/parameter_release.h"
#include "core/process_fallback.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <metaguard/debug_checks.h>

#include <mutex>
#include <optional>
#include <vector>

namespace metaguard::detail {
namespace {

// Scopes: a mode key above BackendSelect, included in the thread-local
// dispatch key set while a meta scope is live. LibTorch has no spare mode key
// for libraries; this one is only ever registered by PyTorch's own
// dispatcher tests (torch_compat.h). If something else got it first,
// registration fails and we say so (see meta_factories_installed).
constexpr c10::DispatchKey kScopeKey = kScopeModeKey;
// The process default must reach threads we never run code on, so it
// cannot use thread-local state: it replaces, for the factory operators
// only, the kernel of BackendSelect, the one key every factory call passes
// through on every thread (torch:: factories exclude the autograd keys,
// ADInplaceOrView among them, before they dispatch). The replacement does
// what BackendSelect does for a factory: pick the backend from the dtype,
// layout and device arguments.
constexpr c10::DispatchKey kDefaultKey = c10::DispatchKey::BackendSelect;

bool holds_tensor(const c10::TypePtr &type) {
  switch (type->kind()) {
  case c10::TypeKind::TensorType:
    return true;
  case c10::TypeKind::OptionalType:
    return holds_tensor(type->castRaw<c10::OptionalType>()->getElementType());
  case c10::TypeKind::ListType:
    return holds_tensor(type->castRaw<c10::ListType>()->getElementType());
  default:
    return false;
  }
}

bool is_optional_device(const c10::TypePtr &type) {
  return type->kind() == c10::TypeKind::OptionalType &&
         type->castRaw<c10::OptionalType>()->getElementType()->kind() ==
             c10::TypeKind::DeviceObjType;
}

// A factory operator takes a `Device? device` and no tensor. Operators that
// take a tensor (empty_like, new_zeros, out= variants) read a missing device
// as "the input's device", which a scope must not change.
std::optional<std::size_t> factory_device_index(const c10::FunctionSchema &schema) {
  std::optional<std::size_t> device;
  const auto &arguments = schema.arguments();
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    if (holds_tensor(arguments[i].type()))
      return std::nullopt;
    if (arguments[i].name() == "device" && is_optional_device(arguments[i].type()))
      device = i;
  }
  return device;
}

// Points a factory call without an explicit device at meta. An explicit
// device in user code (torch::zeros({2}, torch::kCPU)) is kept, as PyTorch's
// device context managers keep it.
void send_to_meta(const c10::OperatorHandle &op, torch::jit::Stack *stack) {
  const auto &schema = op.schema();
  const auto index = factory_device_index(schema);
  if (!index)
    return;
  const std::size_t first = stack->size() - schema.arguments().size();
  auto &device = (*stack)[first + *index];
  if (!device.isNone())
    return;
  device = c10::IValue(c10::Device(c10::kMeta));
  // Pinned memory is a CPU notion; meta tensors would reject it.
  if (const auto pin = schema.argumentIndexWithName("pin_memory"))
    (*stack)[first + static_cast<std::size_t>(*pin)] = c10::IValue();
}

// Under init_empty_weights() (buffers excluded) factories stay real and
// parameters are released around each operator (parameter_release.h). A
// release may turn one of this operator's arguments into a meta tensor, so
// its dispatch keys are then computed again.
void release_around(const c10::OperatorHandle &op, c10::DispatchKeySet keys,
                    torch::jit::Stack *stack) {
  if (release_new_parameters()) {
    c10::impl::ExcludeDispatchKeyGuard below(kScopeKey);
    op.callBoxed(stack);
  } else {
    op.redispatchBoxed(keys & c10::DispatchKeySet(c10::DispatchKeySet::FULL_AFTER, kScopeKey),
                       stack);
  }
  watch_outputs(*stack, op.schema().returns().size());
}

void scope_fallback(const c10::OperatorHandle &op, c10::DispatchKeySet keys,
                    torch::jit::Stack *stack) {
  if (thread_releases_parameters())
    return release_around(op, keys, stack);
  send_to_meta(op, stack);
  op.redispatchBoxed(keys & c10::DispatchKeySet(c10::DispatchKeySet::FULL_AFTER, kScopeKey),
                     stack);
  // Debug builds: what the scope makes (factories, and tensors computed from
  // them, as randn(...) * 0.02) belongs to an empty model.
  if (empty_model_checks())
    mark_outputs_empty(*stack, op.schema().returns().size());
}

// The process default's kernels: a factory call sent to meta makes a tensor
// of an empty model (debug builds).
void mark_default_outputs(const c10::OperatorHandle &op, const torch::jit::Stack &stack, bool sent) {
  if (sent && empty_model_checks())
    mark_outputs_empty(stack, op.schema().returns().size());
}

template <typename T>
c10::optional<T> optional_argument(const c10::FunctionSchema &schema, const torch::jit::Stack &stack,
                                   std::size_t first, const char *name,
                                   T (c10::IValue::*to)() const) {
  const auto index = schema.argumentIndexWithName(name);
  if (!index)
    return c10::nullopt;
  const auto &value = stack[first + static_cast<std::size_t>(*index)];
  return value.isNone() ? c10::nullopt : c10::optional<T>((value.*to)());
}

// For operators BackendSelect falls through for (composites such as zeros
// or randn): after the default device has had its say, go on below it as
// the dispatcher would.
void default_kernel(const c10::OperatorHandle &op, c10::DispatchKeySet keys,
                    torch::jit::Stack *stack) {
  const bool sent = process_default_sends_factories_to_meta();
  if (sent)
    send_to_meta(op, stack);
  op.redispatchBoxed(keys & c10::DispatchKeySet(c10::DispatchKeySet::FULL_AFTER, kDefaultKey),
                     stack);
  mark_default_outputs(op, *stack, sent);
}

// For operators with a BackendSelect kernel of their own (empty, arange, ...),
// which this one replaces: do its work, picking the backend from the
// (possibly rewritten) dtype, layout and device arguments.
void default_backend_select_kernel(const c10::OperatorHandle &op, c10::DispatchKeySet,
                                   torch::jit::Stack *stack) {
  const bool sent = process_default_sends_factories_to_meta();
  if (sent)
    send_to_meta(op, stack);
  const auto &schema = op.schema();
  const std::size_t first = stack->size() - schema.arguments().size();
  const auto backend = c10::computeDispatchKey(
      optional_argument(schema, *stack, first, "dtype", &c10::IValue::toScalarType),
      optional_argument(schema, *stack, first, "layout", &c10::IValue::toLayout),
      optional_argument(schema, *stack, first, "device", &c10::IValue::toDevice));
  op.redispatchBoxed(c10::DispatchKeySet(backend), stack);
  mark_default_outputs(op, *stack, sent);
}

} // namespace

bool meta_factories_installed() {
  static const bool installed = register_process_fallback(
      kScopeKey, c10::KernelFunction::makeFromBoxedFunction<&scope_fallback>(),
      "metaguard: factory functions follow meta scopes", "make LibTorch factory functions follow meta scopes",
      "models that from_config and from_pretrained build under a meta scope allocate on the CPU and are "
      "released after construction, and layers your code constructs directly under the scope keep real "
      "parameters");
  return installed;
}

bool set_thread_meta_factories(bool on) {
  const bool previous = c10::impl::tls_is_dispatch_key_included(kScopeKey);
  if (previous != on && meta_factories_installed())
    c10::impl::tls_set_dispatch_key_included(kScopeKey, on);
  return previous;
}

void set_process_meta_factories(bool on) {
  static std::mutex mutex;
  // Leaked for the same reason as the scope fallback.
  static auto *registrations = new std::vector<c10::RegistrationHandleRAII>();
  std::lock_guard<std::mutex> lock(mutex);
  if (!on) {
    registrations->clear();
    return;
  }
  if (!registrations->empty())
    return;
  auto &dispatcher = c10::Dispatcher::singleton();
  // Replacing a BackendSelect kernel makes LibTorch warn once per operator;
  // the replacement is deliberate and undone by reset_default_device().
  QuietWarnings quiet;
  for (const auto &name : dispatcher.getAllOpNames()) {
    const auto op = dispatcher.findSchema(name);
    if (!op || !factory_device_index(op->schema()))
      continue;
    const auto kernel = op->hasKernelForDispatchKey(kDefaultKey)
                            ? c10::KernelFunction::makeFromBoxedFunction<&default_backend_select_kernel>()
                            : c10::KernelFunction::makeFromBoxedFunction<&default_kernel>();
    registrations->push_back(dispatcher.registerImpl(
        name, kDefaultKey, kernel, c10::nullopt, nullptr,
        "metaguard: factory functions follow the default device"));
  }
}

} // namespace metaguard::detail
