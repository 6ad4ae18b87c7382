// Offloading hooks: finding an offloaded parameter's data, materialising it
// for a forward pass, and verifying that nothing moved, replaced or stripped
// what dispatch_model set up.
#include <metaguard/offload_hook.h>
#include <metaguard/policy.h>

#include "devices/module_walk.h"
#include "offload/offload_dispatch.h"
#include "offload/offload_registry.h"

#include <algorithm>
#include <atomic>
#include <set>
#include <sstream>
#include <unordered_set>

namespace metaguard {
namespace {

using detail::find_hook;
using detail::OffloadHook;
using detail::OffloadedParam;

} // namespace
namespace detail {
const char *const kOffloadAdvice =
    "Offloaded parameters must stay meta tensors behind their hooks. To change where parameters live, call "
    "dispatch_model with a new device map (or reload with from_pretrained and LoadOptions.device_map); for a "
    "copy of a parameter's values use load_offloaded_parameter; do not remove hooks, and do not assign, "
    "set_data or copy_ into offloaded parameters.";
} // namespace detail
namespace {

using detail::kOffloadAdvice;

// The modules along `name` from the root: ("", model), ("a", a), ("a.b", a.b)...
std::vector<std::pair<std::string, const torch::nn::Module *>> module_chain(const torch::nn::Module &model,
                                                                            const std::string &name) {
  std::vector<std::pair<std::string, const torch::nn::Module *>> chain{{"", &model}};
  std::size_t start = 0;
  for (std::size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', start)) {
    const std::string part = name.substr(start, dot - start);
    const auto children = chain.back().second->named_children();
    const auto *child = children.find(part);
    if (!child)
      break;
    chain.emplace_back(name.substr(0, dot), child->get());
    start = dot + 1;
  }
  return chain;
}

std::string relative_to(const std::string &prefix, const std::string &name) {
  return prefix.empty() ? name : name.substr(prefix.size() + 1);
}

// Loads `name` through the deepest hooked ancestor; nullopt when none has a
// hook. Throws when the hooked ancestor does not know the parameter.
std::optional<torch::Tensor> load_through_hooks(const torch::nn::Module &model, const std::string &name) {
  const auto chain = module_chain(model, name);
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const auto hook = find_hook(*it->second);
    if (!hook)
      continue;
    const std::string local = relative_to(it->first, name);
    for (const auto &record : hook->params)
      if (record.local_name == local)
        return detail::load_record(*hook, record);
    throw OffloadError("parameter '" + name + "' is not offloaded by the hook of module '" + it->first +
                       "', the deepest module on its path with an offloading hook; check the name (offloaded "
                       "parameters there: " +
                       std::to_string(hook->params.size()) + ")");
  }
  return std::nullopt;
}

// The parameter called `name`, or an undefined tensor.
torch::Tensor find_parameter(const torch::nn::Module &model, const std::string &name) {
  const auto chain = module_chain(model, name);
  return detail::direct_parameter(*chain.back().second, relative_to(chain.back().first, name));
}

[[noreturn]] void throw_no_hook(const torch::nn::Module &model, const std::string &name) {
  const torch::Tensor param = find_parameter(model, name);
  if (!param.defined())
    throw OffloadError("the model has no parameter named '" + name + "'");
  std::string why = "no module on its path has an offloading hook";
  if (detail::orphan_name(param))
    why = "it was offloaded, but its hook was removed (remove_hook_from_module), so its data cannot be found";
  else if (param.is_meta())
    why = "it is on the meta device and no module on its path has an offloading hook, so it has no data "
          "(was the model built under a meta scope and never loaded?)";
  throw OffloadError("cannot load offloaded parameter '" + name + "': " + why + ". " + kOffloadAdvice);
}

// set_data with a tensor of another shape or dtype keeps the TensorImpl but
// no longer matches the data the hook loads.
std::optional<std::string> shape_change(const torch::Tensor &current, const OffloadedParam &record) {
  if (current.sizes() == c10::IntArrayRef(record.sizes) && current.scalar_type() == record.dtype)
    return std::nullopt;
  std::ostringstream msg;
  msg << "was changed to " << current.scalar_type() << " " << current.sizes() << " (e.g. by set_data) while "
      << "offloaded as " << record.dtype << " " << c10::IntArrayRef(record.sizes);
  return msg.str();
}

// Everything wrong with the offloaded parameters under `model`, one line each.
std::vector<std::string> dispatch_problems(const torch::nn::Module &model) {
  std::vector<std::string> problems;
  std::unordered_set<const c10::TensorImpl *> hooked;
  std::set<std::string> reported;
  detail::for_each_module(model, [&](const std::string &prefix, const torch::nn::Module &module) {
    const auto hook = find_hook(module);
    if (!hook)
      return;
    std::lock_guard<std::mutex> lock(hook->mutex);
    for (const auto &record : hook->params) {
      const std::string full = detail::join_name(prefix, record.local_name);
      const torch::Tensor current = detail::direct_parameter(module, record.local_name);
      if (!current.defined()) {
        problems.push_back(full + ": was removed from its module while offloaded");
      } else if (current.unsafeGetTensorImpl() != record.address || record.impl.expired()) {
        problems.push_back(full + ": was replaced by another tensor while offloaded (its hook still holds the "
                                  "original, so the new values would be ignored or lost)");
      } else {
        hooked.insert(record.address);
        if (hook->active == 0 && !current.is_meta())
          problems.push_back(full + ": was moved off the meta device (to " + current.device().str() +
                             ", e.g. by set_data or torch::nn::Module::to) while offloaded");
        else if (const auto change = shape_change(current, record))
          problems.push_back(full + ": " + *change);
        else
          continue;
      }
      reported.insert(full);
    }
  });
  for (const auto &item : model.named_parameters(true)) {
    if (hooked.count(item.value().unsafeGetTensorImpl()) || reported.count(item.key()))
      continue;
    if (detail::orphan_name(item.value()))
      problems.push_back(item.key() + ": its offloading hook was removed (remove_hook_from_module)");
    else if (item.value().is_meta())
      problems.push_back(item.key() + ": is on the meta device and no offloading hook covers it");
  }
  return problems;
}

std::vector<std::string> orphan_problems(const torch::nn::Module &model) {
  std::vector<std::string> problems;
  for (const auto &item : model.named_parameters(true))
    if (detail::orphan_name(item.value()))
      problems.push_back(item.key() + ": its offloading hook was removed (remove_hook_from_module)");
  return problems;
}

OffloadError problems_error(const std::string &context, const std::vector<std::string> &problems) {
  std::ostringstream msg;
  msg << context << ": " << problems.size() << " offloaded parameter(s) can no longer reach their data:\n";
  for (const auto &p : problems)
    msg << "  - " << p << "\n";
  msg << kOffloadAdvice;
  return OffloadError(msg.str());
}

// Cheap per-hook check done on every materialisation: the recorded
// parameters are still the module's, and still meta.
void check_hook(const torch::nn::Module &module, const OffloadHook &hook) {
  std::vector<std::string> problems;
  for (const auto &record : hook.params) {
    const torch::Tensor current = detail::direct_parameter(module, record.local_name);
    const std::string full = detail::join_name(hook.module_name, record.local_name);
    if (!current.defined() || current.unsafeGetTensorImpl() != record.address)
      problems.push_back(full + ": was replaced by another tensor while offloaded");
    else if (!current.is_meta())
      problems.push_back(full + ": was moved off the meta device (to " + current.device().str() +
                         ", e.g. by set_data) while offloaded");
    else if (const auto change = shape_change(current, record))
      problems.push_back(full + ": " + *change);
  }
  if (!problems.empty())
    detail::enforce(problems_error("materialising offloaded parameters of '" + hook.module_name + "'", problems));
}

const void *storage_of(const c10::TensorImpl &impl) { return impl.storage().unsafeGetStorageImpl(); }

// Returns the first `count` parameters of `hook` to meta, except any that
// user code replaced while they were materialised.
void to_meta(OffloadHook &hook, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    auto &record = hook.params[i];
    auto impl = record.impl.lock();
    if (impl && storage_of(*impl) == record.materialised)
      detail::tag_offloaded(torch::Tensor(std::move(impl)), hook.shared_from_this(), i);
    record.materialised = nullptr;
  }
}

