//===--- LoadFacts.h - metaguard-tidy --------------------------*- C++ -*-===//
//
// The loads facet's facts: whether a function loads weights, at any depth,
// and where. Keys in a facts file:
//   "loads_weights": false, "loads_at": {"file", "line", "column"},
//   "loader": "from_pretrained", "loads_in": "app::load_encoder",
//   "loads_depth": 0, "loads_only_after_setting_device": false,
//   "loads_only_on_other_threads": false
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_DOMAIN_LOADFACTS_H
#define METAGUARD_CHECKS_UTILS_DOMAIN_LOADFACTS_H

#include "utils/summaries/FunctionSummary.h"

namespace clang::tidy::metaguard {

struct LoadFacts {
  static constexpr const char *Name = "loads";

  bool LoadsWeights = false; ///< Transitively, at any depth.
  SourceRef LoadsAt;         ///< The loader call (possibly in a callee).
  std::string Loader;        ///< The loader's name, e.g. "from_pretrained".
  std::string LoadsIn;       ///< The function the loader call is in.
  /// Calls of user code between this function and the loader call (0: it
  /// calls the loader itself); calls through the standard library, LibTorch
  /// and module holders do not count. Compared with the CallDepth option.
  unsigned LoadsDepth = 0;
  /// Every load runs after the function set the default device itself, so
  /// a meta default device of the caller does not reach them (a meta scope
  /// of the caller still does: a scope wins over the default device).
  bool LoadsOnlyAfterSettingDevice = false;
  /// Every load runs on a thread the function starts (std::thread,
  /// std::async), so a meta scope of the caller does not reach them (scopes
  /// belong to one thread); the caller's default device still does.
  bool LoadsOnlyOnOtherThreads = false;

  bool empty() const { return !LoadsWeights; }
  bool same(const LoadFacts &O) const {
    return LoadsWeights == O.LoadsWeights && LoadsDepth == O.LoadsDepth &&
           LoadsOnlyAfterSettingDevice == O.LoadsOnlyAfterSettingDevice &&
           LoadsOnlyOnOtherThreads == O.LoadsOnlyOnOtherThreads &&
           LoadsAt == O.LoadsAt && Loader == O.Loader && LoadsIn == O.LoadsIn;
  }
  void write(FactJson &J) const;
  void read(FactReader &R);
  static std::vector<MergeRule> mergeRules();
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_DOMAIN_LOADFACTS_H
