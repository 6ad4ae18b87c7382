// The runtime side of a case file (test/integration/): every Rejected case
// must throw the rule's error, every Accepted one must run.
#pragma once

#include "../integration/case_table.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

namespace metaguard_test {

template <class Error, class Paths>
void expect_runtime_agrees(const integration_cases::Case<Paths> &c, const Paths &paths) {
  if (c.expect == integration_cases::Expect::Rejected) {
    EXPECT_THROW(c.run(paths), Error) << c.name;
  } else {
    EXPECT_NO_THROW(c.run(paths)) << c.name;
  }
}

// A folder of this process's own for a case file's checkpoints.
inline std::filesystem::path case_root(const std::string &name) {
  auto root = std::filesystem::temp_directory_path() /
              ("metaguard-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::create_directories(root);
  return root;
}

// Test names are the cases' names.
struct CaseName {
  template <class Info> std::string operator()(const Info &info) const {
    return info.param.name;
  }
};

} // namespace metaguard_test
