//===--- Usr.h - metaguard-tidy --------------------------------*- C++ -*-===//
//
// The USR (Unified Symbol Resolution string) of a declaration: the key of
// function summaries across translation units, the same for a function's
// declaration in a header and its definition in another file.
//
// clang::index::generateUSRForDecl lives in clangIndex (since LLVM 23 in
// clangUnifiedSymbolResolution, whose header utils/ClangCompat.h picks when
// it is there). The plugin links no Clang library: the symbol comes from the
// host, and both hosts have it
// (clang-tidy-19 through libclang-cpp.so.19.1, which exports it;
// metaguard-clangd links clangIndex itself, clangd's index uses it).
// test/checks/plugin-symbols.test loads the plugin with every symbol bound
// at load time (LD_BIND_NOW) to keep that true.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_SUMMARIES_USR_H
#define METAGUARD_CHECKS_UTILS_SUMMARIES_USR_H

#include "clang/AST/Decl.h"

#include <string>

namespace clang::tidy::metaguard {

/// D's USR, or an empty string when it has none (e.g. a local declaration
/// that clang does not name).
std::string usrOf(const Decl *D);

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_SUMMARIES_USR_H
