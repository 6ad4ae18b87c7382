//===--- EmptyModelUsedCheck.h - metaguard-tidy ----------------*- C++ -*-===//
//
// metaguard-empty-model-used: flags a use of a model built empty (while the
// meta device is ambient) before anything gives it weights on that path: a
// forward pass, a move to a device, save_pretrained, reading a parameter's
// data, an optimizer's step; directly, through helpers and methods, and
// across files with function summaries.
//
// The check decides which functions to look at; the analysis is
// EmptyModelFinder's, the diagnostics are EmptyModelReporter's.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_EMPTY_MODEL_USED_EMPTYMODELUSEDCHECK_H
#define METAGUARD_CHECKS_EMPTY_MODEL_USED_EMPTYMODELUSEDCHECK_H

#include "EmptyModelFinder.h"
#include "EmptyModelReporter.h"
#include "utils/MetaguardCheck.h"
#include "utils/domain/AmbientDevice.h"

namespace clang::tidy::metaguard {

/// Flags uses of empty models before their weights.
///
/// For the user-facing documentation see
/// docs/checks/metaguard-empty-model-used.md.
class EmptyModelUsedCheck
    : public MetaguardCheck<check_bit::EmptyModelUsedCheck> {
public:
  EmptyModelUsedCheck(llvm::StringRef Name, ClangTidyContext *Context);
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;

private:
  void endTranslationUnit() override;
  /// The TU's summary table, with the facets of this check registered.
  SummaryTable &summaries(ASTContext &Context);

  AmbientDevice Ambient;
  EmptyModelReporter Reporter;
  EmptyModelFinder Finder;
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_EMPTY_MODEL_USED_EMPTYMODELUSEDCHECK_H
