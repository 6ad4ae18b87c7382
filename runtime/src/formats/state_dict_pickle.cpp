#include "formats/state_dict_pickle.h"

#include <metaguard/errors.h>

#include <climits>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <utility>

namespace metaguard::detail {
namespace {

// The storage classes torch.save names in persistent ids (the legacy typed
// names, kept by PyTorch 2 for the file format) and their element types.
std::optional<std::string> storage_dtype(const std::string &global) {
  static const std::map<std::string, std::string> table = {
      {"torch.DoubleStorage", "F64"}, {"torch.FloatStorage", "F32"},  {"torch.HalfStorage", "F16"},
      {"torch.BFloat16Storage", "BF16"}, {"torch.LongStorage", "I64"}, {"torch.IntStorage", "I32"},
      {"torch.ShortStorage", "I16"},  {"torch.CharStorage", "I8"},     {"torch.ByteStorage", "U8"},
      {"torch.BoolStorage", "BOOL"}};
  const auto it = table.find(global);
  if (it == table.end())
    return std::nullopt;
  return it->second;
}

constexpr const char *kOrderedDict = "collections.OrderedDict";
constexpr const char *kRebuildTensor = "torch._utils._rebuild_tensor_v2";
constexpr const char *kRebuildParameter = "torch._utils._rebuild_parameter";

bool allowed_global(const std::string &name) {
  return name == kOrderedDict || name == kRebuildTensor || name == kRebuildParameter ||
         storage_dtype(name).has_value();
}

struct Value;
using Items = std::vector<Value>;
using Entries = std::vector<std::pair<Value, Value>>;

struct Value {
  enum class Kind { None, Bool, Int, BigInt, Float, String, Bytes, Tuple, List, Dict, Global, Storage, Tensor };
  Kind kind = Kind::None;
  std::int64_t integer = 0;
  std::string text; // String, Bytes, Global ("module.name"), BigInt (little-endian bytes)
  // Shared: the memo and the stack may hold the same list or dict, and
  // SETITEMS/APPENDS change it for both.
  std::shared_ptr<Items> items;
  std::shared_ptr<Entries> entries;
  std::shared_ptr<PickledTensor> tensor; // Storage: only .storage is set
};

const char *kind_name(Value::Kind kind) {
  switch (kind) {
  case Value::Kind::None: return "None";
  case Value::Kind::Bool: return "a bool";
  case Value::Kind::Int: return "an int";
  case Value::Kind::BigInt: return "a large int";
  case Value::Kind::Float: return "a float";
  case Value::Kind::String: return "a string";
  case Value::Kind::Bytes: return "bytes";
  case Value::Kind::Tuple: return "a tuple";
  case Value::Kind::List: return "a list";
  case Value::Kind::Dict: return "a dict";
  case Value::Kind::Global: return "a global";
  case Value::Kind::Storage: return "a storage";
  case Value::Kind::Tensor: return "a tensor";
  }
  return "a value";
}

class Machine {
public:
  // Runs the pickle that starts at `start`; `legacy` takes the persistent
  // ids of the format before PyTorch 1.6.
  Machine(std::string_view in, std::size_t start, const std::string &where, bool legacy)
      : in_(in), at_(start), where_(where), legacy_(legacy) {}
  ~Machine() { release(); }
  Machine(const Machine &) = delete;
  Machine &operator=(const Machine &) = delete;
  Value run();
  // Where the pickle ended (after its STOP).
  std::size_t end() const { return at_; }

private:
  [[noreturn]] void fail(const std::string &reason) const {
    throw FormatError(FormatError::Kind::malformed, where_ + ": byte " + std::to_string(op_at_) + ": " + reason +
                      "; a pytorch_model.bin must hold only a state dict (names to tensors)");
  }
  const char *take(std::size_t n);
  std::uint64_t little(std::size_t n);
  std::string line();
  Value pop();
  Value &top();
  std::size_t mark_position();
  Items pop_to_mark();
  Value expect(Value value, Value::Kind kind, const char *what) const;
  void memo_put(std::uint64_t index);
  void memo_get(std::uint64_t index);
  void global(std::string module, std::string name);
  void persistent_id();
  void reduce();
  void set_items(Items pairs);
  void step(unsigned char op);
  Value rebuild_tensor(const Items &args);
  std::vector<std::int64_t> sizes_of(const Value &tuple, const char *what) const;
  void release();

