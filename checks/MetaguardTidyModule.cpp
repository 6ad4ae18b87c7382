//===--- MetaguardTidyModule.cpp - metaguard-tidy --------------*- C++ -*-===//
//
// Registers the metaguard-* checks with clang-tidy, but only when the
// clang-tidy that loaded the plugin is the LLVM major version it was built for.
//
//===----------------------------------------------------------------------===//

#include "HostVersion.h"
#include "MetaguardModule.h"
#include "utils/ClangCompat.h"

#include "llvm/Config/llvm-config.h"

#include <cstdio>
#include <dlfcn.h>
#include <string>

#define METAGUARD_STRINGIZE2(X) #X
#define METAGUARD_STRINGIZE(X) METAGUARD_STRINGIZE2(X)

/// The major this plugin is built for, as metaguard-tidy reads it from the
/// file (tools/metaguard_plugins.py) to pair it with a clang-tidy of the same
/// major without loading it.
extern "C" __attribute__((used, visibility("default")))
const char MetaguardPluginLlvmMajor[] =
    "metaguard-plugin-llvm-major=" METAGUARD_STRINGIZE(LLVM_VERSION_MAJOR);

namespace clang::tidy::metaguard {

namespace {

using ModuleRegistration = ClangTidyModuleRegistry::Add<MetaguardModule>;

/// The file name this plugin was loaded from (one of several, one per LLVM
/// major, may be installed side by side).
std::string pluginFileName() {
  Dl_info Info;
  if (dladdr(reinterpret_cast<void *>(&pluginFileName), &Info) == 0 ||
      !Info.dli_fname)
    return "libmetaguard_tidy.so";
  std::string Path = Info.dli_fname;
  std::size_t Slash = Path.rfind('/');
  return Slash == std::string::npos ? Path : Path.substr(Slash + 1);
}

/// Runs when the plugin is loaded: checks the host version with libc only,
/// then creates the registry node. The node is never freed: the registry
/// keeps a pointer to it for the life of the process.
struct RegisterIfCompatible {
  RegisterIfCompatible() {
    HostVersion Host = detectHostVersion();
    if (Host.Major != 0 && Host.Major != LLVM_VERSION_MAJOR) {
      std::string Self = pluginFileName();
      std::fprintf(
          stderr,
          "metaguard: %s was built for LLVM %d, but this clang-tidy is LLVM "
          "%u (found via %s); the metaguard-* checks are NOT registered. "
          "Load the plugin built for LLVM %u instead "
          "(libmetaguard_tidy-llvm%u.so, where it was built: 'cmake "
          "-DMETAGUARD_LLVM_VERSION=%u' or METAGUARD_EXTRA_LLVM_VERSIONS), or "
          "run clang-tidy-%d.\n",
          Self.c_str(), LLVM_VERSION_MAJOR, Host.Major, Host.Source.c_str(),
          Host.Major, Host.Major, Host.Major, LLVM_VERSION_MAJOR);
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
