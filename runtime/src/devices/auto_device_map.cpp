// infer_auto_device_map and the strategies, following accelerate's
// algorithm (utils/modeling.py) so that a model gets the same map in C++ as
// in Python for the same budgets, tied parameters included (counted once,
// placed together).
#include <metaguard/auto_device_map.h>
#include <metaguard/errors.h>

#include "loading/declarations.h"
#include "devices/module_walk.h"
#include "loading/tied_placements.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>

namespace metaguard {
namespace {

// A budget per device, in accelerate's fill order: GPUs by index, then mps,
// cpu, and disk last (disk has no budget).
struct Budget {
  std::string device;
  std::int64_t bytes;
};

bool all_digits(const std::string &s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// accelerate names GPUs by index; accept 0, "cuda" and "cuda:0" alike.
std::string normalise_device(const std::string &key) {
  if (all_digits(key))
    return "cuda:" + key;
  if (key == "cuda")
    return "cuda:0";
  if (key == "cpu" || key == "disk" || key == "mps")
    return key;
  if (key.rfind("cuda:", 0) == 0 && all_digits(key.substr(5)))
    return key;
  throw Error("MaxMemory device '" + key +
              "' is not recognised; use a GPU index or \"cuda:N\", \"mps\", \"cpu\" or \"disk\"");
}

int gpu_index(const std::string &device) { return std::stoi(device.substr(5)); }
bool is_gpu(const std::string &device) { return device.rfind("cuda:", 0) == 0; }

std::int64_t available_cpu_memory() {
  const long pages = sysconf(_SC_AVPHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<std::int64_t>(pages) * page : 0;
}

std::vector<Budget> ordered_budgets(const MaxMemory &max_memory) {
  std::vector<Budget> gpus, rest;
  if (max_memory.empty()) {
    // Without a budget, only the CPU's free memory is known here; pass a
    // MaxMemory to place layers on GPUs.
    return {{"cpu", available_cpu_memory()}};
  }
  std::map<std::string, std::int64_t> normalised;
  for (const auto &[key, bytes] : max_memory.budgets())
    normalised[normalise_device(key)] = bytes;
  for (const auto &[device, bytes] : normalised)
    if (is_gpu(device))
      gpus.push_back({device, bytes});
  std::sort(gpus.begin(), gpus.end(),
            [](const Budget &a, const Budget &b) { return gpu_index(a.device) < gpu_index(b.device); });
  for (const char *device : {"mps", "cpu", "disk"})
    if (auto it = normalised.find(device); it != normalised.end())
      rest.push_back({it->first, it->second});
  gpus.insert(gpus.end(), rest.begin(), rest.end());
  return gpus;
}

// Bytes of every module and tensor name, each counted in all its prefixes
// ("" is the whole model). A tensor held under several names (a tie) counts
// once, under the first, as PyTorch's named_parameters lists it.
std::map<std::string, std::int64_t> compute_module_sizes(const torch::nn::Module &model,
                                                         const detail::TieGroups &groups) {
  std::map<std::string, std::size_t> group_of;
  for (std::size_t i = 0; i < groups.size(); ++i)
    for (const auto &name : groups[i])
      group_of.emplace(name, i);
  std::set<std::size_t> counted;
  std::set<const c10::TensorImpl *> seen;
  std::map<std::string, std::int64_t> sizes;
  auto add = [&](const std::string &name, const torch::Tensor &t) {
    const auto group = group_of.find(name);
    if (!seen.insert(t.unsafeGetTensorImpl()).second ||
        (group != group_of.end() && !counted.insert(group->second).second))
      return;
    const std::int64_t bytes = t.numel() * static_cast<std::int64_t>(t.element_size());
    sizes[""] += bytes;
    for (std::size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1))
      sizes[name.substr(0, dot)] += bytes;
    sizes[name] += bytes;
  };
  for (const auto &p : model.named_parameters(true))
    add(p.key(), p.value());
  for (const auto &b : model.named_buffers(true))
    add(b.key(), b.value());
  return sizes;
}

// Bytes under `name`; 0 for a module that holds no tensor (Dropout, an
// activation), which compute_module_sizes never lists.
std::int64_t size_of(const std::map<std::string, std::int64_t> &sizes, const std::string &name) {
  const auto it = sizes.find(name);
  return it == sizes.end() ? 0 : it->second;
}

// torch::nn::Module::name() is the demangled type, e.g. "ns::BlockImpl" or
// "torch::nn::LinearImpl"; users write "Block", "BlockImpl" or the full name.
bool type_matches(const torch::nn::Module &module, const std::vector<std::string> &names) {
  const std::string &full = module.name();
  const auto colon = full.rfind("::");
  const std::string bare = colon == std::string::npos ? full : full.substr(colon + 2);
  auto strip_impl = [](const std::string &s) {
    return s.size() > 4 && s.compare(s.size() - 4, 4, "Impl") == 0 ? s.substr(0, s.size() - 4) : s;
  };
  for (const auto &n : names)
    if (n == full || n == bare || n == strip_impl(full) || n == strip_impl(bare))
      return true;
  return false;
}

// One unit the algorithm places: a module, or a tensor (module == nullptr).
struct Item {
  std::string name;
  const torch::nn::Module *module;
};

std::vector<Item> children_of(const Item &item) {
  std::vector<Item> out;
  for (const auto &c : item.module->named_children())
    out.push_back({detail::join_name(item.name, c.key()), c.value().get()});
  return out;
}

bool splittable(const Item &item, const std::vector<std::string> &no_split) {
  return item.module && !item.module->named_children().is_empty() && !type_matches(*item.module, no_split);
}

// The largest unsplittable layer among `items`, and the names reaching it.
std::pair<std::int64_t, std::vector<std::string>>
max_layer_size(std::vector<Item> items, const std::map<std::string, std::int64_t> &sizes,
               const std::vector<std::string> &no_split) {
  std::int64_t best = 0;
  std::vector<std::string> names;
  while (!items.empty()) {
    const Item item = items.front();
    items.erase(items.begin());
    if (splittable(item, no_split)) {
      auto kids = children_of(item);
      items.insert(items.begin(), kids.begin(), kids.end());
      continue;
    }
    const std::int64_t size = size_of(sizes, item.name);
    if (size > best) {
      best = size;
      names = {item.name};
    } else if (size == best) {
      names.push_back(item.name);
    }
  }
  return {best, names};
}

std::vector<Item> modules_only(const std::vector<Item> &items) {
  std::vector<Item> out;
  for (const auto &i : items)
    if (i.module)
      out.push_back(i);
  return out;
}

bool starts_with(const std::string &s, const std::string &prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

// Groups entries whose submodules all share a placement under their parent.
void clean_device_map(std::vector<std::pair<std::string, std::string>> &map, const std::string &module) {
  const std::string prefix = module.empty() ? "" : module + ".";
  std::set<std::string> values;
  std::size_t count = 0;
  for (const auto &[k, v] : map)
    if (starts_with(k, prefix)) {
      values.insert(v);
      ++count;
    }
  if (values.size() == 1 && count > 1) {
    const std::string value = *values.begin();
    map.erase(std::remove_if(map.begin(), map.end(), [&](const auto &e) { return starts_with(e.first, prefix); }),
              map.end());
    map.emplace_back(module, value);
  }
  const std::size_t depth = module.empty() ? 1 : std::count(module.begin(), module.end(), '.') + 2;
  std::set<std::string> children;
  for (const auto &[k, v] : map) {
    if (!starts_with(k, prefix) || k.size() <= module.size())
      continue;
    // The child's name: the first `depth` dotted components of k.
    std::size_t dots = 0, end = 0;
    for (; end < k.size(); ++end)
      if (k[end] == '.' && ++dots == depth)
        break;
    children.insert(k.substr(0, end));
  }
  for (const auto &child : children)
    clean_device_map(map, child);
}

// accelerate's get_balanced_memory: caps every GPU but the last at an even
// share of the model plus a margin (low_zero leaves GPU 0 as empty as
// possible). Without GPUs the budgets are returned unchanged.
std::vector<Budget> balanced_budgets(const torch::nn::Module &model, const detail::TieGroups &ties,
                                     std::vector<Budget> budgets, bool user_set,
                                     const std::vector<std::string> &no_split, bool low_zero) {
  std::vector<std::size_t> gpus;
  for (std::size_t i = 0; i < budgets.size(); ++i)
    if (is_gpu(budgets[i].device) && budgets[i].bytes > 0)
      gpus.push_back(i);
  if (gpus.empty())
    return budgets;
  if (gpus.size() == 1) {
    low_zero = false;
    if (!user_set)
      budgets[gpus[0]].bytes = static_cast<std::int64_t>(budgets[gpus[0]].bytes * 0.9);
  }
  auto sizes = compute_module_sizes(model, ties);
  const std::int64_t total = sizes[""];
  const std::int64_t n = static_cast<std::int64_t>(gpus.size());
  std::int64_t per_gpu = total / (low_zero ? n - 1 : n);

  std::int64_t block = 0;
  std::set<std::string> seen;
  detail::for_each_module(model, [&](const std::string &name, const torch::nn::Module &m) {
    if (!name.empty() && type_matches(m, no_split) && seen.insert(m.name()).second)
      block = std::max(block, sizes[name]);
  });
  // Final modules: drop the tensor leaves, then take the leaves left.
  auto leaves = [](const std::map<std::string, std::int64_t> &s) {
    std::map<std::string, int> kids;
    for (const auto &[name, size] : s)
      if (auto dot = name.rfind('.'); dot != std::string::npos)
        ++kids[name.substr(0, dot)];
    std::vector<std::string> out;
    for (const auto &[name, size] : s)
      if (!name.empty() && kids[name] == 0)
        out.push_back(name);
    return out;
  };
  for (const auto &leaf : leaves(sizes))
    sizes.erase(leaf);
  const auto finals = leaves(sizes);
  std::int64_t sum = 0;
  for (const auto &name : finals)
    sum += sizes[name];
  const std::int64_t mean = sum / std::max<std::int64_t>(static_cast<std::int64_t>(finals.size()), 1);
  per_gpu += static_cast<std::int64_t>(1.25 * static_cast<double>(std::max(block, mean)));

  for (std::size_t i = 0; i + 1 < gpus.size(); ++i) {
    auto &b = budgets[gpus[i]];
    b.bytes = std::min(low_zero && i == 0 ? budgets[gpus[0]].bytes : per_gpu, b.bytes);
  }
  if (low_zero) {
    std::int64_t others = 0;
    for (std::size_t i = 1; i < gpus.size(); ++i)
      others += budgets[gpus[i]].bytes;
    budgets[gpus[0]].bytes = std::min(std::max<std::int64_t>(0, total - others), budgets[gpus[0]].bytes);
  }
  return budgets;
}

// accelerate's containment test for ties: `name + "."` found anywhere in
// `tensor + "."` (a substring test, kept so that maps stay identical).
bool inside(const std::string &name, const std::string &tensor) {
  return (tensor + ".").find(name + ".") != std::string::npos;
}

// The tied parameters outside `name` whose group has a member inside it.
std::vector<std::string> ties_leaving(const std::string &name, const detail::TieGroups &groups) {
  std::vector<std::string> outside;
  for (const auto &group : groups) {
    const bool any = std::any_of(group.begin(), group.end(), [&](const std::string &t) { return inside(name, t); });
    const bool all = std::all_of(group.begin(), group.end(), [&](const std::string &t) { return inside(name, t); });
    if (!any || all)
      continue;
    for (const auto &t : group)
      if (!inside(name, t))
        outside.push_back(t);
  }
  return outside;
}

// accelerate's get_module_size_with_ties: the module's size plus, for each
// tied parameter outside it, the rest of the still unplaced item holding it.
struct WithTies {
  std::int64_t size;
  std::vector<Item> items; // the items to place along with the module
};

WithTies size_with_ties(std::int64_t size, const std::vector<std::string> &tied,
                        const std::map<std::string, std::int64_t> &sizes, const std::vector<Item> &todo) {
  WithTies result{size, {}};
  for (const auto &tensor : tied) {
    const auto holder = std::find_if(todo.begin(), todo.end(), [&](const Item &i) {
      return tensor.compare(0, i.name.size() + 1, i.name + ".") == 0;
    });
    if (holder == todo.end())
      continue; // already placed
    result.items.push_back(*holder);
    result.size += size_of(sizes, holder->name) - size_of(sizes, tensor);
  }
  return result;
}

// A placement, in the order accelerate's OrderedDict keeps: a name placed
// again keeps its position.
void place(std::vector<std::pair<std::string, std::string>> &placed, const std::string &name,
           const std::string &device) {
  for (auto &entry : placed)
    if (entry.first == name) {
      entry.second = device;
      return;
    }
  placed.emplace_back(name, device);
}

// Replaces the item of `todo` named `name` by its parameters and children.
bool split_in_place(std::vector<Item> &todo, const std::string &name, const std::vector<std::string> &no_split) {
  const auto it = std::find_if(todo.begin(), todo.end(), [&](const Item &i) { return i.name == name; });
  if (it == todo.end() || !splittable(*it, no_split))
    return false;
  std::vector<Item> parts;
  for (const auto &p : it->module->named_parameters(false))
    parts.push_back({detail::join_name(it->name, p.key()), nullptr});
  const auto kids = children_of(*it);
  parts.insert(parts.end(), kids.begin(), kids.end());
  const auto at = todo.erase(it);
  todo.insert(at, parts.begin(), parts.end());
  return true;
}

DeviceMap infer_from_budgets(const torch::nn::Module &model, const detail::TieGroups &groups,
                             const std::vector<Budget> &budgets, const std::vector<std::string> &no_split) {
  std::vector<std::string> devices;
  devices.reserve(budgets.size() + 1);
  for (const auto &b : budgets)
    devices.push_back(b.device);
  if (std::find(devices.begin(), devices.end(), "disk") == devices.end())
    devices.push_back("disk");
  // Where offloaded layers execute, so room is kept there for the largest:
  // the first GPU and the CPU; with mps, which shares the CPU's memory,
  // mps alone (as accelerate does).
  std::vector<std::string> main_devices{"cpu"};
  if (std::find(devices.begin(), devices.end(), "mps") != devices.end())
    main_devices = {"mps"};
  else if (is_gpu(devices.front()))
    main_devices = {devices.front(), "cpu"};
  auto budget_of = [&](const std::string &device) {
    for (const auto &b : budgets)
      if (b.device == device)
        return b.bytes;
    return std::int64_t{0};
  };

  const auto sizes = compute_module_sizes(model, groups);
  std::vector<Item> todo;
  for (const auto &p : model.named_parameters(false))
    todo.push_back({p.key(), nullptr});
  for (const auto &c : model.named_children())
    todo.push_back({c.key(), c.value().get()});
  for (const auto &b : model.named_buffers(false))
    todo.push_back({b.key(), nullptr});

  std::vector<std::pair<std::string, std::string>> placed;
  std::map<std::string, std::int64_t> used;
  std::size_t current = 0;
  auto [layer_size, layer_names] = max_layer_size(todo, sizes, no_split);

  while (!todo.empty()) {
    const Item item = todo.front();
    todo.erase(todo.begin());
    // The largest layer may just have been taken: find the next largest.
    layer_names.erase(
        std::remove_if(layer_names.begin(), layer_names.end(),
                       [&](const std::string &n) { return n == item.name || starts_with(n, item.name + "."); }),
        layer_names.end());
    if (layer_names.empty())
      std::tie(layer_size, layer_names) = max_layer_size(modules_only(todo), sizes, no_split);

    const std::int64_t size = size_of(sizes, item.name);
    const std::vector<std::string> tied = ties_leaving(item.name, groups);
    const std::string &device = devices[current];
    const bool unlimited = device == "disk";
    std::int64_t room = unlimited ? 0 : budget_of(device);
    std::int64_t reserved = 0;
    // Offloaded layers run on a main device: keep room there for the largest.
    if (std::find(main_devices.begin(), main_devices.end(), device) != main_devices.end()) {
      room -= layer_size;
      reserved = layer_size;
    }
    const WithTies with_ties = size_with_ties(size, tied, sizes, todo);
    if (unlimited || used[device] + with_ties.size <= room) {
      // The module and what is tied to it go together.
      used[device] += with_ties.size;
      place(placed, item.name, device);
      for (const Item &partner : with_ties.items) {
        todo.erase(std::remove_if(todo.begin(), todo.end(), [&](const Item &i) { return i.name == partner.name; }),
                   todo.end());
        place(placed, partner.name, device);
      }
      continue;
    }
    if (!tied.empty() && used[device] + size <= room) {
      // The module fits alone: split a tied partner and try again.
      const bool split = std::any_of(with_ties.items.begin(), with_ties.items.end(), [&](const Item &partner) {
        return split_in_place(todo, partner.name, no_split);
      });
      if (split) {
        todo.insert(todo.begin(), item);
        std::tie(layer_size, layer_names) = max_layer_size(modules_only(todo), sizes, no_split);
        continue;
      }
    }
    if (used[device] + size >= room && splittable(item, no_split)) {
      todo.insert(todo.begin(), item);
      split_in_place(todo, item.name, no_split);
      std::tie(layer_size, layer_names) = max_layer_size(modules_only(todo), sizes, no_split);
      continue;
    }
    used[device] += reserved;
    ++current;
    todo.insert(todo.begin(), item);
  }

  clean_device_map(placed, "");
  DeviceMap map;
  for (const auto &[name, device] : placed)
    map.set(name, Placement(device));
  return map;
}

} // namespace

DeviceMap infer_auto_device_map(const torch::nn::Module &model, const MaxMemory &max_memory,
                                const std::vector<std::string> &no_split_modules) {
  return infer_from_budgets(model, detail::tied_groups(model), ordered_budgets(max_memory), no_split_modules);
}

DeviceMap resolve_device_map(const torch::nn::Module &model, const DeviceMap &map, const MaxMemory &max_memory,
                             const std::vector<std::string> &no_split_modules) {
  using S = DeviceMap::Strategy;
  // Planning and the placement check read the ties; find them once.
  const detail::TieGroups ties = detail::tied_groups(model);
  DeviceMap resolved = map;
  if (map.strategy() != S::Explicit) {
    auto budgets = ordered_budgets(max_memory);
    // As transformers does: every strategy but "sequential" balances GPUs.
    if (map.strategy() != S::Sequential)
      budgets = balanced_budgets(model, ties, budgets, !max_memory.empty(), no_split_modules,
                                 map.strategy() == S::BalancedLow0);
    resolved = infer_from_budgets(model, ties, budgets, no_split_modules);
  }
  std::vector<std::string> uncovered;
  for (const auto &p : model.named_parameters(true))
    if (!resolved.placement_for(p.key()))
      uncovered.push_back(p.key());
  for (const auto &b : model.named_buffers(true))
    if (!resolved.placement_for(b.key()))
      uncovered.push_back(b.key());
  if (!uncovered.empty()) {
    std::ostringstream msg;
    msg << "the device map gives no placement for " << uncovered.size() << " tensor(s): ";
    for (std::size_t i = 0; i < uncovered.size(); ++i)
      msg << (i ? ", " : "") << uncovered[i];
    msg << "; add an entry for each (or for a module prefix that contains them), or {\"\": device} as a default";
    throw Error(msg.str());
  }
  detail::check_tied_placements(ties, resolved);
  return resolved;
}

} // namespace metaguard
