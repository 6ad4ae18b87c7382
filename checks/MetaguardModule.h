//===--- MetaguardModule.h - metaguard-tidy --------------------*- C++ -*-===//
//
// The clang-tidy module holding the metaguard-* checks. Registered by the
// plugin (MetaguardTidyModule.cpp, after a host version check) and by
// metaguard-clangd (clangd/MetaguardClangd.cpp, unconditionally).
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_METAGUARDMODULE_H
#define METAGUARD_CHECKS_METAGUARDMODULE_H

#include "clang-tidy/ClangTidyModule.h"

namespace clang::tidy::metaguard {

/// Name and description the module is registered under.
inline constexpr const char *ModuleName = "metaguard-module";
inline constexpr const char *ModuleDescription =
    "metaguard: checks that stop model-loading bugs.";

class MetaguardModule : public ClangTidyModule {
public:
  void addCheckFactories(ClangTidyCheckFactories &CheckFactories) override;
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_METAGUARDMODULE_H
