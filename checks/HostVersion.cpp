//===--- HostVersion.cpp - metaguard-tidy ----------------------*- C++ -*-===//

#include "HostVersion.h"

#include <cctype>
#include <cstdlib>
#include <dlfcn.h>
#include <link.h>

namespace clang::tidy::metaguard {

namespace {

/// Reads the leading decimal number of Text; 0 if there is none.
unsigned leadingNumber(const std::string &Text, std::size_t Pos) {
  unsigned Value = 0;
  bool Any = false;
  while (Pos < Text.size() &&
         std::isdigit(static_cast<unsigned char>(Text[Pos]))) {
    Value = Value * 10 + static_cast<unsigned>(Text[Pos] - '0');
    Any = true;
    ++Pos;
    if (Value > 1000)
      return 0;
  }
  return Any ? Value : 0;
}

int collectLibrary(struct dl_phdr_info *Info, size_t, void *Data) {
  if (!Info->dlpi_name || !*Info->dlpi_name)
    return 0;
  unsigned Major = majorFromLibraryPath(Info->dlpi_name);
  if (Major == 0)
    return 0;
  auto *Result = static_cast<HostVersion *>(Data);
  Result->Major = Major;
  Result->Source = Info->dlpi_name;
  return 1; // Stop at the first LLVM library.
}

} // namespace

unsigned majorFromLibraryPath(const std::string &Path) {
  std::size_t Slash = Path.rfind('/');
  std::string Base = Slash == std::string::npos ? Path : Path.substr(Slash + 1);
  for (const char *Stem : {"libLLVM.so.", "libclang-cpp.so."}) {
    std::string S = Stem;
    if (Base.compare(0, S.size(), S) == 0)
      return leadingNumber(Base, S.size());
  }
  // Some distributions name it libLLVM-18.so or libLLVM-18.so.1.
  const std::string Dashed = "libLLVM-";
  if (Base.compare(0, Dashed.size(), Dashed) == 0)
    return leadingNumber(Base, Dashed.size());
  return 0;
}

HostVersion detectHostVersion() {
  HostVersion Result;
  if (const char *Override = std::getenv(HostVersionOverrideVar)) {
    unsigned Major = leadingNumber(Override, 0);
    if (Major != 0) {
      Result.Major = Major;
      Result.Source = HostVersionOverrideVar;
      return Result;
    }
  }
  // The LLVM C API is ABI-stable, so calling it is safe on any LLVM >= 16.
  using GetVersionFn = void (*)(unsigned *, unsigned *, unsigned *);
  if (void *Sym = dlsym(RTLD_DEFAULT, "LLVMGetVersion")) {
    unsigned Major = 0, Minor = 0, Patch = 0;
    reinterpret_cast<GetVersionFn>(Sym)(&Major, &Minor, &Patch);
    if (Major != 0) {
      Result.Major = Major;
      Result.Source = "LLVMGetVersion";
      return Result;
    }
  }
  dl_iterate_phdr(collectLibrary, &Result);
  return Result;
}

} // namespace clang::tidy::metaguard
