// Transparent offload: what the tensor key's fallback does for offloaded
// parameters, giving every operator their real values for that call.
#include "offload/offload_dispatch.h"

#include "core/message_names.h"
#include "devices/empty_model.h"
#include "devices/module_walk.h"
#include "devices/tensor_mark.h"

#include <metaguard/errors.h>
#include <metaguard/offload_checks.h>
#include <metaguard/policy.h>

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/strides.h>
#include <torch/torch.h>

#include <sstream>
#include <unordered_set>

namespace metaguard::detail {
namespace {

// What an offloaded parameter's meta storage points back to.
struct OffloadTicket {
  std::weak_ptr<OffloadHook> hook;
  std::size_t index;
  std::string name; // full name, for messages when the hook is gone
};

void delete_offload_ticket(void *ticket) { delete static_cast<OffloadTicket *>(ticket); }

const OffloadTicket *offload_ticket_of(const torch::Tensor &tensor) {
  return static_cast<const OffloadTicket *>(mark_context(tensor, &delete_offload_ticket));
}

// Reports a rule broken at the moment of use. Under Policy::Warn/Off the
// operator goes on with the meta tensor, as it would without metaguard.
void refuse(const c10::OperatorHandle &op, const std::string &name, const std::string &why) {
  detail::enforce(OffloadError("operator " + operator_name(op) + " used offloaded parameter '" + name + "', but " +
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
  const OffloadTicket *ticket = offload_ticket_of(tensor);
  if (ticket == nullptr) {
    refuse(op, "<unknown>",
           "the tensor carries metaguard's offload mark without metaguard's storage (another library may use "
           "dispatch key " +
               std::string(c10::toString(kOffloadKey)) + ")");
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
  return load_for_use(*hook, record).to(hook->execution_device);
}

// Loads each offloaded parameter once per operator call, however many
// arguments name it.
class CallLoads {
public:
  CallLoads(const c10::OperatorHandle &op) : op_(op) {}

  c10::IValue real(const c10::IValue &value, Use use) {
    if (!value.isTensor() || !value.toTensor().key_set().has(kOffloadKey))
      return value;
    const torch::Tensor &tensor = value.toTensor();
    // An empty model's tensor, or a real one to_empty gave memory to and
    // the debug checks still watch (uninitialised.h): nothing to load.
    if (is_marked_empty(tensor) || !tensor.is_meta())
      return value;
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

} // namespace

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

void tag_offloaded(const torch::Tensor &param, const std::shared_ptr<OffloadHook> &hook, std::size_t index) {
  const OffloadedParam &record = hook->params.at(index);
  const auto dtype = caffe2::TypeMeta::fromScalarType(record.dtype);
  // The key set of a plain meta tensor (backend and autograd keys): the
  // parameter may be a real one being offloaded.
  static const c10::DispatchKeySet meta_keys = torch::empty({0}, torch::TensorOptions().device(torch::kMeta)).key_set();
  std::int64_t elements = 1;
  for (const auto size : record.sizes)
    elements *= size;
  const c10::DimVector strides = c10::contiguous_strides(record.sizes);
  put_mark(param,
           {meta_keys, dtype, static_cast<std::size_t>(elements) * dtype.itemsize(), record.sizes, strides, 0},
           new OffloadTicket{hook, index, record.key}, &delete_offload_ticket);
}

void untag_offloaded(const torch::Tensor &param) {
  param.unsafeGetTensorImpl()->shallow_copy_from(
      torch::empty(param.sizes(), torch::TensorOptions().dtype(param.scalar_type()).device(torch::kMeta))
          .getIntrusivePtr());
}

bool is_tagged_offloaded(const torch::Tensor &tensor) {
  return tensor.defined() && tensor.key_set().has(kOffloadKey) && offload_ticket_of(tensor) != nullptr;
}

} // namespace metaguard::detail
