// The empty-model checks: marking the tensors of models built while the meta
// device is ambient, and refusing the uses that need their missing values.
#include "devices/empty_model.h"

#include "offload/offload_dispatch.h"
#include "offload/offload_registry.h"
#include "devices/tensor_mark.h"
#include "core/message_names.h"
#include "core/torch_compat.h"

#include <metaguard/debug_checks.h>
#include <metaguard/errors.h>
#include <metaguard/loading.h>
#include <metaguard/policy.h>

#include <algorithm>
#include <set>
#include <unordered_set>

namespace metaguard::detail {
namespace {

// What an empty model's meta storage says about it.
struct EmptyTicket {
  std::string name;  // full name in its model, once from_config knows it
  std::string built; // the call that built the model, once known
  std::string scope; // what made the meta device ambient
};

void delete_empty_ticket(void *ticket) { delete static_cast<EmptyTicket *>(ticket); }

const EmptyTicket *empty_ticket_of(const torch::Tensor &tensor) {
  return static_cast<const EmptyTicket *>(mark_context(tensor, &delete_empty_ticket));
}

const char *const kEmptyAdvice =
    "Give the model its weights first: load_weights(model, checkpoint) or "
    "load_checkpoint_and_dispatch(model, checkpoint, options) load a checkpoint into it (\"disk\" entries of "
    "a device map stay meta behind offload hooks), attach_offload_hooks puts it behind hooks with a weights "
    "map, and to_empty(model, device) gives it uninitialised memory to initialise yourself. Shapes, dtypes, "
    "numel and planning a device map (infer_auto_device_map) work on the empty model as it is.";

void put_ticket(const torch::Tensor &tensor, EmptyTicket ticket) {
  // A tensor that carries metaguard's key already is marked (or offloaded).
  if (!tensor.defined() || !tensor.is_meta() || tensor.layout() != torch::kStrided ||
      !tensor.unsafeGetTensorImpl()->has_storage() || tensor.key_set().has(kOffloadKey) ||
      is_marked_empty(tensor))
    return;
  // A tensor without bytes has no values to miss, and a composite factory
  // (arange, linspace, range) makes one and resizes it in its out= variant: a
  // mark there (a storage that cannot resize) would make LibTorch throw
  // "Trying to resize storage that is not resizable" from a constructor
  // computing a buffer under a meta scope with buffers. The factory's result
  // is marked when the factory returns.
  if (tensor.storage().nbytes() == 0)
    return;
  put_mark(tensor,
           {tensor.key_set(), tensor.dtype(), tensor.storage().nbytes(), tensor.sizes(), tensor.strides(),
            tensor.storage_offset()},
           new EmptyTicket(std::move(ticket)), &delete_empty_ticket);
}

// "'blocks.0.fc.weight' (Float [16, 16])", with the name from the ticket or
// from the models built empty that are still alive.
std::string named(const torch::Tensor &tensor, const EmptyTicket &ticket,
                  const std::optional<BuiltEmptyName> &found) {
  const std::string name = !ticket.name.empty() ? ticket.name : found ? found->name : std::string();
  if (name.empty())
    return "a tensor (" + dtype_and_shape(tensor) + ") of an empty model";
  return "'" + name + "' (" + dtype_and_shape(tensor) + ")";
}

// Where the model was built empty, as far as it is known.
std::string built_where(const EmptyTicket &ticket, const std::optional<BuiltEmptyName> &found) {
  std::string text = "a model built on the meta device";
  if (!ticket.built.empty())
    text += " by " + ticket.built;
  else if (found && !found->model.empty())
    text += " (" + found->model + ")";
  return text + " under " + ticket.scope;
}

std::string origin(const EmptyTicket &ticket, const std::optional<BuiltEmptyName> &found) {
  return built_where(ticket, found) + " and given no weights since";
}

std::optional<BuiltEmptyName> lookup(const torch::Tensor &tensor, const EmptyTicket &ticket) {
  if (!ticket.name.empty())
    return std::nullopt;
  return built_empty_name(tensor.unsafeGetTensorImpl()->storage().unsafeGetStorageImpl());
}

// The name and shape of a marked tensor, and where its model was built.
struct Story {
  std::string tensor;
  std::string origin;
};

Story story(const torch::Tensor &tensor) {
  const EmptyTicket &ticket = *empty_ticket_of(tensor);
  const auto found = lookup(tensor, ticket);
  return {named(tensor, ticket, found), origin(ticket, found)};
}

// A tensor whose values an operator reads: not meta (or offloaded, whose
// values are loaded for the operator), and not a CPU scalar, which LibTorch
// lets operators on any device read (2 * x makes one).
bool is_real(const torch::Tensor &tensor) {
  if (!tensor.defined() || (tensor.is_meta() && !is_tagged_offloaded(tensor)))
    return false;
  return !tensor.device().is_cpu() || tensor.dim() != 0;
}

// Operators that allocate a tensor shaped like their argument without
// reading it (zeros_like(weight, kCPU) is one way to materialise a model).
bool allocates_only(const std::string &name) {
  static const std::set<std::string> names = {
      "aten::empty_like", "aten::zeros_like", "aten::ones_like", "aten::full_like", "aten::rand_like",
      "aten::randn_like", "aten::randint_like", "aten::new_empty", "aten::new_empty_strided",
      "aten::new_zeros", "aten::new_ones", "aten::new_full"};
  return names.count(name) != 0;
}

// What an operator's arguments hold, as far as the checks care.
struct Arguments {
  std::optional<torch::Tensor> empty;  // the first marked tensor
  std::optional<torch::Device> real;   // the device of the first real tensor
  std::optional<torch::Device> target; // a non-meta device argument (a copy)
};

Arguments scan(const c10::OperatorHandle &op, const torch::jit::Stack &stack) {
  Arguments found;
  const std::size_t count = op.schema().arguments().size();
  auto see = [&](const torch::Tensor &tensor) {
    if (is_marked_empty(tensor)) {
      if (!found.empty)
        found.empty = tensor;
    } else if (!found.real && is_real(tensor)) {
      found.real = tensor.device();
    }
  };
  for (std::size_t i = stack.size() - count; i < stack.size(); ++i) {
    const c10::IValue &value = stack[i];
    if (value.isTensor()) {
      see(value.toTensor());
    } else if (value.isList()) { // Tensor[] and Tensor?[] (cat, stack, index)
      const auto list = value.toList();
      for (std::size_t j = 0; j < list.size(); ++j)
        if (const c10::IValue element = list.get(j); element.isTensor())
          see(element.toTensor());
    } else if (value.isDevice() && !value.toDevice().is_meta() && !found.target) {
      found.target = value.toDevice();
    }
  }
  return found;
}

// set_data asks _has_compatible_shallow_copy_type(self, new) first. A meta
// value stays empty: it takes the mark, so the answer is yes and the
// parameter keeps being checked (Module::to(dtype) does this). A real value
// cannot replace a meta tensor's in LibTorch, marked or not: say why.
void check_set_data(torch::jit::Stack &stack) {
  const torch::Tensor self = stack[stack.size() - 2].toTensor();
  const torch::Tensor value = stack[stack.size() - 1].toTensor();
  if (!is_marked_empty(self))
    return;
  if (value.is_meta()) {
    put_ticket(value, *empty_ticket_of(self));
    return;
  }
  if (thread_meta_scope_live())
    return;
  const Story told = story(self);
  enforce(MetaDeviceError(
      "set_data (which torch::load and Module::to use) cannot give " + told.tensor +
      " the values of a real tensor: it is a meta tensor of " + told.origin +
      ", and LibTorch never turns a meta tensor into a real one in place. Call to_empty(model, device) first "
      "and then torch::load or set_data, or load a Hugging Face checkpoint with load_weights or "
      "load_checkpoint_and_dispatch. " + kEmptyAdvice));
}

// The names of the meta tensors of `state`, and where the first marked one
// was built empty.
std::string list_empty(const std::vector<std::pair<std::string, torch::Tensor>> &state, std::size_t &count,
                       std::string &first) {
  std::string names;
  count = 0;
  for (const auto &[name, tensor] : state) {
    if (!tensor.defined() || !tensor.is_meta())
      continue;
    names += (names.empty() ? "'" : ", '") + name + "'";
    ++count;
    if (first.empty() && is_marked_empty(tensor))
      first = origin(*empty_ticket_of(tensor), lookup(tensor, *empty_ticket_of(tensor)));
  }
  return names;
}

} // namespace

bool is_marked_empty(const torch::Tensor &tensor) { return empty_ticket_of(tensor) != nullptr; }

std::optional<EmptyOrigin> empty_origin(const torch::Tensor &tensor) {
  const EmptyTicket *ticket = empty_ticket_of(tensor);
  if (ticket == nullptr)
    return std::nullopt;
  std::optional<BuiltEmptyName> found;
  if (ticket->name.empty())
    found = built_empty_name(tensor.unsafeGetTensorImpl()->storage().unsafeGetStorageImpl());
  return EmptyOrigin{!ticket->name.empty() ? ticket->name : found ? found->name : std::string(),
                     built_where(*ticket, found)};
}

void mark_empty(const torch::Tensor &tensor) { put_ticket(tensor, {{}, {}, ambient_meta_description()}); }

void mark_outputs_empty(const torch::jit::Stack &stack, std::size_t returns) {
  for (std::size_t i = stack.size() - std::min(returns, stack.size()); i < stack.size(); ++i) {
    if (stack[i].isTensor())
      mark_empty(stack[i].toTensor());
    else if (stack[i].isTensorList())
      for (const at::Tensor &tensor : stack[i].toTensorList().vec())
        mark_empty(tensor);
  }
}

void check_empty_use(const c10::OperatorHandle &op, torch::jit::Stack &stack) {
  const std::string &name = op.schema().name();
  if (name == "aten::_has_compatible_shallow_copy_type")
    return check_set_data(stack);
  const Arguments arguments = scan(op, stack);
  if (!arguments.empty || reads_no_values(op) || allocates_only(name) || thread_meta_scope_live() ||
      policy() == Policy::Off)
    return;
  if (!arguments.real && !arguments.target)
    return;
  const Story told = story(*arguments.empty);
  const std::string use = arguments.real ? " used " + told.tensor + " together with real tensors (on " +
                                               arguments.real->str() + ")"
                                         : " would copy " + told.tensor + " to " + arguments.target->str();
  enforce(MetaDeviceError("operator " + operator_name(op) + use + ", but it has no data: it belongs to " + told.origin +
                          ". " + kEmptyAdvice));
}

void refuse_empty_save(const std::vector<std::pair<std::string, torch::Tensor>> &state,
                       const std::filesystem::path &dir) {
  if (policy() == Policy::Off)
    return;
  std::size_t count = 0;
  std::string first;
  const std::string names = list_empty(state, count, first);
  if (count == 0)
    return;
  enforce(MetaDeviceError(
      "save_pretrained('" + dir.string() + "') cannot save the model: " + std::to_string(count) +
      " tensor(s) are on the meta device and have no data: " + names + ". " +
      (first.empty() ? "Was the model built under a meta scope and never given weights? "
                     : "They belong to " + first + ". ") +
      kEmptyAdvice + " Nothing was written."));
}

void refuse_empty_move(const torch::nn::Module &module, const std::string &target) {
  if (!empty_model_checks() || policy() == Policy::Off)
    return;
  std::vector<std::pair<std::string, torch::Tensor>> marked;
  for (const auto &item : module.named_parameters(/*recurse=*/true))
    if (is_marked_empty(item.value()))
      marked.emplace_back(item.key(), item.value());
  for (const auto &item : module.named_buffers(/*recurse=*/true))
    if (is_marked_empty(item.value()))
      marked.emplace_back(item.key(), item.value());
  std::size_t count = 0;
  std::string first;
  const std::string names = list_empty(marked, count, first);
  if (count == 0)
    return;
  enforce(MetaDeviceError("cannot move the model to " + target + ": " + std::to_string(count) +
                          " tensor(s) have no data to copy: " + names + ". They belong to " + first + ". " +
                          kEmptyAdvice + " Nothing was moved."));
}

void note_built_empty(const torch::nn::Module &module) {
  if (!empty_model_checks() || !meta_device_active())
    return;
  const EmptyTicket ticket{{}, "from_config<" + module.name() + ">", ambient_meta_description()};
  // A tensor under two names (a tie) keeps the first, as checkpoints do.
  std::unordered_set<const c10::TensorImpl *> named;
  auto name = [&](const std::string &full, const torch::Tensor &tensor) {
    if (!named.insert(tensor.unsafeGetTensorImpl()).second)
      return;
    if (auto *marked = const_cast<EmptyTicket *>(empty_ticket_of(tensor))) {
      *marked = ticket;
      marked->name = full;
    } else {
      EmptyTicket fresh = ticket;
      fresh.name = full;
      put_ticket(tensor, std::move(fresh));
    }
  };
  for (const auto &item : module.named_parameters(/*recurse=*/true))
    name(item.key(), item.value());
  for (const auto &item : module.named_buffers(/*recurse=*/true))
    name(item.key(), item.value());
}

} // namespace metaguard::detail
