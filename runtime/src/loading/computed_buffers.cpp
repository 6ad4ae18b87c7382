// The recipes from_config leaves for the buffers of models it builds with
// buffers on meta, looked up by the buffers' TensorImpls: loading, to_empty
// and dispatching change a tensor's data in place, so the TensorImpl is the
// buffer for as long as the model lives.
#include "loading/computed_buffers.h"

#include <memory>
#include <mutex>
#include <unordered_map>

namespace metaguard::detail {
namespace {

using WeakTensor = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;

struct Entry {
  WeakTensor tensor;                   // expired once the model is gone
  std::string name;                    // its name in the model the recipe builds
  std::shared_ptr<BufferRecipe> recipe; // shared by the model's buffers
};

struct BufferRegistry {
  std::mutex mutex;
  std::unordered_map<const c10::TensorImpl *, Entry> entries;

  void forget_dead() {
    for (auto it = entries.begin(); it != entries.end();)
      it = it->second.tensor.expired() ? entries.erase(it) : std::next(it);
  }
};

BufferRegistry &buffer_registry() {
  static auto *instance = new BufferRegistry; // never destroyed: models may outlive static destruction
  return *instance;
}

// The live entry of `tensor`, if any (an address can be reused by a new
// tensor once the old one is gone).
const Entry *entry_of(const BufferRegistry &r, const torch::Tensor &tensor) {
  const auto it = r.entries.find(tensor.unsafeGetTensorImpl());
  if (it == r.entries.end() || it->second.tensor.expired())
    return nullptr;
  return &it->second;
}

} // namespace

void remember_buffer_recipe(const torch::nn::Module &module, BufferRecipe recipe) {
  auto shared = std::make_shared<BufferRecipe>(std::move(recipe));
  BufferRegistry &r = buffer_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.forget_dead();
  for (const auto &item : module.named_buffers(/*recurse=*/true))
    if (item.value().defined() && item.value().is_meta())
      r.entries.insert_or_assign(item.value().unsafeGetTensorImpl(),
                                 Entry{WeakTensor(item.value().getIntrusivePtr()), item.key(), shared});
}

std::map<std::string, torch::Tensor>
constructed_values(const std::vector<std::pair<std::string, torch::Tensor>> &wanted) {
  // Each recipe runs once, whatever number of its buffers are wanted.
  std::map<std::shared_ptr<BufferRecipe>, std::vector<std::pair<std::string, Entry>>> by_recipe;
  {
    BufferRegistry &r = buffer_registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    for (const auto &[name, tensor] : wanted)
      if (const Entry *entry = entry_of(r, tensor))
        by_recipe[entry->recipe].emplace_back(name, *entry);
  }
  std::map<std::string, torch::Tensor> values;
  for (const auto &[recipe, buffers] : by_recipe) {
    std::map<std::string, torch::Tensor> built;
    for (auto &[name, value] : (*recipe)())
      built.emplace(name, value);
    for (const auto &[name, entry] : buffers) {
      const auto found = built.find(entry.name);
      const auto tensor = entry.tensor.lock();
      if (found != built.end() && tensor && found->second.sizes() == tensor->sizes())
        values.emplace(name, found->second);
    }
  }
  return values;
}

} // namespace metaguard::detail
