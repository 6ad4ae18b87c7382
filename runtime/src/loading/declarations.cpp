#include "loading/declarations.h"
#include "devices/module_walk.h"

#include <metaguard/errors.h>

#include <algorithm>

namespace metaguard::detail {
namespace {

std::vector<std::regex> compile(const std::vector<std::string> &patterns,
                                const char *list) {
  std::vector<std::regex> compiled;
  for (const auto &pattern : patterns) {
    try {
      compiled.emplace_back(pattern);
    } catch (const std::regex_error &error) {
      throw Error(std::string("the model's ") + list + " holds '" + pattern +
                  "', which is not a valid regular expression (" +
                  error.what() + ")");
    }
  }
  return compiled;
}

} // namespace

Declarations declarations_of(const torch::nn::Module &root) {
  Declarations declared;
  for_each_module(root, [&](const std::string &path,
                            const torch::nn::Module &module) {
    const auto *declaring = dynamic_cast<const Module *>(&module);
    if (!declaring)
      return;
    for (const auto &buffer : declaring->non_persistent_buffers())
      declared.non_persistent.insert(join_name(path, buffer));
    for (const auto &[target, source] : declaring->tied_weights_keys())
      declared.tied.emplace(join_name(path, target), join_name(path, source));
  });
  if (const auto *model = dynamic_cast<const Module *>(&root)) {
    declared.base_model_prefix = model->base_model_prefix();
    declared.ignore_missing = compile(model->keys_to_ignore_on_load_missing(),
                                      "keys_to_ignore_on_load_missing");
    declared.ignore_unexpected =
        compile(model->keys_to_ignore_on_load_unexpected(),
                "keys_to_ignore_on_load_unexpected");
  }
  return declared;
}

bool shares_memory(const torch::Tensor &a, const torch::Tensor &b) {
  if (a.unsafeGetTensorImpl() == b.unsafeGetTensorImpl())
    return true;
  return a.defined() && b.defined() && !a.is_meta() && !b.is_meta() &&
         a.data_ptr() == b.data_ptr() && a.sizes() == b.sizes() &&
         a.dtype() == b.dtype();
}

TieGroups tied_groups(const torch::nn::Module &root) {
  // Union-find over names: one tensor object, or a declared tie, joins two.
  std::map<std::string, std::string> parent;
  auto find = [&](std::string name) {
    while (parent.at(name) != name)
      name = parent.at(name) = parent.at(parent.at(name));
    return name;
  };
  auto join = [&](const std::string &a, const std::string &b) {
    const std::string ra = find(a), rb = find(b);
    if (ra != rb)
      parent[std::max(ra, rb)] = std::min(ra, rb);
  };
  std::map<const c10::TensorImpl *, std::string> first_name;
  for (const auto &item : root.named_parameters(/*recurse=*/true)) {
    parent.emplace(item.key(), item.key());
    if (!item.value().defined())
      continue;
    const auto [it, fresh] = first_name.emplace(item.value().unsafeGetTensorImpl(), item.key());
    if (!fresh)
      join(it->second, item.key());
  }
  for (const auto &[target, source] : declarations_of(root).tied)
    if (parent.count(target) && parent.count(source))
      join(target, source);
  std::map<std::string, std::vector<std::string>> groups;
  for (const auto &[name, ignored] : parent)
    groups[find(name)].push_back(name);
  TieGroups tied;
  for (auto &[root_name, names] : groups)
    if (names.size() > 1)
      tied.push_back(std::move(names)); // sorted: the map's order
  return tied;
}

} // namespace metaguard::detail
