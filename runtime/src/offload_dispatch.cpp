// Transparent offload: the dispatch-key fallback that gives every operator
// the real values of the offloaded parameters it receives, for that call.
#include "offload_dispatch.h"

#include "module_walk.h"
#include "process_fallback.h"

#include <metaguard/errors.h>
#include <metaguard/offload_checks.h>
#include <metaguard/policy.h>

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/torch.h>

#include <sstream>
#include <unordered_set>

namespace metaguard::detail {
namespace {

constexpr c10::DispatchKey kKey = offload_dispatch_key();

// What an offloaded parameter's meta storage points back to.
struct OffloadTicket {
  std::weak_ptr<OffloadHook> hook;
  std::size_t index;
  std::string name; // full name, for messages when the hook is gone
};

void delete_ticket(void *ticket) { delete static_cast<OffloadTicket *>(ticket); }

const OffloadTicket *ticket_of(const torch::Tensor &tensor) {
  const c10::TensorImpl *impl = tensor.unsafeGetTensorImpl();
  if (!impl->has_storage())
    return nullptr;
  const c10::DataPtr &ptr = impl->storage().data_ptr();
  if (ptr.get_deleter() != &delete_ticket)
    return nullptr;
  return static_cast<const OffloadTicket *>(ptr.get_context());
}

std::string op_name(const c10::OperatorHandle &op) {
  const auto &name = op.schema().operator_name();
  return name.overload_name.empty() ? name.name : name.name + "." + name.overload_name;
}

// Reports a rule broken at the moment of use. Under Policy::Warn/Off the
// operator goes on with the meta tensor, as it would without metaguard.
void refuse(const c10::OperatorHandle &op, const std::string &name, const std::string &why) {
  detail::enforce(OffloadError("operator " + op_name(op) + " used offloaded parameter '" + name + "', but " +
                               why + ". " + kOffloadAdvice));
}

// Why the record's parameter can no longer be loaded for `tensor`, if so:
// the module holds another tensor under its name, or this one changed shape.
std::optional<std::string> record_problem(const OffloadHook &hook, const OffloadedParam &record,
                                          const torch::Tensor &tensor) {
  if (const auto owner = hook.owner.lock()) {
    const torch::Tensor current = direct_parameter(*owner, record.local_name);
    if (!current.defined() || current.unsafeGetTensorImpl() != record.address)
      return std::string("its module now holds another tensor under that name (it was replaced while "
                         "offloaded; the hook still loads the original's values)");
  }
  if (tensor.sizes() != c10::IntArrayRef(record.sizes) || tensor.scalar_type() != record.dtype) {
    std::ostringstream msg;
    msg << "it was changed to " << tensor.scalar_type() << " " << tensor.sizes() << " while offloaded as "
        << record.dtype << " " << c10::IntArrayRef(record.sizes);
    return msg.str();
  }
  return std::nullopt;
}

// How an operator uses an argument.
enum class Use {
  Read,
  Write,
  // The target of set_data (and so of Module::to on a plain module): LibTorch
  // asks this operator whether the new value may replace the tensor's.
  SetDataTarget,
};

Use use_of(const c10::OperatorHandle &op, std::size_t index) {
  const auto &argument = op.schema().arguments()[index];
  if (index == 0 && op.schema().name() == "aten::_has_compatible_shallow_copy_type")
    return Use::SetDataTarget;
  return argument.alias_info() != nullptr && argument.alias_info()->isWrite() ? Use::Write : Use::Read;
}

// The real value of one offloaded argument, or the argument itself when a
// rule is broken and the policy lets the operator go on.
torch::Tensor onload(const c10::OperatorHandle &op, const torch::Tensor &tensor, Use use) {
  const OffloadTicket *ticket = ticket_of(tensor);
  if (ticket == nullptr) {
    refuse(op, "<unknown>",
           "the tensor carries metaguard's offload mark without metaguard's storage (another library may use "
           "dispatch key " +
               std::string(c10::toString(kKey)) + ")");
    return tensor;
  }
  const auto hook = ticket->hook.lock();
  if (!hook) {
    refuse(op, ticket->name,
           "its offloading hook was removed (remove_hook_from_module, or its module was re-dispatched or "
           "destroyed), so its data cannot be found");
    return tensor;
  }
  if (use == Use::SetDataTarget) {
    // Answered with the meta tensor, LibTorch refuses the set_data itself.
    refuse(op, ticket->name,
           "set_data (or Module::to on a module that is not a PreTrainedModel) would move or replace it by "
           "hand, and its hook would go on loading the original values");
    return tensor;
  }
  if (use == Use::Write && verify_on_materialise()) {
    refuse(op, ticket->name,
           "the operator writes into it; an offloaded parameter is reloaded from its file at every use, so "
           "the write would be lost");
    return tensor;
  }
  const OffloadedParam record = [&] {
    std::lock_guard<std::mutex> lock(hook->mutex);
    return hook->params.at(ticket->index);
  }();
  if (const auto problem = record_problem(*hook, record, tensor)) {
    refuse(op, ticket->name, *problem);
    return tensor;
  }
  return load_record(*hook, record).to(hook->execution_device);
}

// Loads each offloaded parameter once per operator call, however many
// arguments name it.
class CallLoads {
public:
  CallLoads(const c10::OperatorHandle &op) : op_(op) {}

