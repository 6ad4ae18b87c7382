// The C++ side of test_accelerate_device_map.py: builds the module tree a
// Python model has (dumped by the test: module type names, parameters and
// buffers with shapes and dtypes, in registration order) out of meta tensors,
// and prints the device map metaguard computes for each budget.
//
//   interop_accelerate_device_map JOBS.json
//
// JOBS.json: {"model": TREE, "tied": [[full name, ...]], "jobs": [{"strategy":
// S, "max_memory": {...}, "no_split": [...]}]}, TREE = {"type": T,
// "parameters": [[name, shape, dtype]], "buffers": [...], "children": [[name,
// TREE]]}; the names of a "tied" group are registered as one tensor, as
// PyTorch holds a tie. S is "infer"
// (infer_auto_device_map) or a device-map strategy for resolve_device_map
// ("auto", "balanced", "balanced_low_0", "sequential"). Prints one JSON list
// with a {prefix: device} object per job, or {"error": message} when
// metaguard throws.
#include <metaguard/metaguard.h>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <fstream>
#include <iostream>
#include <map>
#include <memory>

namespace {

using nlohmann::json;

// A module whose type name is the Python class name, so that
// no_split_modules matches the same modules on both sides.
struct TreeModule : torch::nn::Module {
  explicit TreeModule(const std::string &type) : torch::nn::Module(type) {}
};

torch::Tensor meta_tensor(const json &entry) {
  const auto shape = entry.at(1).get<std::vector<std::int64_t>>();
  const auto dtype = metaguard::dtype_from_numpy_name(entry.at(2).get<std::string>(), entry.at(0).get<std::string>());
  return torch::empty(shape, torch::TensorOptions().dtype(dtype).device(torch::kMeta));
}

// Full parameter name -> the tensor of its tie group, once made.
struct Ties {
  std::map<std::string, std::size_t> group_of;
  std::map<std::size_t, torch::Tensor> tensors;

  explicit Ties(const json &groups) {
    for (std::size_t i = 0; i < groups.size(); ++i)
      for (const auto &name : groups[i])
        group_of.emplace(name.get<std::string>(), i);
  }
  torch::Tensor tensor_for(const std::string &name, const json &entry) {
    const auto group = group_of.find(name);
    if (group == group_of.end())
      return meta_tensor(entry);
    auto [it, fresh] = tensors.emplace(group->second, torch::Tensor());
    if (fresh)
      it->second = meta_tensor(entry);
    return it->second;
  }
};

std::string join(const std::string &prefix, const std::string &name) {
  return prefix.empty() ? name : prefix + "." + name;
}

std::shared_ptr<TreeModule> build(const json &tree, Ties &ties, const std::string &prefix = "") {
  auto module = std::make_shared<TreeModule>(tree.at("type").get<std::string>());
  for (const auto &p : tree.at("parameters")) {
    const std::string name = p.at(0).get<std::string>();
    module->register_parameter(name, ties.tensor_for(join(prefix, name), p));
  }
  for (const auto &b : tree.at("buffers"))
    module->register_buffer(b.at(0).get<std::string>(), meta_tensor(b));
  for (const auto &c : tree.at("children")) {
    const std::string name = c.at(0).get<std::string>();
    module->register_module(name, build(c.at(1), ties, join(prefix, name)));
  }
  return module;
}

metaguard::DeviceMap strategy_map(const std::string &strategy) {
  if (strategy == "auto")
    return metaguard::DeviceMap::automatic();
  if (strategy == "balanced")
    return metaguard::DeviceMap::balanced();
  if (strategy == "balanced_low_0")
    return metaguard::DeviceMap::balanced_low_0();
  if (strategy == "sequential")
    return metaguard::DeviceMap::sequential();
  throw std::invalid_argument("unknown strategy '" + strategy + "'");
}

json run_job(const torch::nn::Module &model, const json &job) {
  metaguard::MaxMemory budget;
  for (const auto &[device, bytes] : job.at("max_memory").items())
    budget.set(device, bytes.get<std::int64_t>());
  const auto no_split = job.value("no_split", std::vector<std::string>{});
  const std::string strategy = job.at("strategy").get<std::string>();
  try {
    const metaguard::DeviceMap map =
        strategy == "infer" ? metaguard::infer_auto_device_map(model, budget, no_split)
                            : metaguard::resolve_device_map(model, strategy_map(strategy), budget, no_split);
    json out = json::object();
    for (const auto &[prefix, placement] : map.entries())
      out[prefix] = placement.str();
    return out;
  } catch (const metaguard::Error &e) {
    return json{{"error", e.what()}};
  }
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::cerr << "usage: interop_accelerate_device_map JOBS.json\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  const json input = json::parse(in);
  Ties ties(input.value("tied", json::array()));
  const auto model = build(input.at("model"), ties);
  json results = json::array();
  for (const auto &job : input.at("jobs"))
    results.push_back(run_job(*model, job));
  std::cout << results.dump() << "\n";
  return 0;
}
