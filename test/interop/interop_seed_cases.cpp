// The C++ side of the seed scenarios run against the Python stack
// (test_seed_cases.py): the case tables of test/integration/ are the one
// table both sides run.
//
//   interop_seed_cases list                    one "table name expect" line per case
//   interop_seed_cases run TABLE NAME WORKDIR  runs one case in a fresh folder and
//                                              prints "fine" or "raises <error>"
//
// Only the rule's typed error counts as "raises"; anything else fails the run.
#include "../integration/meta_scope_cases.h"
#include "../integration/offload_cases.h"

#include <iostream>
#include <string>

namespace {

namespace fs = std::filesystem;

const char *expect_text(integration_cases::Expect expect) {
  return expect == integration_cases::Expect::Rejected ? "rejected" : "accepted";
}

template <class Error, class Case, class Paths>
int run(const std::vector<Case> &cases, const std::string &name, const Paths &paths) {
  for (const auto &c : cases) {
    if (name != c.name)
      continue;
    try {
      c.run(paths);
      std::cout << "fine\n";
    } catch (const Error &e) {
      std::cout << "raises " << e.what() << "\n";
    }
    metaguard::reset_default_device();
    return 0;
  }
  std::cerr << "no case named '" << name << "'\n";
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  metaguard::set_policy(metaguard::Policy::Throw);
  const std::string command = argc > 1 ? argv[1] : "";
  if (command == "list" && argc == 2) {
    for (const auto &c : meta_scope_cases::cases())
      std::cout << "meta_scope " << c.name << " " << expect_text(c.expect) << "\n";
    for (const auto &c : offload_cases::cases())
      std::cout << "offload " << c.name << " " << expect_text(c.expect) << "\n";
    return 0;
  }
  if (command == "run" && argc == 5) {
    const std::string table = argv[2];
    const fs::path work = argv[4];
    if (table == "meta_scope")
      return run<metaguard::MetaDeviceError>(meta_scope_cases::cases(), argv[3], meta_scope_cases::make_paths(work));
    if (table == "offload")
      return run<metaguard::OffloadError>(offload_cases::cases(), argv[3], offload_cases::make_paths(work));
  }
  std::cerr << "usage: interop_seed_cases list | run meta_scope|offload NAME WORKDIR\n";
  return 2;
}
