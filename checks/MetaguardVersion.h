//===--- MetaguardVersion.h - metaguard-tidy --------------------*- C++ -*-===//
//
// The line metaguard-clang-tidy and metaguard-clangd add to --version, so a
// user (and a bug report) can tell which metaguard a binary carries.
// METAGUARD_VERSION is the project's version (CMakeLists.txt), defined by the
// binaries' targets only: the checks' objects do not depend on it.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_METAGUARDVERSION_H
#define METAGUARD_CHECKS_METAGUARDVERSION_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/raw_ostream.h"

namespace clang::tidy::metaguard {

/// Prints "metaguard X.Y.Z (metaguard-* checks built into HOST N)".
inline void printBuiltInVersion(llvm::raw_ostream &OS, llvm::StringRef Host) {
  OS << "metaguard " << METAGUARD_VERSION << " (metaguard-* checks built into "
     << Host << " " << LLVM_VERSION_MAJOR << ")\n";
}

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_METAGUARDVERSION_H
