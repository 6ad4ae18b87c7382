//===--- OffloadedParameterMoveCheck.h - metaguard-tidy --------*- C++ -*-===//
//
// metaguard-offloaded-parameter-move: flags code that makes the offloaded
// parameters of a dispatched model unreachable or writes them where the
// write never lands: moving the model, writing, replacing or moving its
// parameters (in-place methods, initialisers, optimizers, checkpoints), or
// removing its offloading hooks and then needing them.
//
// The check decides which functions to look at; the analysis (which holds
// the TU's summary table) is OffloadedParameterFinder's, the diagnostics are
// OffloadedParameterReporter's.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_OFFLOADED_PARAMETER_MOVE_OFFLOADEDPARAMETERMOVECHECK_H
#define METAGUARD_CHECKS_OFFLOADED_PARAMETER_MOVE_OFFLOADEDPARAMETERMOVECHECK_H

#include "OffloadedParameterFinder.h"
#include "OffloadedParameterReporter.h"
#include "utils/MetaguardCheck.h"

namespace clang::tidy::metaguard {

/// Flags moves of dispatched models, hand-made replacements of their
/// parameters, and uses of their hooks after the hooks were removed.
///
/// For the user-facing documentation see
/// docs/checks/metaguard-offloaded-parameter-move.md.
class OffloadedParameterMoveCheck
    : public MetaguardCheck<check_bit::OffloadedParameterMoveCheck> {
public:
  OffloadedParameterMoveCheck(llvm::StringRef Name, ClangTidyContext *Context);
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;

private:
  void endTranslationUnit() override;

  OffloadedParameterReporter Report;
  OffloadedParameterFinder Analysis;
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_OFFLOADED_PARAMETER_MOVE_OFFLOADEDPARAMETERMOVECHECK_H
