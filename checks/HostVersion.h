//===--- HostVersion.h - metaguard-tidy ------------------------*- C++ -*-===//
//
// Finds the LLVM major version of the clang-tidy process that loaded the
// plugin, before the plugin touches any LLVM or clang-tidy symbol.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_HOSTVERSION_H
#define METAGUARD_CHECKS_HOSTVERSION_H

#include <string>

namespace clang::tidy::metaguard {

/// How the host version was found (for the diagnostic message).
struct HostVersion {
  /// LLVM major version of the host, 0 when it could not be found.
  unsigned Major = 0;
  /// Where it came from: the override variable, LLVMGetVersion, or the name
  /// of a loaded LLVM/Clang shared library.
  std::string Source;
};

/// Name of the environment variable that pretends the host is another LLVM
/// major version (for tests): METAGUARD_TIDY_HOST_VERSION_OVERRIDE=18.
inline constexpr const char *HostVersionOverrideVar =
    "METAGUARD_TIDY_HOST_VERSION_OVERRIDE";

/// The LLVM major version of the running process. Uses only libc and the
/// dynamic loader (never an LLVM function with a C++ ABI), so it is safe to
/// call when the host is an incompatible LLVM:
///   1. the override variable, if set to a number;
///   2. LLVMGetVersion from the LLVM C API, if the process exports it;
///   3. the names of loaded libraries: libLLVM.so.N[.M], libLLVM-N.so,
///      libclang-cpp.so.N[.M].
HostVersion detectHostVersion();

/// Parses the LLVM major version from a shared library path such as
/// "/usr/lib/llvm-19/lib/libclang-cpp.so.19.1" or "libLLVM-18.so"; 0 if the
/// path is not an LLVM or libclang-cpp library.
unsigned majorFromLibraryPath(const std::string &Path);

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_HOSTVERSION_H
