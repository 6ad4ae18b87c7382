//===--- MetaguardTidyModule.cpp - metaguard-tidy --------------*- C++ -*-===//
//
// Registers the metaguard-* checks with clang-tidy, but only when the
// clang-tidy that loaded the plugin is the LLVM major version it was built for.
//
//===----------------------------------------------------------------------===//

#include "HostVersion.h"
#include "MetaguardModule.h"

#include "clang-tidy/ClangTidyModuleRegistry.h"
#include "llvm/Config/llvm-config.h"

#include <cstdio>

namespace clang::tidy::metaguard {

namespace {

using ModuleRegistration = ClangTidyModuleRegistry::Add<MetaguardModule>;

/// Runs when the plugin is loaded: checks the host version with libc only,
/// then creates the registry node. The node is never freed: the registry
/// keeps a pointer to it for the life of the process.
struct RegisterIfCompatible {
  RegisterIfCompatible() {
    HostVersion Host = detectHostVersion();
    if (Host.Major != 0 && Host.Major != LLVM_VERSION_MAJOR) {
      std::fprintf(
          stderr,
          "metaguard: libmetaguard_tidy.so was built for LLVM %d, but this "
          "clang-tidy is LLVM %u (found via %s); the metaguard-* checks are "
          "NOT registered. Run it with clang-tidy-%d (for example "
          "'clang-tidy-%d --load=<build>/lib/libmetaguard_tidy.so ...'), or "
          "rebuild metaguard against LLVM %u.\n",
          LLVM_VERSION_MAJOR, Host.Major, Host.Source.c_str(),
          LLVM_VERSION_MAJOR, LLVM_VERSION_MAJOR, Host.Major);
      return;
    }
    if (Host.Major == 0)
      std::fprintf(stderr,
                   "metaguard: could not find the LLVM version of this "
                   "clang-tidy; registering the metaguard-* checks built for "
                   "LLVM %d anyway.\n",
                   LLVM_VERSION_MAJOR);
    new ModuleRegistration(ModuleName, ModuleDescription);
  }
};

RegisterIfCompatible Registration;

} // namespace

} // namespace clang::tidy::metaguard
