// The models built while the meta device was ambient (with the empty-model
// checks on) that are still alive, so that the checks can name a tensor that
// was marked before its model knew its name (Model(config) built directly).
#include <metaguard/debug_checks.h>
#include <metaguard/device.h>
#include <metaguard/module.h>

#include "devices/empty_model.h"

#include <mutex>
#include <unordered_set>

namespace metaguard::detail {
namespace {

struct BuiltEmptyModels {
  std::mutex mutex;
  std::unordered_set<const torch::nn::Module *> modules;
};

BuiltEmptyModels &models() {
  static auto *registry = new BuiltEmptyModels; // never destroyed: modules may outlive static destruction
  return *registry;
}

} // namespace

BuiltEmptyRecord::BuiltEmptyRecord(const torch::nn::Module *module) {
  if (!empty_model_checks() || !meta_device_active())
    return;
  std::lock_guard<std::mutex> lock(models().mutex);
  models().modules.insert(module);
  module_ = module;
}

BuiltEmptyRecord::~BuiltEmptyRecord() {
  if (module_ == nullptr)
    return;
  std::lock_guard<std::mutex> lock(models().mutex);
  models().modules.erase(module_);
}

std::optional<BuiltEmptyName> built_empty_name(const c10::StorageImpl *storage) {
  std::optional<BuiltEmptyName> found;
  auto consider = [&](const torch::nn::Module &model, const std::string &name, const torch::Tensor &tensor) {
    // The longest name is the one in the outermost model.
    if (tensor.defined() && tensor.unsafeGetTensorImpl()->has_storage() &&
        tensor.unsafeGetTensorImpl()->storage().unsafeGetStorageImpl() == storage &&
        (!found || name.size() > found->name.size()))
      found = BuiltEmptyName{name, model.name()};
  };
  std::lock_guard<std::mutex> lock(models().mutex);
  for (const torch::nn::Module *model : models().modules) {
    for (const auto &item : model->named_parameters(/*recurse=*/true))
      consider(*model, item.key(), item.value());
    for (const auto &item : model->named_buffers(/*recurse=*/true))
      consider(*model, item.key(), item.value());
  }
  return found;
}

} // namespace metaguard::detail
