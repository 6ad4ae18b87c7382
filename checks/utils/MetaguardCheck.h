//===--- MetaguardCheck.h - metaguard-tidy ---------------------*- C++ -*-===//
//
// What every metaguard check is besides its own analysis: a C++-only check
// that sees the AST as written (TK_AsIs), with its options' values from
// Options.def, whole-program mode (SummaryFile/ExportSummaries), and the
// user's calls and variables from the matchers all metaguard checks share.
// A check derives from MetaguardCheck<check_bit::ClassName> and states only
// what differs: check() and endTranslationUnit().
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_METAGUARDCHECK_H
#define METAGUARD_CHECKS_UTILS_METAGUARDCHECK_H

#include "CheckOptions.h"
#include "utils/ClangCompat.h"
#include "utils/analysis/UserCodeMatchers.h"
#include "utils/summaries/WholeProgram.h"

#include "clang-tidy/ClangTidyCheck.h"

#include <memory>

namespace clang::tidy::metaguard {

template <unsigned Check> class MetaguardCheck : public ClangTidyCheck {
public:
  MetaguardCheck(llvm::StringRef Name, ClangTidyContext *Context)
      : ClangTidyCheck(Name, Context), Values(readCheckOptions<Check>(Options)),
        Facts(Name, Options) {}

  bool isLanguageVersionSupported(const LangOptions &LangOpts) const final {
    return LangOpts.CPlusPlus;
  }
  compat::Optional<TraversalKind> getCheckTraversalKind() const final {
    return TK_AsIs;
  }
  void storeOptions(ClangTidyOptions::OptionMap &Opts) final {
    storeCheckOptions(Values, Options, Opts);
    Facts.storeOptions(Options, Opts);
  }
  // Every check starts from the user's calls, constructions or variables:
  // one shared matcher per node kind rather than one per check keeps LLVM <
  // 22, which tries every matcher on every node, from paying three times
  // over LibTorch's headers (docs/contributing.md).
  void registerMatchers(ast_matchers::MatchFinder *Finder) final {
    Facts.registerMatchers(Finder);
    UserCode = UserCodeMatchers::subscribe(Finder, this);
  }
  void onEndOfTranslationUnit() final {
    endTranslationUnit();
    Summaries.reset();
  }

protected:
  /// Exports the TU's facts (Facts.exportTable) and forgets its per-TU state;
  /// the summary table held in Summaries is dropped afterwards.
  virtual void endTranslationUnit() = 0;

  const OptionValues<Check> Values;
  /// Whole-program mode: SummaryFile / ExportSummaries.
  WholeProgramFacts Facts;
  /// The TU's summary table, for a check that holds it (Facts.table).
  std::shared_ptr<SummaryTable> Summaries;

private:
  /// The matches check() receives.
  UserCodeMatchers::Subscription UserCode;
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_METAGUARDCHECK_H
