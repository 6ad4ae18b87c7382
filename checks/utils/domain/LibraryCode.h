//===--- LibraryCode.h - metaguard-tidy ------------------------*- C++ -*-===//
//
// The code that is not the user's: functions of the standard library,
// LibTorch and metaguard's runtime (by namespace), and anything written in a
// system header. Calls through it are plumbing between the user's functions,
// and it is never where the mistake a check reports is written.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_DOMAIN_LIBRARYCODE_H
#define METAGUARD_CHECKS_UTILS_DOMAIN_LIBRARYCODE_H

#include "clang/AST/Decl.h"

namespace clang::tidy::metaguard {

/// Whether FD is declared in a system header, or in namespace std, torch,
/// c10, at or metaguard (at any depth).
bool isLibraryFunction(const FunctionDecl *FD);

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_DOMAIN_LIBRARYCODE_H
