//===--- FromPretrainedInMetaScopeCheck.h - metaguard-tidy -----*- C++ -*-===//
//
// metaguard-from-pretrained-in-meta-scope: flags a call that loads pretrained
// weights while the ambient device is meta (a live meta-device scope, a
// lambda run by with_meta_device, or a default device set to meta), directly
// or through functions it calls.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_FROMPRETRAINEDINMETASCOPECHECK_H
#define METAGUARD_CHECKS_FROMPRETRAINEDINMETASCOPECHECK_H

#include "CheckOptions.h"
#include "MetaScopeLoadFinder.h"
#include "MetaScopeLoadReporter.h"
#include "utils/ClangCompat.h"
#include "utils/analysis/UserCodeMatchers.h"
#include "utils/domain/AmbientDevice.h"
#include "utils/domain/ReturnedOptions.h"
#include "utils/summaries/WholeProgram.h"

#include "clang-tidy/ClangTidyCheck.h"

#include <memory>
#include <string>

namespace clang::tidy::metaguard {

/// Flags loader calls (LoaderFunctions, or functions annotated
/// metaguard::loads_weights) that run while the meta device is ambient.
///
/// For the user-facing documentation see
/// docs/checks/metaguard-from-pretrained-in-meta-scope.md.
class FromPretrainedInMetaScopeCheck : public ClangTidyCheck {
public:
  FromPretrainedInMetaScopeCheck(llvm::StringRef Name,
                                 ClangTidyContext *Context);
  ~FromPretrainedInMetaScopeCheck() override;
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

  const OptionValues<check_bit::FromPretrainedInMetaScopeCheck> Values;

  AmbientDevice Ambient;
  MetaScopeLoadReporter Reporter;
  MetaScopeLoadFinder Finder;
  ReturnedOptionsFacet OptionsFacetImpl;

  // Per translation unit.
  std::shared_ptr<SummaryTable> Summaries;
  /// Whole-program mode: SummaryFile / ExportSummaries.
  WholeProgramFacts Facts;
  /// The matches check() receives.
  UserCodeMatchers::Subscription UserCode;
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_FROMPRETRAINEDINMETASCOPECHECK_H