  std::string_view in_;
  std::size_t at_ = 0;
  std::size_t op_at_ = 0;
  const std::string &where_;
  std::vector<Value> stack_;
  std::vector<std::size_t> marks_;
  std::map<std::uint64_t, Value> memo_;
  bool legacy_ = false;
  bool stopped_ = false;
};

const char *Machine::take(std::size_t n) {
  if (n > in_.size() - at_)
    fail("the pickle ends in the middle of an instruction (truncated file?)");
  const char *bytes = in_.data() + at_;
  at_ += n;
  return bytes;
}

std::uint64_t Machine::little(std::size_t n) {
  const auto *bytes = reinterpret_cast<const unsigned char *>(take(n));
  std::uint64_t value = 0;
  for (std::size_t i = n; i-- > 0;)
    value = (value << 8) | bytes[i];
  return value;
}

std::string Machine::line() {
  const auto end = in_.find('\n', at_);
  if (end == std::string_view::npos)
    fail("a GLOBAL name is not terminated");
  std::string text(in_.substr(at_, end - at_));
  at_ = end + 1;
  return text;
}

Value Machine::pop() {
  if (stack_.empty() || (!marks_.empty() && stack_.size() == marks_.back()))
    fail("an instruction needs a value the stack does not have");
  Value value = std::move(stack_.back());
  stack_.pop_back();
  return value;
}

Value &Machine::top() {
  if (stack_.empty())
    fail("an instruction needs a value the stack does not have");
  return stack_.back();
}

std::size_t Machine::mark_position() {
  if (marks_.empty())
    fail("an instruction needs a MARK that is not there");
  const std::size_t position = marks_.back();
  marks_.pop_back();
  return position;
}

Items Machine::pop_to_mark() {
  const std::size_t position = mark_position();
  Items items(std::make_move_iterator(stack_.begin() + static_cast<std::ptrdiff_t>(position)),
              std::make_move_iterator(stack_.end()));
  stack_.resize(position);
  return items;
}

Value Machine::expect(Value value, Value::Kind kind, const char *what) const {
  if (value.kind != kind)
    fail(std::string(what) + " is " + kind_name(value.kind) + ", expected " + kind_name(kind));
  return value;
}

void Machine::memo_put(std::uint64_t index) { memo_[index] = top(); }

void Machine::memo_get(std::uint64_t index) {
  const auto it = memo_.find(index);
  if (it == memo_.end())
    fail("memo entry " + std::to_string(index) + " is read before it is written");
  stack_.push_back(it->second);
}

void Machine::global(std::string module, std::string name) {
  const std::string full = module + "." + name;
  if (!allowed_global(full))
    fail("the pickle names the global '" + full +
         "', which is not part of a state dict; metaguard, like torch.load(weights_only=True), "
         "does not run it");
  Value value;
  value.kind = Value::Kind::Global;
  value.text = full;
  stack_.push_back(std::move(value));
}

// ('storage', <storage class>, key, location, numel): torch.save's reference
// to the record holding a storage's bytes.
void Machine::persistent_id() {
  const Value id = expect(pop(), Value::Kind::Tuple, "a persistent id");
  const Items &parts = *id.items;
  // The legacy format adds view metadata, None unless a storage was a view
  // of another (PyTorch 0.x).
  const std::size_t size = legacy_ ? 6 : 5;
  if (legacy_ && parts.size() == 6 && parts[5].kind != Value::Kind::None)
    fail("storage '" + (parts[2].kind == Value::Kind::String ? parts[2].text : std::string("?")) +
         "' is a view of another storage, which only PyTorch 0.x wrote; re-save the file with a "
         "current PyTorch");
  if (parts.size() != size || parts[0].kind != Value::Kind::String || parts[0].text != "storage" ||
      parts[1].kind != Value::Kind::Global || parts[2].kind != Value::Kind::String ||
      parts[4].kind != Value::Kind::Int)
    fail(std::string("a persistent id is not ('storage', storage class, key, location, size") +
         (legacy_ ? ", view)" : ")"));
  const auto dtype = storage_dtype(parts[1].text);
  if (!dtype)
    fail("a persistent id names '" + parts[1].text + "', which is not a storage class");
  if (parts[4].integer < 0)
    fail("storage '" + parts[2].text + "' has a negative size");
  Value value;
  value.kind = Value::Kind::Storage;
  value.tensor = std::make_shared<PickledTensor>();
  value.tensor->storage = {parts[2].text, *dtype, parts[4].integer};
  stack_.push_back(std::move(value));
}

std::vector<std::int64_t> Machine::sizes_of(const Value &tuple, const char *what) const {
  if (tuple.kind != Value::Kind::Tuple)
    fail(std::string(what) + " is " + kind_name(tuple.kind) + ", not a tuple of ints");
  std::vector<std::int64_t> values;
  for (const auto &item : *tuple.items) {
    if (item.kind != Value::Kind::Int || item.integer < 0)
      fail(std::string(what) + " holds " + kind_name(item.kind) + ", not a size");
    values.push_back(item.integer);
  }
  return values;
}

// _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad,
// backward_hooks[, metadata]).
Value Machine::rebuild_tensor(const Items &args) {
  if (args.size() < 6 || args.size() > 7 || args[0].kind != Value::Kind::Storage ||
      args[1].kind != Value::Kind::Int || args[1].integer < 0 || args[4].kind != Value::Kind::Bool ||
      args[5].kind != Value::Kind::Dict)
    fail("_rebuild_tensor_v2 is called with arguments it does not take");
  if (!args[5].entries->empty())
    fail("a tensor carries backward hooks, which a state dict does not hold");
  auto tensor = std::make_shared<PickledTensor>(*args[0].tensor);
  tensor->offset = args[1].integer;
  tensor->sizes = sizes_of(args[2], "a tensor's size");
  tensor->strides = sizes_of(args[3], "a tensor's stride");
  if (tensor->sizes.size() != tensor->strides.size())
    fail("a tensor has " + std::to_string(tensor->sizes.size()) + " sizes but " +
         std::to_string(tensor->strides.size()) + " strides");
  Value value;
  value.kind = Value::Kind::Tensor;
  value.tensor = std::move(tensor);
  return value;
}

void Machine::reduce() {
  const Value args = expect(pop(), Value::Kind::Tuple, "REDUCE's arguments");
  const Value callable = expect(pop(), Value::Kind::Global, "REDUCE's callable");
  const Items &items = *args.items;
  Value result;
  if (callable.text == kOrderedDict) {
    if (!items.empty())
      fail("OrderedDict is called with arguments");
    result.kind = Value::Kind::Dict;
    result.entries = std::make_shared<Entries>();
  } else if (callable.text == kRebuildTensor) {
    result = rebuild_tensor(items);
  } else if (callable.text == kRebuildParameter) {
    if (items.size() != 3 || items[0].kind != Value::Kind::Tensor)
      fail("_rebuild_parameter is called with arguments it does not take");
    result = items[0];
  } else {
    fail("the pickle calls '" + callable.text + "', which builds no part of a state dict");
  }
  stack_.push_back(std::move(result));
}

void Machine::set_items(Items pairs) {
  Value &dict = top();
  if (dict.kind != Value::Kind::Dict)
    fail("SETITEMS targets " + std::string(kind_name(dict.kind)) + ", not a dict");
  if (pairs.size() % 2 != 0)
    fail("SETITEMS has a key without a value");
  // A key set twice keeps its first place and its last value, as in Python;
  // resolved once the state dict is read (a search here would be quadratic).
  for (std::size_t i = 0; i < pairs.size(); i += 2)
    dict.entries->emplace_back(std::move(pairs[i]), std::move(pairs[i + 1]));
}

Value make(Value::Kind kind) {
  Value value;
  value.kind = kind;
  if (kind == Value::Kind::Tuple || kind == Value::Kind::List)
    value.items = std::make_shared<Items>();
  if (kind == Value::Kind::Dict)
    value.entries = std::make_shared<Entries>();
  return value;
}

Value integer(std::int64_t n, Value::Kind kind = Value::Kind::Int) {
  Value value;
  value.kind = kind;
  value.integer = n;
  return value;
}

Value tuple_of(Items items) {
  Value value = make(Value::Kind::Tuple);
  *value.items = std::move(items);
  return value;
}

void Machine::step(unsigned char op) {
  switch (op) {
  case 0x80: // PROTO
    if (const auto version = little(1); version < 2 || version > 5)
      fail("pickle protocol " + std::to_string(version) + " is not one torch.save writes");
    return;
  case 0x95: // FRAME: a length hint only
    take(8);
    return;
  case '.': // STOP
    stopped_ = true;
    return;
  case '(': // MARK
    marks_.push_back(stack_.size());
    return;
  case '0': // POP
    pop();
    return;
  case 'N': stack_.push_back(make(Value::Kind::None)); return;
  case 0x88: stack_.push_back(integer(1, Value::Kind::Bool)); return;
  case 0x89: stack_.push_back(integer(0, Value::Kind::Bool)); return;
  case 'K': stack_.push_back(integer(static_cast<std::int64_t>(little(1)))); return;
  case 'M': stack_.push_back(integer(static_cast<std::int64_t>(little(2)))); return;
  case 'J': stack_.push_back(integer(static_cast<std::int32_t>(little(4)))); return;
  case 0x8a: { // LONG1: little-endian two's complement of n bytes
    const std::size_t n = static_cast<std::size_t>(little(1));
    if (n > 8) {
      Value big;
      big.kind = Value::Kind::BigInt;
      big.text.assign(take(n), n);
      stack_.push_back(std::move(big));
      return;
    }
    std::uint64_t bits = n == 0 ? 0 : little(n);
    if (n > 0 && n < 8 && (bits >> (8 * n - 1)) & 1)
      bits |= ~std::uint64_t{0} << (8 * n);
    stack_.push_back(integer(static_cast<std::int64_t>(bits)));
    return;
  }
  case 'G': { // BINFLOAT (big-endian double): kept as a float of no use here
    take(8);
    stack_.push_back(make(Value::Kind::Float));
    return;
  }
  case 'X': case 0x8c: case 0x8d: case 'B': case 'C': case 0x8e: { // strings and bytes
    const std::size_t width = op == 0x8c || op == 'C' ? 1 : op == 0x8d || op == 0x8e ? 8 : 4;
    const std::uint64_t n = little(width);
    if (n > in_.size() - at_)
      fail("a string runs past the end of the pickle");
    Value value;
    value.kind = op == 'B' || op == 'C' || op == 0x8e ? Value::Kind::Bytes : Value::Kind::String;
    value.text.assign(take(static_cast<std::size_t>(n)), static_cast<std::size_t>(n));
    stack_.push_back(std::move(value));
    return;
  }
  case ')': stack_.push_back(make(Value::Kind::Tuple)); return;
  case 0x85: { Value a = pop(); stack_.push_back(tuple_of({std::move(a)})); return; }
  case 0x86: { Value b = pop(), a = pop(); stack_.push_back(tuple_of({std::move(a), std::move(b)})); return; }
  case 0x87: {
    Value c = pop(), b = pop(), a = pop();
    stack_.push_back(tuple_of({std::move(a), std::move(b), std::move(c)}));
    return;
  }
  case 't': stack_.push_back(tuple_of(pop_to_mark())); return;
  case ']': stack_.push_back(make(Value::Kind::List)); return;
  case '}': stack_.push_back(make(Value::Kind::Dict)); return;
  case 'a': case 'e': { // APPEND, APPENDS
    Items items = op == 'e' ? pop_to_mark() : Items{pop()};
    Value &list = top();
    if (list.kind != Value::Kind::List)
      fail("APPEND targets " + std::string(kind_name(list.kind)) + ", not a list");
    for (auto &item : items)
      list.items->push_back(std::move(item));
    return;
  }
  case 's': { Value value = pop(), key = pop(); set_items({std::move(key), std::move(value)}); return; }
  case 'u': set_items(pop_to_mark()); return;
  case 'q': memo_put(little(1)); return;
  case 'r': memo_put(little(4)); return;
  case 0x94: memo_put(memo_.size()); return; // MEMOIZE
  case 'h': memo_get(little(1)); return;
  case 'j': memo_get(little(4)); return;
  case 'c': { std::string module = line(); global(std::move(module), line()); return; }
  case 0x93: { // STACK_GLOBAL
    Value name = expect(pop(), Value::Kind::String, "STACK_GLOBAL's name");
    Value module = expect(pop(), Value::Kind::String, "STACK_GLOBAL's module");
    global(module.text, name.text);
    return;
  }
  case 'Q': persistent_id(); return;
  case 'R': reduce(); return;
  case 'b': { // BUILD: an OrderedDict's attributes (the state dict's _metadata)
    pop();
    if (top().kind != Value::Kind::Dict)
      fail("BUILD sets the state of " + std::string(kind_name(top().kind)) +
           ", which a state dict does not hold");
    return;
  }
  default: {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", op);
    fail("opcode " + std::string(hex) + " is not one that torch.save writes for a state dict");
  }
  }
}

// A hostile pickle can nest a million tuples (one byte each) or make a list
// hold itself: destroying that recursively would overflow the stack, and a
// cycle would never be freed. Every container is emptied here, one at a
// time, so nothing is destroyed recursively and no cycle survives. Values
// returned by run() are only read before the machine goes away.
void Machine::release() {
  std::vector<Value> pending = std::move(stack_);
  for (auto &[index, value] : memo_)
    pending.push_back(std::move(value));
  memo_.clear();
  while (!pending.empty()) {
    Value value = std::move(pending.back());
    pending.pop_back();
    if (value.items) {
      for (auto &item : *value.items)
        pending.push_back(std::move(item));
      value.items->clear();
    }
    if (value.entries) {
      for (auto &[key, item] : *value.entries) {
        pending.push_back(std::move(key));
        pending.push_back(std::move(item));
      }
      value.entries->clear();
    }
  }
}

Value Machine::run() {
  while (!stopped_) {
    op_at_ = at_;
    step(static_cast<unsigned char>(*take(1)));
  }
  op_at_ = at_;
  if (stack_.size() != 1 || !marks_.empty())
    fail("the pickle stops with " + std::to_string(stack_.size()) + " values on its stack");
  return stack_.back();
}

// Every element a view reads lies inside its storage.
void check_view(const PickledTensor &tensor, const std::string &where) {
  std::int64_t last = tensor.offset;
  bool empty = false;
  for (std::size_t i = 0; i < tensor.sizes.size(); ++i) {
    empty = empty || tensor.sizes[i] == 0;
    if (tensor.sizes[i] > 0 && tensor.strides[i] > (INT64_MAX - last) / tensor.sizes[i])
      throw FormatError(FormatError::Kind::malformed, where + ": tensor '" + tensor.name + "': its sizes and strides overflow");
    if (tensor.sizes[i] > 0)
      last += (tensor.sizes[i] - 1) * tensor.strides[i];
  }
  if (!empty && last >= tensor.storage.numel)
    throw FormatError(FormatError::Kind::malformed, where + ": tensor '" + tensor.name + "' reads element " + std::to_string(last) +
                      " of storage '" + tensor.storage.key + "', which has " +
                      std::to_string(tensor.storage.numel));
}

std::vector<PickledTensor> state_dict_of(const Value &root, const std::string &where) {
  if (root.kind != Value::Kind::Dict)
    throw FormatError(FormatError::Kind::malformed, where + ": the pickle holds " + kind_name(root.kind) +
                      ", not a state dict (a mapping from names to tensors)");
  std::vector<PickledTensor> tensors;
  std::map<std::string, std::size_t> position;
  for (const auto &[key, value] : *root.entries) {
    if (key.kind != Value::Kind::String)
      throw FormatError(FormatError::Kind::malformed, where + ": the state dict has a key that is " + kind_name(key.kind) +
                        ", not a name");
    if (value.kind != Value::Kind::Tensor)
      throw FormatError(FormatError::Kind::malformed, where + ": '" + key.text + "' holds " + kind_name(value.kind) +
                        ", not a tensor: the file is not a state dict (a training checkpoint? "
                        "save model.state_dict() instead)");
    PickledTensor tensor = *value.tensor;
    tensor.name = key.text;
    check_view(tensor, where);
    const auto [it, inserted] = position.emplace(key.text, tensors.size());
    if (inserted)
      tensors.push_back(std::move(tensor));
    else
      tensors[it->second] = std::move(tensor);
  }
  return tensors;
}

constexpr std::string_view kLegacyMagic("\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19", 12);

bool truthy(const Value &dict, const std::string &key) {
  if (dict.kind != Value::Kind::Dict)
    return false;
  for (const auto &[name, value] : *dict.entries)
    if (name.kind == Value::Kind::String && name.text == key)
      return value.kind == Value::Kind::Bool && value.integer == 1;
  return false;
}

} // namespace

std::vector<PickledTensor> read_state_dict_pickle(std::string_view pickle, const std::string &where) {
  return state_dict_of(Machine(pickle, 0, where, false).run(), where);
}

bool is_legacy_torch_file(std::string_view file) {
  // PROTO 2, then the magic number as a LONG1.
  return file.size() >= 2 + kLegacyMagic.size() && file.substr(2, kLegacyMagic.size()) == kLegacyMagic;
}

LegacyStateDict read_legacy_state_dict(std::string_view file, const std::string &where) {
  if (!is_legacy_torch_file(file))
    throw FormatError(FormatError::Kind::malformed, where + ": not a torch.save file (no magic number)");
  Machine magic(file, 0, where, true);
  magic.run();
  Machine protocol(file, magic.end(), where, true);
  const Value version = protocol.run();
  if (version.kind != Value::Kind::Int || version.integer != 1001)
    throw FormatError(FormatError::Kind::unsupported, where + ": torch.save protocol version is not 1001");
  Machine system(file, protocol.end(), where, true);
  if (!truthy(system.run(), "little_endian"))
    throw FormatError(FormatError::Kind::unsupported, where + ": written on a big-endian machine; metaguard reads little-endian "
                              "data only");
  Machine state(file, system.end(), where, true);
  LegacyStateDict result;
  result.tensors = state_dict_of(state.run(), where);
  Machine keys(file, state.end(), where, true);
  const Value order = keys.run();
  if (order.kind != Value::Kind::List)
    throw FormatError(FormatError::Kind::malformed, where + ": the list of storage keys is " + kind_name(order.kind));
  for (const auto &key : *order.items) {
    if (key.kind != Value::Kind::String)
      throw FormatError(FormatError::Kind::malformed, where + ": a storage key is " + std::string(kind_name(key.kind)));
    result.storage_order.push_back(key.text);
  }
  result.storages_at = keys.end();
  return result;
}

} // namespace metaguard::detail
