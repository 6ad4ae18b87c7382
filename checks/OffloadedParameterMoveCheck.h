//===--- OffloadedParameterMoveCheck.h - metaguard-tidy --------*- C++ -*-===//
//
// metaguard-offloaded-parameter-move: flags code that makes the offloaded
// parameters of a dispatched model unreachable or writes them where the
// write never lands: moving the model, writing, replacing or moving its
// parameters (in-place methods, initialisers, optimizers, checkpoints), or
// removing its offloading hooks and then needing them.
//
// The check holds the options and decides which functions to look at; the
// analysis is OffloadedParameterFinder's, the diagnostics are
// OffloadedParameterReporter's.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_OFFLOADEDPARAMETERMOVECHECK_H
#define METAGUARD_CHECKS_OFFLOADEDPARAMETERMOVECHECK_H

#include "OffloadedParameterFinder.h"
#include "OffloadedParameterReporter.h"
#include "utils/ClangCompat.h"
#include "utils/analysis/UserCodeMatchers.h"
#include "utils/summaries/WholeProgram.h"

#include "clang-tidy/ClangTidyCheck.h"

namespace clang::tidy::metaguard {

/// Flags moves of dispatched models, hand-made replacements of their
/// parameters, and uses of their hooks after the hooks were removed.
///
/// For the user-facing documentation see
/// docs/checks/metaguard-offloaded-parameter-move.md.
class OffloadedParameterMoveCheck : public ClangTidyCheck {
public:
  OffloadedParameterMoveCheck(llvm::StringRef Name, ClangTidyContext *Context);
  bool isLanguageVersionSupported(const LangOptions &LangOpts) const override {
    return LangOpts.CPlusPlus;
  }
  compat::Optional<TraversalKind> getCheckTraversalKind() const override {
    return TK_AsIs;
  }
  void storeOptions(ClangTidyOptions::OptionMap &Opts) override;
  void registerMatchers(ast_matchers::MatchFinder *Finder) override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;
  void onEndOfTranslationUnit() override;

private:
  const OffloadedParameterOptions Values;
  /// Whole-program mode: SummaryFile / ExportSummaries.
  WholeProgramFacts Facts;
  OffloadedParameterReporter Report;
  OffloadedParameterFinder Analysis;
  /// The matches check() receives.
  UserCodeMatchers::Subscription UserCode;
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_OFFLOADEDPARAMETERMOVECHECK_H
