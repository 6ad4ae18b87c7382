//===--- SummaryMerge.h - metaguard-tidy -----------------------*- C++ -*-===//
//
// Merging the summaries that several translation units export for one
// function (one USR).
//
// Usually they agree: an inline function or a template defined in a header
// is summarised identically by every TU that includes it. When they do not
// (an ODR violation, a header compiled with different macros in two
// targets), the merge is conservative: the merged summary states only what
// every version states, by each fact's MergeRule (FunctionSummary.h). A fact
// they disagree on becomes its "unknown" value (Agree) or is dropped (All,
// and the items of an Each list not in every version), so a call to that
// function behaves as it did before whole-program mode for that fact: no
// finding is ever built on a disputed fact. Each conflicting USR is reported
// once, naming the facts and where the versions came from.
//
// The merge works on the JSON form of summaries with the rules alone, and
// knows no facet. Facts files carry the rules of their facets
// ("merge_rules"), so that the driver (tools/metaguard_wholeprogram.py,
// merge_summaries) applies the same algorithm when it writes the merged
// index; test/tools/whole-program-conflicts checks that both agree.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_SUMMARIES_SUMMARYMERGE_H
#define METAGUARD_CHECKS_UTILS_SUMMARIES_SUMMARYMERGE_H

#include "utils/summaries/FactJson.h"
#include "utils/summaries/FunctionSummary.h"

#include "llvm/ADT/StringRef.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace clang::tidy::metaguard {

/// The rules of Kinds as a facts file's "merge_rules" object:
///   {"default_device": {"merge": "agree", "default": "unchanged",
///                       "disputed": "unknown",
///                       "details": ["default_device_at"]},
///    "loads_weights": {"merge": "all", "details": ["loads_at", ...]},
///    "args": {"merge": "each", "by": "index",
///             "facts": {"moves": {"merge": "all"}, ...}}}
FactJson mergeRulesToJson(const std::vector<const FacetKind *> &Kinds);

struct SummaryConflict {
  std::string USR;
  std::string Name;
  /// Where each version came from (facts files), first one first.
  std::vector<std::string> Sources;
  /// The facts they disagree on, sorted.
  std::vector<std::string> Facts;
  /// One line for a person.
  std::string message() const;
};

/// Collects summaries from several sources, merging by USR. Where a fact
/// survives the merge, its details (where, through what) come from the
/// first version. Names and source locations are not facts: the same
/// function seen through two include paths may spell its file differently.
class SummaryMerger {
public:
  void add(const FunctionSummary &S, llvm::StringRef Source);
  /// One entry per USR whose versions disagreed (on facts named by their
  /// JSON key, e.g. "loads_weights", "args[0].moves"), ordered by USR.
  std::vector<SummaryConflict> conflicts() const;
  /// The merged summaries, keyed by USR; the merger is empty afterwards.
  std::map<std::string, FunctionSummary> take();

private:
  /// A function's first version and, once a second one came, the merge so
  /// far in its facts-file form, which the rules work on: a function that
  /// many files export (an inline one) is converted to that form once, and
  /// back once, not at every merge.
  struct Entry {
    FunctionSummary First;
    std::optional<FactJson> Merged;
  };
  std::map<std::string, Entry> Entries;
  std::map<std::string, std::vector<std::string>> SourcesOf;
  std::map<std::string, std::vector<std::string>> ConflictFacts;
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_SUMMARIES_SUMMARYMERGE_H
