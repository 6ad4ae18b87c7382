// The same cases, seen from both sides of metaguard, for the second rule:
// the check metaguard-offloaded-parameter-move lints this file (lit test
// test/checks/integration-offload-rule.test) and the runtime runs it
// (test/runtime/offload_rule_integration_test.cpp). Both must agree with the
// table at the end: a Rejected case throws OffloadError at run time and is
// flagged exactly on its line marked "rejected here"; an Accepted case runs
// and is not flagged.
#pragma once

#include "case_table.h"

#include <metaguard/metaguard.h>
#include <torch/torch.h>

#include <filesystem>
#include <string>
#include <vector>

namespace offload_cases {

namespace fs = std::filesystem;

struct TwoLayerImpl : metaguard::PreTrainedModel {
  explicit TwoLayerImpl(const metaguard::Config &) {
    fc1 = register_module("fc1", torch::nn::Linear(4, 4));
    fc2 = register_module("fc2", torch::nn::Linear(4, 4));
  }
  torch::nn::Linear fc1{nullptr};
  torch::nn::Linear fc2{nullptr};
};
TORCH_MODULE(TwoLayer);

// `model` holds a saved TwoLayer; `scratch` is an empty folder the cases may
// write to (offload folders, saved copies).
struct Paths {
  fs::path model;
  fs::path scratch;
};

// Saves the TwoLayer checkpoint under `root` and makes a scratch folder
// there: the setup every runner of the table shares.
inline Paths make_paths(const fs::path &root) {
  Paths paths{root / "model", root / "scratch"};
  integration_cases::save_fresh<TwoLayer>(paths.model, "two_layer");
  fs::create_directories(paths.scratch);
  return paths;
}

inline void move_model_with_disk_map(const Paths &p) {
  metaguard::LoadOptions options;
  options.device_map = {{"fc1", "cpu"}, {"fc2", "disk"}};
  auto m = metaguard::from_pretrained<TwoLayer>(p.model, options);
  m->to(torch::kCPU); // rejected here
}

inline void move_model_with_single_device_map(const Paths &p) {
  metaguard::LoadOptions options;
  options.device_map = metaguard::DeviceMap::on(torch::kCPU);
  auto m = metaguard::from_pretrained<TwoLayer>(p.model, options);
  m->to(torch::kCPU);
}

inline void move_model_with_map_without_disk(const Paths &p) {
  metaguard::LoadOptions options;
  options.device_map = {{"fc1", "cpu"}, {"fc2", torch::kCPU}};
  auto m = metaguard::from_pretrained<TwoLayer>(p.model, options);
  m->to(torch::kCPU);
}

inline void move_model_with_offload_folder_only(const Paths &p) {
  metaguard::LoadOptions options;
  options.offload_folder = p.scratch / "unused";
  auto m = metaguard::from_pretrained<TwoLayer>(p.model, options);
  m->to(torch::kCPU);
}

inline void move_after_dispatch_without_disk(const Paths &p) {
  auto m = metaguard::from_pretrained<TwoLayer>(p.model);
  metaguard::dispatch_model(*m, {{"fc1", "cpu"}, {"fc2", "cpu"}});
  m->to(torch::kCPU);
}

inline void move_after_dispatch_to_disk(const Paths &p) {
  auto m = metaguard::from_pretrained<TwoLayer>(p.model);
  metaguard::dispatch_model(*m, {{"fc1", "cpu"}, {"fc2", "disk"}}, p.scratch / "offload");
  m->to(torch::kCPU); // rejected here
}

inline void back_in_memory_then_move(const Paths &p) {
  metaguard::LoadOptions options;
  options.device_map = {{"fc1", "cpu"}, {"fc2", "disk"}};
  auto m = metaguard::from_pretrained<TwoLayer>(p.model, options);
  metaguard::dispatch_model(*m, metaguard::DeviceMap::on(torch::kCPU));
  m->to(torch::kCPU);
}

inline void dtype_only_to(const Paths &p) {
  metaguard::LoadOptions options;
  options.device_map = {{"fc1", "cpu"}, {"fc2", "disk"}};
  auto m = metaguard::from_pretrained<TwoLayer>(p.model, options);
  m->to(torch::kFloat64);
}

inline void save_after_hooks_removed(const Paths &p) {
  metaguard::LoadOptions options;
  options.device_map = {{"fc1", "cpu"}, {"fc2", "disk"}};
  auto m = metaguard::from_pretrained<TwoLayer>(p.model, options);
  metaguard::remove_hook_from_module(*m, /*recurse=*/true);
  metaguard::save_pretrained(*m, p.scratch / "saved"); // rejected here
}

inline void dispatch_again_after_hooks_removed(const Paths &p) {
  metaguard::LoadOptions options;
  options.device_map = {{"fc1", "cpu"}, {"fc2", "disk"}};
  auto m = metaguard::from_pretrained<TwoLayer>(p.model, options);
  metaguard::remove_hook_from_module(*m, /*recurse=*/true);
  metaguard::dispatch_model(*m, metaguard::DeviceMap::on(torch::kCPU)); // rejected here
}

inline void read_copy_before_removing_hooks(const Paths &p) {
  metaguard::LoadOptions options;
  options.device_map = {{"fc1", "cpu"}, {"fc2", "disk"}};
  auto m = metaguard::from_pretrained<TwoLayer>(p.model, options);
  torch::Tensor w = metaguard::load_offloaded_parameter(*m, "fc2.weight");
  metaguard::remove_hook_from_module(*m, /*recurse=*/true);
  w.add_(1);
}

inline void reload_after_hooks_removed(const Paths &p) {
  metaguard::LoadOptions options;
  options.device_map = {{"fc1", "cpu"}, {"fc2", "disk"}};
  auto m = metaguard::from_pretrained<TwoLayer>(p.model, options);
  metaguard::remove_hook_from_module(*m, /*recurse=*/true);
  m = metaguard::from_pretrained<TwoLayer>(p.model, options);
  metaguard::save_pretrained(*m, p.scratch / "reloaded");
}

using Expect = integration_cases::Expect;
using Case = integration_cases::Case<Paths>;

inline const std::vector<Case> &cases() {
  static const std::vector<Case> all = {
      {"move_model_with_disk_map", move_model_with_disk_map, Expect::Rejected},
      {"move_model_with_single_device_map", move_model_with_single_device_map, Expect::Accepted},
      {"move_model_with_map_without_disk", move_model_with_map_without_disk, Expect::Accepted},
      {"move_model_with_offload_folder_only", move_model_with_offload_folder_only,
       Expect::Accepted},
      {"move_after_dispatch_without_disk", move_after_dispatch_without_disk, Expect::Accepted},
      {"move_after_dispatch_to_disk", move_after_dispatch_to_disk, Expect::Rejected},
      {"back_in_memory_then_move", back_in_memory_then_move, Expect::Accepted},
      {"dtype_only_to", dtype_only_to, Expect::Accepted},
      {"save_after_hooks_removed", save_after_hooks_removed, Expect::Rejected},
      {"dispatch_again_after_hooks_removed", dispatch_again_after_hooks_removed,
       Expect::Rejected},
      {"read_copy_before_removing_hooks", read_copy_before_removing_hooks, Expect::Accepted},
      {"reload_after_hooks_removed", reload_after_hooks_removed, Expect::Accepted},
  };
  return all;
}

} // namespace offload_cases