  c10::IValue real(const c10::IValue &value, Use use) {
    if (!value.isTensor() || !value.toTensor().key_set().has(kKey))
      return value;
    const torch::Tensor &tensor = value.toTensor();
    const c10::StorageImpl *storage = tensor.unsafeGetTensorImpl()->storage().unsafeGetStorageImpl();
    for (const auto &[seen, loaded] : loaded_)
      if (seen == storage && use == Use::Read)
        return loaded;
    torch::Tensor loaded = onload(op_, tensor, use);
    loaded_.emplace_back(storage, loaded);
    return loaded;
  }

private:
  const c10::OperatorHandle &op_;
  std::vector<std::pair<const c10::StorageImpl *, torch::Tensor>> loaded_;
};

void replace_offloaded(const c10::OperatorHandle &op, torch::jit::Stack &stack) {
  const auto &arguments = op.schema().arguments();
  const std::size_t first = stack.size() - arguments.size();
  CallLoads loads(op);
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    c10::IValue &value = stack[first + i];
    const Use use = use_of(op, i);
    if (value.isTensor()) {
      value = loads.real(value, use);
    } else if (value.isList()) { // Tensor[] and Tensor?[] (cat, stack, index)
      auto list = value.toList();
      for (std::size_t j = 0; j < list.size(); ++j)
        if (const c10::IValue element = list.get(j); element.isTensor())
          list.set(j, loads.real(element, use));
    }
  }
}

// Operators on a tensor's autograd bookkeeping or identity, not its values:
// they run on the meta tensor (views keep the mark and the storage, so they
// load themselves in turn).
bool needs_no_values(const c10::OperatorHandle &op) {
  static const std::unordered_set<std::string> names = {
      "aten::requires_grad_", "aten::retain_grad", "aten::retains_grad", "aten::is_leaf", "aten::output_nr",
      "aten::_version",       "aten::data",        "aten::_fw_primal",   "aten::detach"};
  return names.count(op.schema().name()) != 0;
}

void offload_fallback(const c10::OperatorHandle &op, torch::jit::Stack *stack) {
  if (!needs_no_values(op))
    replace_offloaded(op, *stack);
  // The arguments are real tensors now (meta ones for bookkeeping operators);
  // excluding the key keeps anything left over from coming back here.
  c10::impl::ExcludeDispatchKeyGuard exclude(kKey);
  op.callBoxed(stack);
}

bool fallback_installed() {
  static const bool installed = register_process_fallback(
      kKey, c10::KernelFunction::makeFromBoxedFunction<&offload_fallback>(),
      "metaguard: offloaded parameters load themselves", "make offloaded parameters load themselves",
      "models with offloaded parameters need OnloadGuard in their forward");
  return installed;
}

} // namespace

void tag_offloaded(const torch::Tensor &param, const std::shared_ptr<OffloadHook> &hook, std::size_t index) {
  const OffloadedParam &record = hook->params.at(index);
  const auto dtype = caffe2::TypeMeta::fromScalarType(record.dtype);
  // The key set of a plain meta tensor (backend and autograd keys), plus ours.
  static const c10::DispatchKeySet meta_keys = torch::empty({0}, torch::TensorOptions().device(torch::kMeta)).key_set();
  c10::DispatchKeySet keys = meta_keys;
  if (fallback_installed())
    keys = keys.add(kKey);
  auto *ticket = new OffloadTicket{hook, index, record.key};
  c10::DataPtr data(nullptr, ticket, &delete_ticket, c10::Device(c10::kMeta));
  std::int64_t elements = 1;
  for (const auto size : record.sizes)
    elements *= size;
  c10::Storage storage(c10::Storage::use_byte_size_t(), elements * static_cast<std::int64_t>(dtype.itemsize()),
                       std::move(data), /*allocator=*/nullptr, /*resizable=*/false);
  auto impl = c10::make_intrusive<c10::TensorImpl>(std::move(storage), keys, dtype);
  impl->set_sizes_contiguous(record.sizes);
  param.unsafeGetTensorImpl()->shallow_copy_from(impl);
}

void untag_offloaded(const torch::Tensor &param) {
  param.unsafeGetTensorImpl()->shallow_copy_from(
      torch::empty(param.sizes(), torch::TensorOptions().dtype(param.scalar_type()).device(torch::kMeta))
          .getIntrusivePtr());
}

bool is_tagged_offloaded(const torch::Tensor &tensor) {
  return tensor.defined() && tensor.key_set().has(kKey) && ticket_of(tensor) != nullptr;
}

} // namespace metaguard::detail
