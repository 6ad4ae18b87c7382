//===--- FromPretrainedInMetaScopeCheck.h - metaguard-tidy -----*- C++ -*-===//
//
// metaguard-from-pretrained-in-meta-scope: flags a call that loads pretrained
// weights while the ambient device is meta (a live meta-device scope, a
// lambda run by with_meta_device, or a default device set to meta), directly
// or through functions it calls.
//
// The check decides which functions to look at; the analysis is
// MetaScopeLoadFinder's, the diagnostics are MetaScopeLoadReporter's.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_FROM_PRETRAINED_IN_META_SCOPE_FROMPRETRAINEDINMETASCOPECHECK_H
#define METAGUARD_CHECKS_FROM_PRETRAINED_IN_META_SCOPE_FROMPRETRAINEDINMETASCOPECHECK_H

#include "MetaScopeLoadFinder.h"
#include "MetaScopeLoadReporter.h"
#include "utils/MetaguardCheck.h"
#include "utils/domain/AmbientDevice.h"
#include "utils/domain/ReturnedOptions.h"

namespace clang::tidy::metaguard {

/// Flags loader calls (LoaderFunctions, or functions annotated
/// metaguard::loads_weights) that run while the meta device is ambient.
///
/// For the user-facing documentation see
/// docs/checks/metaguard-from-pretrained-in-meta-scope.md.
class FromPretrainedInMetaScopeCheck
    : public MetaguardCheck<check_bit::FromPretrainedInMetaScopeCheck> {
public:
  FromPretrainedInMetaScopeCheck(llvm::StringRef Name,
                                 ClangTidyContext *Context);
  ~FromPretrainedInMetaScopeCheck() override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;

private:
  void endTranslationUnit() override;
  /// The TU's summary table, with the facets of this check registered.
  SummaryTable &summaries(ASTContext &Context);

  AmbientDevice Ambient;
  MetaScopeLoadReporter Reporter;
  MetaScopeLoadFinder Finder;
  ReturnedOptionsFacet OptionsFacetImpl;
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_FROM_PRETRAINED_IN_META_SCOPE_FROMPRETRAINEDINMETASCOPECHECK_H