void materialise(OffloadHook &hook) {
  std::size_t done = 0;
  try {
    for (; done < hook.params.size(); ++done) {
      auto &record = hook.params[done];
      auto impl = record.impl.lock();
      if (!impl)
        continue;
      const torch::Tensor value = detail::load_for_use(hook, record).to(hook.execution_device);
      torch::Tensor param(std::move(impl));
      detail::swap_storage(param, value);
      record.materialised = storage_of(*param.unsafeGetTensorImpl());
    }
  } catch (...) {
    to_meta(hook, done); // all or nothing
    throw;
  }
}

void acquire(const torch::nn::Module &module, OffloadHook &hook) {
  std::lock_guard<std::mutex> lock(hook.mutex);
  if (hook.active == 0) {
    check_hook(module, hook);
    materialise(hook);
  }
  ++hook.active;
}

void release(OffloadHook &hook) noexcept {
  std::lock_guard<std::mutex> lock(hook.mutex);
  if (--hook.active != 0)
    return;
  // Each loaded value drops its pages as it is freed here (load_for_use),
  // or later if user code keeps a view.
  to_meta(hook, hook.params.size());
}

} // namespace

torch::Tensor load_offloaded_parameter(const torch::nn::Module &model, const std::string &name) {
  if (auto value = load_through_hooks(model, name))
    return *value;
  throw_no_hook(model, name);
}

