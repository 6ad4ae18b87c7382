//===--- EmptyModelUsedCheck.h - metaguard-tidy ----------------*- C++ -*-===//
//
// metaguard-empty-model-used: flags a use of a model built empty (while the
// meta device is ambient) before anything gives it weights on that path: a
// forward pass, a move to a device, save_pretrained, reading a parameter's
// data, an optimizer's step; directly, through helpers and methods, and
// across files with function summaries.
//
// The check holds the options and decides which functions to look at; the
// analysis is EmptyModelFinder's, the diagnostics are EmptyModelReporter's.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_EMPTYMODELUSEDCHECK_H
#define METAGUARD_CHECKS_EMPTYMODELUSEDCHECK_H

#include "EmptyModelFinder.h"
#include "EmptyModelReporter.h"
#include "utils/ClangCompat.h"
#include "utils/analysis/UserCodeMatchers.h"
#include "utils/domain/AmbientDevice.h"
#include "utils/summaries/WholeProgram.h"

#include "clang-tidy/ClangTidyCheck.h"

#include <memory>

namespace clang::tidy::metaguard {

/// Flags uses of empty models before their weights.
///
/// For the user-facing documentation see
/// docs/checks/metaguard-empty-model-used.md.
class EmptyModelUsedCheck : public ClangTidyCheck {
public:
  EmptyModelUsedCheck(llvm::StringRef Name, ClangTidyContext *Context);
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
  /// The TU's summary table, with the facets of this check registered.
  SummaryTable &summaries(ASTContext &Context);

  const EmptyModelOptions Values;
  AmbientDevice Ambient;
  EmptyModelReporter Reporter;
  EmptyModelFinder Finder;

  // Per translation unit.
  std::shared_ptr<SummaryTable> Summaries;
  /// Whole-program mode: SummaryFile / ExportSummaries.
  WholeProgramFacts Facts;
  /// The matches check() receives.
  UserCodeMatchers::Subscription UserCode;
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_EMPTYMODELUSEDCHECK_H
