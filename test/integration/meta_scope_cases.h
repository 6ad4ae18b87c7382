// The same cases, seen from both sides of metaguard: the check
// metaguard-from-pretrained-in-meta-scope lints this file (lit test
// test/checks/integration-meta-scope-rule.test) and the runtime runs it
// (test/runtime/meta_scope_rule_integration_test.cpp). Both must agree with
// the table at the end: a Rejected case throws MetaDeviceError at run time and
// is flagged exactly on its line marked "rejected here"; an Accepted case
// loads and is not flagged.
#pragma once

#include "case_table.h"

#include <metaguard/metaguard.h>
#include <torch/torch.h>

#include <filesystem>
#include <string>
#include <vector>

namespace meta_scope_cases {

namespace fs = std::filesystem;

struct TinyImpl : torch::nn::Module {
  explicit TinyImpl(const metaguard::Config &) {
    fc = register_module("fc", torch::nn::Linear(4, 3));
  }
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(Tiny);

// A model whose constructor loads a pretrained sub-model: the usual way the
// rule is broken without a scope in sight.
struct CompositeImpl : torch::nn::Module {
  explicit CompositeImpl(const metaguard::Config &config) {
    encoder = register_module(
        "encoder", metaguard::from_pretrained<Tiny>(
                       config.at("encoder_dir").get<std::string>()));
    head = register_module("head", torch::nn::Linear(3, 2));
  }
  Tiny encoder{nullptr};
  torch::nn::Linear head{nullptr};
};
TORCH_MODULE(Composite);

// Checkpoints the cases load: `tiny` is a Tiny, `composite` a Composite
// whose config names `tiny` as its encoder.
struct Paths {
  fs::path tiny;
  fs::path composite;
};

// Saves the two checkpoints under `root`: the setup every runner of the
// table shares (the GoogleTest suite and the interop program).
inline Paths make_paths(const fs::path &root) {
  Paths paths{root / "tiny", root / "composite"};
  integration_cases::save_fresh<Tiny>(paths.tiny, "tiny");
  const metaguard::Config composite_config = {{"model_type", "composite"},
                                              {"encoder_dir", paths.tiny.string()}};
  Composite composite(composite_config);
  metaguard::SaveOptions composite_options;
  composite_options.config = composite_config;
  metaguard::save_pretrained(*composite, paths.composite, composite_options);
  return paths;
}

inline Tiny load_tiny(const fs::path &dir) {
  return metaguard::from_pretrained<Tiny>(dir);
}

inline void load_outside_any_scope(const Paths &p) {
  metaguard::from_pretrained<Tiny>(p.tiny);
}

inline void load_inside_init_empty_weights(const Paths &p) {
  auto guard = metaguard::init_empty_weights();
  metaguard::from_pretrained<Tiny>(p.tiny); // rejected here
}

inline void load_inside_meta_device_scope(const Paths &p) {
  metaguard::DeviceScope scope{torch::Device(torch::kMeta)};
  metaguard::from_pretrained<Tiny>(p.tiny); // rejected here
}

inline void load_in_cpu_scope_nested_in_meta(const Paths &p) {
  metaguard::MetaDeviceScope meta;
  {
    metaguard::DeviceScope cpu{torch::Device(torch::kCPU)};
    metaguard::from_pretrained<Tiny>(p.tiny);
  }
}

inline void load_after_meta_default_device(const Paths &p) {
  metaguard::set_default_device("meta");
  metaguard::from_pretrained<Tiny>(p.tiny); // rejected here
}

inline void load_after_default_device_reset(const Paths &p) {
  metaguard::set_default_device(torch::kMeta);
  metaguard::set_default_device("cpu");
  metaguard::from_pretrained<Tiny>(p.tiny);
}

inline void load_with_explicit_device_map_in_scope(const Paths &p) {
  auto guard = metaguard::init_empty_weights();
  metaguard::LoadOptions options;
  options.device_map = metaguard::DeviceMap::on(torch::kCPU);
  metaguard::from_pretrained<Tiny>(p.tiny, options);
}

inline void from_config_inside_scope(const Paths &p) {
  auto guard = metaguard::init_empty_weights();
  metaguard::from_config<Tiny>(metaguard::load_config(p.tiny));
}

inline void load_in_with_meta_device_lambda(const Paths &p) {
  metaguard::with_meta_device([&] {
    return metaguard::from_pretrained<Tiny>(p.tiny); // rejected here
  });
}

inline void load_after_scope_ended(const Paths &p) {
  { auto guard = metaguard::init_empty_weights(); }
  metaguard::from_pretrained<Tiny>(p.tiny);
}

inline void load_after_temporary_guard(const Paths &p) {
  metaguard::MetaDeviceScope();
  metaguard::from_pretrained<Tiny>(p.tiny);
}

inline void load_through_helper_in_scope(const Paths &p) {
  metaguard::MetaDeviceScope meta;
  load_tiny(p.tiny); // rejected here
}

inline void build_composite_in_scope(const Paths &p) {
  auto guard = metaguard::init_empty_weights();
  Composite model(metaguard::load_config(p.composite)); // rejected here
}

inline void load_weights_into_module_in_scope(const Paths &p) {
  Tiny model(metaguard::Config::object());
  metaguard::MetaDeviceScope meta;
  metaguard::load_weights(*model, p.tiny); // rejected here
}

inline void load_composite_checkpoint(const Paths &p) {
  // from_pretrained builds Composite on meta, so its nested load runs there.
  metaguard::from_pretrained<Composite>(p.composite); // rejected here
}

using Expect = integration_cases::Expect;
using Case = integration_cases::Case<Paths>;

inline const std::vector<Case> &cases() {
  static const std::vector<Case> all = {
      {"load_outside_any_scope", load_outside_any_scope, Expect::Accepted},
      {"load_inside_init_empty_weights", load_inside_init_empty_weights, Expect::Rejected},
      {"load_inside_meta_device_scope", load_inside_meta_device_scope, Expect::Rejected},
      {"load_in_cpu_scope_nested_in_meta", load_in_cpu_scope_nested_in_meta, Expect::Accepted},
      {"load_after_meta_default_device", load_after_meta_default_device, Expect::Rejected},
      {"load_after_default_device_reset", load_after_default_device_reset, Expect::Accepted},
      {"load_with_explicit_device_map_in_scope", load_with_explicit_device_map_in_scope,
       Expect::Accepted},
      {"from_config_inside_scope", from_config_inside_scope, Expect::Accepted},
      {"load_in_with_meta_device_lambda", load_in_with_meta_device_lambda, Expect::Rejected},
      {"load_after_scope_ended", load_after_scope_ended, Expect::Accepted},
      {"load_after_temporary_guard", load_after_temporary_guard, Expect::Accepted},
      {"load_through_helper_in_scope", load_through_helper_in_scope, Expect::Rejected},
      {"build_composite_in_scope", build_composite_in_scope, Expect::Rejected},
      {"load_weights_into_module_in_scope", load_weights_into_module_in_scope, Expect::Rejected},
      {"load_composite_checkpoint", load_composite_checkpoint, Expect::Rejected},
  };
  return all;
}

} // namespace meta_scope_cases