torch::Tensor parameter_value(const torch::nn::Module &model, const std::string &name) {
  if (auto value = load_through_hooks(model, name))
    return *value;
  const torch::Tensor param = find_parameter(model, name);
  if (!param.defined() || param.is_meta() || detail::orphan_name(param))
    throw_no_hook(model, name);
  return param;
}

std::vector<std::string> offloaded_parameter_names(const torch::nn::Module &model) {
  std::vector<std::string> names;
  if (detail::registry_empty())
    return names;
  detail::for_each_module(model, [&](const std::string &prefix, const torch::nn::Module &module) {
    if (const auto hook = find_hook(module))
      for (const auto &record : hook->params)
        if (!record.impl.expired())
          names.push_back(detail::join_name(prefix, record.local_name));
  });
  for (const auto &item : model.named_parameters(true))
    if (detail::orphan_name(item.value()))
      names.push_back(item.key());
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

bool has_offloaded_parameters(const torch::nn::Module &model) {
  return !offloaded_parameter_names(model).empty();
}

void remove_hook_from_module(torch::nn::Module &module, bool recurse) {
  if (!recurse) {
    detail::drop_hook(module, /*orphan=*/true);
    return;
  }
  detail::for_each_module(module, [](const std::string &, const torch::nn::Module &m) { detail::drop_hook(m, true); });
}

void verify_dispatch(const torch::nn::Module &model) {
  if (policy() == Policy::Off)
    return;
  const auto problems = dispatch_problems(model);
  if (!problems.empty())
    detail::enforce(problems_error("verify_dispatch", problems));
}

OnloadGuard::OnloadGuard(torch::nn::Module &module) {
  if (detail::registry_empty())
    return;
  if (policy() != Policy::Off) {
    // Debug builds check the whole subtree each time it is materialised;
    // all builds report parameters whose hook was removed (rare, so the scan
    // only runs when such a parameter exists), rather than letting a meta
    // tensor fail deep inside an operator.
    std::vector<std::string> problems;
    if (verify_on_materialise())
      problems = dispatch_problems(module);
    else if (detail::has_orphans())
      problems = orphan_problems(module);
    if (!problems.empty())
      detail::enforce(problems_error("OnloadGuard on " + module.name(), problems));
  }
  std::vector<std::pair<const torch::nn::Module *, std::shared_ptr<OffloadHook>>> found;
  detail::for_each_module(module, [&](const std::string &, const torch::nn::Module &m) {
    if (auto hook = find_hook(m))
      found.emplace_back(&m, std::move(hook));
  });
  try {
    for (auto &[m, hook] : found) {
      acquire(*m, *hook);
      hooks_.push_back(hook);
    }
  } catch (...) {
    for (auto &hook : hooks_)
      release(*hook);
    throw;
  }
  if (!hooks_.empty())
    device_ = hooks_.front()->execution_device;
}

OnloadGuard::~OnloadGuard() {
  for (auto it = hooks_.rbegin(); it != hooks_.rend(); ++it)
    release(**it);
}

namespace detail {
namespace {
// Calls f(hook, index, impl) for each offloaded parameter of `model` that is
// a meta tensor now (not materialised by a guard), under its hook's lock.
template <class F> void for_each_meta_offloaded(const torch::nn::Module &model, F &&f) {
  for_each_module(model, [&](const std::string &, const torch::nn::Module &module) {
    const auto hook = find_hook(module);
    if (!hook)
      return;
    std::lock_guard<std::mutex> lock(hook->mutex);
    for (std::size_t i = 0; i < hook->params.size(); ++i)
      if (auto impl = hook->params[i].impl.lock(); impl && impl->device_type() == c10::kMeta)
        f(hook, i, torch::Tensor(std::move(impl)));
  });
}
} // namespace

void untag_offloaded_parameters(const torch::nn::Module &model) {
  for_each_meta_offloaded(model, [](const auto &, std::size_t, const torch::Tensor &param) { untag_offloaded(param); });
}

void adopt_offloaded_dtypes(const torch::nn::Module &model) {
  // torch::nn::Module::to(dtype) replaced each offloaded parameter's meta value
  // (set_data), which dropped the mark that makes it load itself.
  for_each_meta_offloaded(model, [](const std::shared_ptr<OffloadHook> &hook, std::size_t i,
                                    const torch::Tensor &param) {
    hook->params[i].dtype = param.scalar_type();
    tag_offloaded(param, hook, i);
  });
}
} // namespace detail

} // namespace metaguard
