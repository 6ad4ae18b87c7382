// What a case file (meta_scope_cases.h, offload_cases.h) is made of: named
// functions, each with what the runtime must do when it runs and what the
// check must say when it reads it. compare_check_with_cases.py reads the
// tables as text: keep their rows as {"name", name, Expect::...}.
#pragma once

namespace integration_cases {

enum class Expect { Accepted, Rejected };

template <class Paths> struct Case {
  const char *name;
  void (*run)(const Paths &);
  Expect expect;
};

} // namespace integration_cases
