//===--- MetaguardModule.h - metaguard-tidy --------------------*- C++ -*-===//
//
// The clang-tidy module holding the metaguard-* checks, those of the list in
// Checks.def. Registered by the plugin (MetaguardTidyModule.cpp, after a host
// version check) and by metaguard-clangd (clangd/MetaguardClangd.cpp,
// unconditionally).
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_METAGUARDMODULE_H
#define METAGUARD_CHECKS_METAGUARDMODULE_H

#include "clang-tidy/ClangTidyModule.h"
#include "llvm/ADT/StringRef.h"

namespace clang::tidy::metaguard {

/// Name and description the module is registered under.
inline constexpr const char *ModuleName = "metaguard-module";
inline constexpr const char *ModuleDescription =
    "metaguard: checks that stop model-loading bugs.";

class MetaguardModule : public ClangTidyModule {
public:
  void addCheckFactories(ClangTidyCheckFactories &CheckFactories) override;
};

/// Whether \p CheckName is one of the checks this module registers, for code
/// that has to treat metaguard's checks apart from clang-tidy's own (such as
/// metaguard-clangd, for clangd's list of fast checks).
bool isMetaguardCheck(llvm::StringRef CheckName);

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_METAGUARDMODULE_H
