//===--- WholeProgram.h - metaguard-tidy -----------------------*- C++ -*-===//
//
// Whole-program mode, as each check sees it: two options and the plumbing
// behind them, so that a check only forwards four calls.
//
//   SummaryFile      read: the merged index (or a facts file, or a folder of
//                    them) whose summaries stand in for the bodies of
//                    functions defined in other translation units.
//   ExportSummaries  write: at the end of the TU, its facts file (the
//                    summaries of the functions it defines, what it defines
//                    and calls, the files it read). A folder (an existing
//                    one, or a value ending in '/') gets one file per TU.
//
// Both are read with getLocalOrGlobal, so `CheckOptions: {SummaryFile: ...}`
// sets them for every metaguard check. The environment variables
// METAGUARD_SUMMARY_FILE and METAGUARD_EXPORT_SUMMARIES, when set (even to
// an empty value, which turns the option off), override them: that
// is how metaguard-tidy --whole-program passes them without replacing the
// project's .clang-tidy (clang-tidy takes one --config, which hides the
// .clang-tidy files).
//
// A relative SummaryFile is looked up from the folder clang-tidy runs in,
// then from the main file's folder and each parent, the way .clang-tidy is
// found, so one relative path in a .clang-tidy serves run-clang-tidy-19 and
// clangd alike.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_SUMMARIES_WHOLEPROGRAM_H
#define METAGUARD_CHECKS_UTILS_SUMMARIES_WHOLEPROGRAM_H

#include "utils/summaries/FunctionSummaries.h"
#include "utils/summaries/FunctionSummary.h"
#include "utils/summaries/SummaryFacts.h"

#include "clang-tidy/ClangTidyCheck.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseSet.h"

#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace clang::tidy::metaguard {

class WholeProgramFacts : public ast_matchers::MatchFinder::MatchCallback {
public:
  /// In the check's constructor: WholeProgramFacts(Name, Options).
  WholeProgramFacts(llvm::StringRef CheckName,
                    ClangTidyCheck::OptionsView &Options);

  /// In the check's storeOptions.
  void storeOptions(ClangTidyCheck::OptionsView &Options,
                    ClangTidyOptions::OptionMap &Opts) const;

  /// In the check's registerMatchers. Matches only for its own needs (the
  /// main file; with ExportSummaries, definitions and calls), with itself as
  /// the callback: the check's check() is not involved.
  void registerMatchers(ast_matchers::MatchFinder *Finder);

  /// The summary of a function defined in another translation unit, or
  /// nullptr (unknown). The fallback of the TU's own summary table.
  const FunctionSummary *findExternalSummary(llvm::StringRef USR) {
    return External.findExternalSummary(USR);
  }
  const FunctionSummary *findExternalSummary(const FunctionDecl *FD);

  /// In the check's onEndOfTranslationUnit: writes the TU's facts file when
  /// ExportSummaries is set (with Summaries, the functions this TU defines,
  /// combined with what the other metaguard checks export for the same
  /// file), and forgets the TU. With a SummaryFile, Summaries take in the
  /// summaries of callees in other TUs: metaguard-tidy's rounds carry facts
  /// along chains of calls through several files that way.
  void exportSummaries(llvm::ArrayRef<FunctionSummary> Summaries);

  /// In the check's onEndOfTranslationUnit, instead of exportSummaries:
  /// computes Facets of Table for every function this TU defines that
  /// another TU can call, and exports those summaries (with Table's
  /// external lookup folded in when a SummaryFile was read). Forgets the TU
  /// either way.
  void exportTable(const std::function<SummaryTable &(ASTContext &)> &Table,
                   llvm::ArrayRef<const FacetKind *> Facets);

  /// The TU's shared summary table, held in Held (created on first use),
  /// with this check's facets registered and, when a SummaryFile was read,
  /// its summaries as the fallback for functions defined elsewhere.
  SummaryTable &table(std::shared_ptr<SummaryTable> &Held, ASTContext &Context,
                      std::initializer_list<SummaryFacet *> Facets);

  bool exporting() const { return !ExportPath.empty(); }
  bool readsSummaries() const { return !External.path().empty(); }

  void run(const ast_matchers::MatchFinder::MatchResult &Result) override;

private:
  std::string CheckName;
  std::string SummaryFileOption;
  std::string ExportOption;
  std::string ExportPath; ///< Option or environment, as given.
  ExternalSummaries External;

  // Per translation unit.
  const SourceManager *SM = nullptr;
  std::string MainFile;
  std::set<std::string> Defines;
  std::vector<const FunctionDecl *> Definitions; ///< Those of Defines.
  ASTContext *Context = nullptr;
  std::set<std::string> Uses;
  /// Overridden method -> the overrides this TU defines (USRs).
  std::map<std::string, std::set<std::string>> Overrides;
  /// std::function slot -> the functions this TU stores into it (USRs).
  std::map<std::string, std::set<std::string>> Stores;
  llvm::DenseSet<const FunctionDecl *> Seen;

  /// Lists FD (a function called here) among the TU's uses, unless it is
  /// the standard library's or LibTorch's (known by name, not by summary).
  void addUse(const FunctionDecl *FD);
  /// Whether another TU can name Slot (a data member, a variable with
  /// external linkage, a helper with external linkage that returns a
  /// table): its stores and calls through it are facts.
  bool sharedAcrossFiles(const ValueDecl *Slot) const;
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_SUMMARIES_WHOLEPROGRAM_H
