// The memory to_empty gives: poison in every build, and with the empty-model
// checks on a ticket that refuses reads before the first write.
#include "devices/uninitialised.h"

#include "devices/tensor_mark.h"
#include "core/message_names.h"
#include "core/torch_compat.h"

#include <metaguard/debug_checks.h>
#include <metaguard/errors.h>
#include <metaguard/policy.h>

#include <c10/core/impl/LocalDispatchKeySet.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <unordered_set>

namespace metaguard::detail {
namespace {

// A dtype's poison: `bits` repeated in every `width`-byte unit of the
// storage, written and compared through an integer dtype (`unit`) of that
// width. Floating types get a quiet NaN whose payload ends in 0xDEAD (0xAD
// for the 16-bit types), which arithmetic carries into its results; complex
// types get it in both parts. Integer types get their most negative value
// (uint8: 255), bool gets true. The table is in docs/runtime-loading.md.
struct Poison {
  torch::Dtype unit;
  std::size_t width;
  std::uint64_t bits;
};

std::optional<Poison> poison_of(c10::ScalarType type) {
  switch (type) {
  case c10::ScalarType::Float:
  case c10::ScalarType::ComplexFloat:
    return Poison{torch::kInt, 4, 0x7FC0DEADu};
  case c10::ScalarType::Double:
  case c10::ScalarType::ComplexDouble:
    return Poison{torch::kLong, 8, 0x7FF800000000DEADull};
  case c10::ScalarType::Half:
  case c10::ScalarType::ComplexHalf:
    return Poison{torch::kShort, 2, 0x7EADu};
  case c10::ScalarType::BFloat16:
    return Poison{torch::kShort, 2, 0x7FEDu};
  case c10::ScalarType::Char:
    return Poison{torch::kChar, 1, 0x80u};
  case c10::ScalarType::Short:
    return Poison{torch::kShort, 2, 0x8000u};
  case c10::ScalarType::Int:
    return Poison{torch::kInt, 4, 0x80000000u};
  case c10::ScalarType::Long:
    return Poison{torch::kLong, 8, 0x8000000000000000ull};
  case c10::ScalarType::Byte:
    return Poison{torch::kByte, 1, 0xFFu};
  case c10::ScalarType::Bool:
    return Poison{torch::kByte, 1, 0x01u};
  default:
    return std::nullopt;
  }
}

// The poison as a value of its integer dtype (fill_ takes a Scalar).
std::int64_t signed_bits(const Poison &poison) {
  switch (poison.width) {
  case 1:
    return poison.unit == torch::kByte ? static_cast<std::int64_t>(poison.bits)
                                       : static_cast<std::int8_t>(poison.bits);
  case 2:
    return static_cast<std::int16_t>(poison.bits);
  case 4:
    return static_cast<std::int32_t>(poison.bits);
  default:
    return static_cast<std::int64_t>(poison.bits);
  }
}

// The whole storage of `tensor` as a flat tensor of the poison's integer dtype.
torch::Tensor units_of(const torch::Tensor &tensor, const Poison &poison) {
  const auto count = static_cast<std::int64_t>(tensor.storage().nbytes() / poison.width);
  return torch::empty({0}, tensor.options().dtype(poison.unit)).set_(tensor.storage(), 0, {count}, {1});
}

template <class U> bool all_equal(const unsigned char *bytes, std::size_t count, U bits) {
  for (std::size_t i = 0; i < count; ++i) {
    U unit;
    std::memcpy(&unit, bytes + i * sizeof(U), sizeof(U));
    if (unit != bits)
      return false;
  }
  return true;
}

// What a tensor that to_empty gave memory to carries while the checks are on.
struct UninitTicket {
  UninitOrigin origin;
  std::atomic<bool> cleared{false};
  c10::DataPtr inner; // the allocator's, freed with the ticket
};

void delete_uninit_ticket(void *ticket) { delete static_cast<UninitTicket *>(ticket); }

UninitTicket *uninit_ticket_of(const torch::Tensor &tensor) {
  return static_cast<UninitTicket *>(mark_context(tensor, &delete_uninit_ticket));
}

// Takes metaguard's key off `tensor` (same TensorImpl, storage and shape):
// once its ticket is cleared, its operators skip the fallback.
void strip_key(const torch::Tensor &tensor) {
  c10::TensorImpl *impl = tensor.unsafeGetTensorImpl();
  if (!impl->key_set().has(kOffloadKey))
    return;
  auto fresh = c10::make_intrusive<c10::TensorImpl>(c10::Storage(impl->storage()), impl->key_set().remove(kOffloadKey),
                                                    impl->dtype());
  fresh->set_sizes_and_strides(impl->sizes(), impl->strides());
  fresh->set_storage_offset(impl->storage_offset());
  impl->shallow_copy_from(fresh);
}

// Operators that look at a tensor's shape, identity or storage, not at its values.
bool reads_nothing(const c10::OperatorHandle &op) {
  static const std::unordered_set<std::string> names = {
      "aten::_has_compatible_shallow_copy_type", "aten::is_same_size", "aten::is_set_to", "aten::set_",
      "aten::set_data", "aten::empty_like", "aten::zeros_like", "aten::ones_like", "aten::full_like",
      "aten::rand_like", "aten::randn_like", "aten::randint_like", "aten::new_empty", "aten::new_empty_strided",
      "aten::new_zeros", "aten::new_ones", "aten::new_full"};
  return reads_no_values(op) || names.count(op.schema().name()) != 0;
}

std::string named(const torch::Tensor &tensor, const UninitTicket &ticket) {
  const std::string shape = "(" + dtype_and_shape(tensor) + ")";
  return ticket.origin.name.empty() ? "a tensor " + shape : "'" + ticket.origin.name + "' " + shape;
}

// "It belongs to a model built on the meta device by from_config<NetImpl>
// under init_empty_weights() and given memory by to_empty(model, cpu)."
std::string history(const UninitTicket &ticket) {
  std::string text = "It belongs to ";
  text += ticket.origin.built.empty() ? std::string("a model") : ticket.origin.built;
  return text + " and given memory by " + ticket.origin.given + ", which filled it with poison (NaN for floating "
                                                                "types, a sentinel for integer and bool ones). ";
}

const char *const kUninitAdvice =
    "Initialise the model before using it: call reset_parameters() on its modules or run your own "
    "initialisation (torch::nn::init functions, fill_, copy_ or any in-place operator on each tensor), or give "
    "it its weights: load_weights(model, checkpoint) or torch::load. Buffers computed in a "
    "constructor (rotary frequencies, position ids) need computing again: build the model under "
    "init_empty_weights() (buffers excluded, the default) to keep them real.";

// The marked tensors of `state` that hold only poison, named; a marked
// tensor written some other way has its ticket cleared.
std::vector<std::string> still_poisoned(const std::vector<std::pair<std::string, torch::Tensor>> &state,
                                        std::string &history_of_first) {
  std::vector<std::string> names;
  std::unordered_set<const c10::TensorImpl *> seen;
  for (const auto &[name, tensor] : state) {
    UninitTicket *ticket = uninit_ticket_of(tensor);
    if (ticket == nullptr || ticket->cleared || !seen.insert(tensor.unsafeGetTensorImpl()).second)
      continue;
    if (!holds_only_poison(tensor)) {
      ticket->cleared = true;
      continue;
    }
    names.push_back("'" + name + "'");
    if (history_of_first.empty())
      history_of_first = history(*ticket);
  }
  return names;
}

std::string joined(const std::vector<std::string> &names) {
  std::string text;
  for (const auto &name : names)
    text += (text.empty() ? "" : ", ") + name;
  return text;
}

} // namespace

bool fill_poison(const torch::Tensor &tensor) {
  const auto poison = poison_of(tensor.scalar_type());
  if (!poison || !tensor.defined() || !tensor.has_storage() || tensor.storage().nbytes() == 0)
    return static_cast<bool>(poison);
  c10::impl::ExcludeDispatchKeyGuard exclude(kOffloadKey);
  torch::NoGradGuard no_grad;
  units_of(tensor, *poison).fill_(signed_bits(*poison));
  return true;
}

bool holds_only_poison(const torch::Tensor &tensor) {
  const auto poison = poison_of(tensor.scalar_type());
  if (!poison || !tensor.defined() || !tensor.has_storage() || tensor.is_meta())
    return false;
  const c10::Storage &storage = tensor.storage();
  const std::size_t count = storage.nbytes() / poison->width;
  if (tensor.device().is_cpu()) {
    const auto *bytes = static_cast<const unsigned char *>(storage.data_ptr().get());
    if (bytes == nullptr)
      return false;
    switch (poison->width) {
    case 1:
      return all_equal<std::uint8_t>(bytes, count, static_cast<std::uint8_t>(poison->bits));
    case 2:
      return all_equal<std::uint16_t>(bytes, count, static_cast<std::uint16_t>(poison->bits));
    case 4:
      return all_equal<std::uint32_t>(bytes, count, static_cast<std::uint32_t>(poison->bits));
    default:
      return all_equal<std::uint64_t>(bytes, count, poison->bits);
    }
  }
  c10::impl::ExcludeDispatchKeyGuard exclude(kOffloadKey);
  torch::NoGradGuard no_grad;
  return units_of(tensor, *poison).eq(signed_bits(*poison)).all().item<bool>();
}

torch::Tensor mark_uninitialised(const torch::Tensor &value, UninitOrigin origin) {
  if (!empty_model_checks() || !value.defined() || !value.device().is_cpu() || !value.has_storage() ||
      !poison_of(value.scalar_type()) || value.storage().nbytes() == 0 || !tensor_key_installed())
    return value;
  c10::Storage storage = value.storage();
  auto *ticket = new UninitTicket;
  ticket->origin = std::move(origin);
  void *data = storage.data_ptr().get();
  ticket->inner = storage.set_data_ptr(c10::DataPtr(data, ticket, &delete_uninit_ticket, value.device()));
  c10::TensorImpl *impl = value.unsafeGetTensorImpl();
  auto marked =
      c10::make_intrusive<c10::TensorImpl>(std::move(storage), impl->key_set().add(kOffloadKey), impl->dtype());
  marked->set_sizes_and_strides(impl->sizes(), impl->strides());
  marked->set_storage_offset(impl->storage_offset());
  return torch::Tensor::wrap_tensor_impl(std::move(marked));
}

bool is_marked_uninitialised(const torch::Tensor &tensor) {
  const UninitTicket *ticket = uninit_ticket_of(tensor);
  return ticket != nullptr && !ticket->cleared;
}

void check_uninitialised_use(const c10::OperatorHandle &op, torch::jit::Stack &stack) {
  const auto &arguments = op.schema().arguments();
  const std::size_t count = arguments.size();
  if (count > stack.size())
    return;
  const bool no_read = reads_nothing(op);
  const std::size_t first = stack.size() - count;
  std::optional<torch::Tensor> poisoned;
  auto see = [&](const torch::Tensor &tensor, const c10::Argument &argument) {
    UninitTicket *ticket = uninit_ticket_of(tensor);
    if (ticket == nullptr)
      return;
    const c10::AliasInfo *alias = argument.alias_info();
    const bool writes = alias != nullptr && alias->isWrite();
    if (ticket->cleared || writes) {
      // Any write counts as initialising: a partial write of a slice too.
      ticket->cleared = true;
      strip_key(tensor);
      return;
    }
    if (alias != nullptr || no_read) // a view, or only the shape: the values are read later, if at all
      return;
    if (holds_only_poison(tensor)) {
      if (!poisoned)
        poisoned = tensor;
      return;
    }
    ticket->cleared = true; // written without an operator (through its data pointer)
    strip_key(tensor);
  };
  for (std::size_t i = first; i < stack.size(); ++i) {
    const c10::IValue &value = stack[i];
    const c10::Argument &argument = arguments[i - first];
    if (value.isTensor()) {
      see(value.toTensor(), argument);
    } else if (value.isList()) {
      const auto list = value.toList();
      for (std::size_t j = 0; j < list.size(); ++j)
        if (const c10::IValue element = list.get(j); element.isTensor())
          see(element.toTensor(), argument);
    }
  }
  if (!poisoned || policy() == Policy::Off)
    return;
  const UninitTicket &ticket = *uninit_ticket_of(*poisoned);
  enforce(UninitializedMemoryError("operator " + operator_name(op) + " read " + named(*poisoned, ticket) +
                                   " before anything wrote it: its memory was never initialised. " +
                                   history(ticket) + kUninitAdvice));
}

void refuse_uninitialised_save(const std::vector<std::pair<std::string, torch::Tensor>> &state,
                               const std::filesystem::path &dir) {
  if (policy() == Policy::Off)
    return;
  std::string first;
  const auto names = still_poisoned(state, first);
  if (names.empty())
    return;
  enforce(UninitializedMemoryError("save_pretrained('" + dir.string() + "') cannot save the model: " +
                                   std::to_string(names.size()) +
                                   " tensor(s) were given memory and never initialised: " + joined(names) +
                                   ". " + first + kUninitAdvice + " Nothing was written."));
}

void refuse_uninitialised_move(const torch::nn::Module &module, const std::string &target) {
  if (policy() == Policy::Off)
    return;
  std::vector<std::pair<std::string, torch::Tensor>> state;
  for (const auto &item : module.named_parameters(/*recurse=*/true))
    state.emplace_back(item.key(), item.value());
  for (const auto &item : module.named_buffers(/*recurse=*/true))
    state.emplace_back(item.key(), item.value());
  std::string first;
  const auto names = still_poisoned(state, first);
  if (names.empty())
    return;
  enforce(UninitializedMemoryError("cannot move the model to " + target + ": " + std::to_string(names.size()) +
                                   " tensor(s) were given memory and never initialised: " + joined(names) +
                                   ". " + first + kUninitAdvice + " Nothing was moved."));
}

} // namespace metaguard::detail
