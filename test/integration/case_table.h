// What a case file (meta_scope_cases.h, offload_cases.h) is made of: named
// functions, each with what the runtime must do when it runs and what the
// check must say when it reads it. compare_check_with_cases.py reads the
// tables as text: keep their rows as {"name", name, Expect::...}.
#pragma once

#include <metaguard/metaguard.h>

#include <filesystem>

namespace integration_cases {

enum class Expect { Accepted, Rejected };

template <class Paths> struct Case {
  const char *name;
  void (*run)(const Paths &);
  Expect expect;
};

// Saves a freshly built `Model` (constructed from an empty config) to `dir`
// with a config.json of {"model_type": model_type}: the checkpoints the
// tables' make_paths write.
template <class Model>
void save_fresh(const std::filesystem::path &dir, const char *model_type) {
  Model model(metaguard::Config::object());
  metaguard::SaveOptions options;
  options.config = {{"model_type", model_type}};
  metaguard::save_pretrained(*model, dir, options);
}

} // namespace integration_cases
