#include "loading/remembered_config.h"

#include <metaguard/loading.h>

#include <c10/core/UndefinedTensorImpl.h>

#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace metaguard::detail {
namespace {

using WeakImpl = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;

// LibTorch modules cannot carry a config, and a module held by value moves
// when returned, so it is keyed by its first tensor, whose TensorImpl stays
// put. Weak references: a dead model's entry is never matched (its
// TensorImpl's memory is not reused while the weak reference lives) and is
// dropped at the next insertion.
struct Record {
  std::vector<std::string> names;
  std::vector<WeakImpl> tensors;
  Config config;
};

struct ConfigRegistry {
  std::mutex mutex;
  std::unordered_map<const c10::TensorImpl *, Record> records;
};

ConfigRegistry &config_registry() {
  static auto *r = new ConfigRegistry; // never destroyed: modules may outlive static destruction
  return *r;
}

std::vector<std::pair<std::string, torch::Tensor>> tensors_of(const torch::nn::Module &module) {
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto &item : module.named_parameters(/*recurse=*/true))
    if (item.value().defined())
      tensors.emplace_back(item.key(), item.value());
  for (const auto &item : module.named_buffers(/*recurse=*/true))
    if (item.value().defined())
      tensors.emplace_back(item.key(), item.value());
  return tensors;
}

bool matches(const Record &record, const std::vector<std::pair<std::string, torch::Tensor>> &tensors) {
  if (record.names.size() != tensors.size())
    return false;
  for (std::size_t i = 0; i < tensors.size(); ++i)
    if (record.names[i] != tensors[i].first ||
        record.tensors[i].lock().get() != tensors[i].second.unsafeGetTensorImpl())
      return false;
  return true;
}

void prune(ConfigRegistry &r) {
  for (auto it = r.records.begin(); it != r.records.end();)
    it = it->second.tensors.front().expired() ? r.records.erase(it) : std::next(it);
}

} // namespace

void remember_config(torch::nn::Module &module, const Config &config) {
  if (auto *model = dynamic_cast<PreTrainedModel *>(&module)) {
    model->set_config(config);
    return;
  }
  const auto tensors = tensors_of(module);
  if (tensors.empty())
    return; // nothing to save, nothing to recognise it by
  Record record{{}, {}, config};
  for (const auto &[name, tensor] : tensors) {
    record.names.push_back(name);
    record.tensors.emplace_back(tensor.getIntrusivePtr());
  }
  ConfigRegistry &r = config_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  prune(r);
  r.records.insert_or_assign(tensors.front().second.unsafeGetTensorImpl(), std::move(record));
}

Config remembered_config(const torch::nn::Module &module) {
  if (const auto *model = dynamic_cast<const PreTrainedModel *>(&module))
    return model->config();
  const auto tensors = tensors_of(module);
  if (tensors.empty())
    return nullptr;
  ConfigRegistry &r = config_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const auto it = r.records.find(tensors.front().second.unsafeGetTensorImpl());
  if (it == r.records.end() || !matches(it->second, tensors))
    return nullptr;
  return it->second.config;
}

} // namespace metaguard::detail
