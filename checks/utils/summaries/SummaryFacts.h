//===--- SummaryFacts.h - metaguard-tidy -----------------------*- C++ -*-===//
//
// The summaries of functions defined in other translation units, read from
// the file named by the checks' SummaryFile option: the merged index that
// `metaguard-tidy --whole-program` writes, one TU's facts file, or a folder
// of facts files (merged here, see SummaryMerge.h).
//
// A facts file is read once per process and version: clang-tidy checks one
// TU per process (run-clang-tidy-19, metaguard-tidy) but clangd parses many,
// in several threads, with the same file. A stale, missing or broken file
// never stops a run: what cannot be read is reported once on stderr and its
// functions are unknown, as if whole-program mode were off.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_SUMMARIES_SUMMARYFACTS_H
#define METAGUARD_CHECKS_UTILS_SUMMARIES_SUMMARYFACTS_H

#include "utils/summaries/FunctionSummary.h"

#include "llvm/ADT/StringRef.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace clang::tidy::metaguard {

/// The merged summaries of one SummaryFile, by USR. Immutable once loaded.
struct ExternalFacts {
  std::map<std::string, FunctionSummary, std::less<>> Functions;
  /// Method -> the overrides other TUs define (direct ones), by USR.
  std::map<std::string, std::set<std::string>, std::less<>> Overrides;
  /// std::function variable, member or table -> the functions other TUs
  /// store into it, by USR.
  std::map<std::string, std::set<std::string>, std::less<>> Stores;
  const FunctionSummary *find(llvm::StringRef USR) const {
    auto It = Functions.find(USR);
    return It == Functions.end() ? nullptr : &It->second;
  }
};

/// The table of Path, reloaded only when the file (or a file of the folder)
/// changed size or modification time. Never null; empty when Path cannot be
/// read. Problems are written to stderr once per version of Path, each line
/// starting "metaguard: ". Safe to call from several threads.
std::shared_ptr<const ExternalFacts> loadExternalFacts(llvm::StringRef Path);

/// The external summaries one translation unit sees.
class ExternalSummaries {
public:
  /// Path: the SummaryFile option; empty for none.
  explicit ExternalSummaries(std::string Path) : Path(std::move(Path)) {}

  /// The summary of the function with this USR from the SummaryFile, or
  /// nullptr when there is none (no file, not in it, unreadable): unknown.
  /// The pointer stays valid until reset().
  const FunctionSummary *findExternalSummary(llvm::StringRef USR);

  /// The summaries of the overrides of the method with this USR, at any
  /// depth, that the SummaryFile knows of (virtual calls).
  std::vector<const FunctionSummary *> findOverrides(llvm::StringRef USR);

  /// The summaries of the functions stored into the std::function variable,
  /// member or table with this USR that the SummaryFile knows of.
  std::vector<const FunctionSummary *> findStored(llvm::StringRef USR);

  /// Loads the file now, if there is one (see loadExternalFacts).
  void load() {
    if (!Path.empty() && !Table)
      Table = loadExternalFacts(Path);
  }

  /// At the end of a translation unit: the next one re-checks the file.
  void reset() { Table.reset(); }

  /// Points at another file (e.g. once a relative path is resolved).
  void setPath(std::string NewPath) {
    if (NewPath != Path)
      Table.reset();
    Path = std::move(NewPath);
  }

  const std::string &path() const { return Path; }

private:
  std::string Path;
  std::shared_ptr<const ExternalFacts> Table;
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_SUMMARIES_SUMMARYFACTS_H
