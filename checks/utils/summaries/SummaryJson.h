//===--- SummaryJson.h - metaguard-tidy ------------------------*- C++ -*-===//
//
// FunctionSummary <-> JSON (the keys of each facet, FunctionSummary.h), and
// the facts file of one translation unit that carries them.
//
// Reading never throws and never aborts, whatever the input: the plugin may
// be built without exceptions (LLVM's flags), and a stale or hand-edited
// facts file must not take clang-tidy or clangd down. A bad value makes its
// function entry unusable and yields a message naming the file, the entry
// and the key; the other entries are kept.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_SUMMARIES_SUMMARYJSON_H
#define METAGUARD_CHECKS_UTILS_SUMMARIES_SUMMARYJSON_H

#include "utils/summaries/FactJson.h"
#include "utils/summaries/FunctionSummary.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace clang::tidy::metaguard {

/// The facts file of one translation unit (one JSON object):
///   { "metaguard_facts": 1, "tu": "/abs/main.cpp",
///     "functions": [ <FunctionSummary>... ],
///     "merge_rules": { <key>: <MergeRule>... },  (SummaryMerge.h)
///     "defines": [ <USR of each function with a body here>... ],
///     "uses":    [ <USR of each called function with no body here>... ],
///     "inputs":  [ <every file the TU read>... ] }
/// A merged index has the same shape without "tu"/"defines"/"uses"/"inputs"
/// and with "metaguard_facts_index": 1 and "conflicts": [...] instead.
/// "defines", "uses" and "inputs" are for the driver (what to re-check,
/// what to re-summarise); the checks only read "functions".
struct TranslationUnitFacts {
  std::string MainFile;
  std::vector<FunctionSummary> Functions;
  std::vector<std::string> Defines;
  std::vector<std::string> Uses;
  std::vector<std::string> Inputs;
  /// Overridden method -> the overrides the TU defines (USRs): a virtual
  /// call in another TU may run them.
  std::map<std::string, std::vector<std::string>> Overrides;
  /// std::function variable, member or table -> the functions the TU stores
  /// into it (USRs): a call through it in another TU may run them.
  std::map<std::string, std::vector<std::string>> Stores;
};

/// The current version of the format; files with a larger one are refused.
constexpr unsigned FactsFormatVersion = 1;

/// A summary as a facts file's entry. Default values are written too: a
/// reader of the file (a person, the driver) need not know the defaults.
FactJson summaryObject(const FunctionSummary &S);
/// Reads one function's entry; nullopt with Error ("key \"loads_at\": ...")
/// when a value is not of its key's type.
std::optional<FunctionSummary> summaryFromObject(const ReadJson &Entry,
                                                 std::string &Error);
std::string factsToJson(const TranslationUnitFacts &Facts);

/// The result of reading a facts file or index: the usable summaries and
/// one message per problem ("<path>: functions[3] (\"c:@F@f#\"): key
/// \"loads_weights\": expected a boolean, got a string").
struct ParsedFacts {
  TranslationUnitFacts Facts;
  std::vector<std::string> Errors;
  /// The whole file was unusable (not JSON, not an object, newer format).
  bool Unreadable = false;
};

/// Parses Text, the contents of the file Path (used in messages only).
ParsedFacts parseFacts(llvm::StringRef Text, llvm::StringRef Path);

/// Writes Contents to Path atomically: a temporary file beside it, then a
/// rename, so a reader (another clang-tidy, clangd, the driver) sees the old
/// file or the new one, never half of one. Creates missing parent folders.
/// Returns an empty string on success, else why it failed.
std::string writeFileAtomically(llvm::StringRef Path, llvm::StringRef Contents);

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_SUMMARIES_SUMMARYJSON_H
