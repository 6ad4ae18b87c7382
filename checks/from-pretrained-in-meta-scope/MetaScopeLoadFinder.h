//===--- MetaScopeLoadFinder.h - metaguard-tidy ----------------*- C++ -*-===//
//
// The analysis of metaguard-from-pretrained-in-meta-scope: in one function,
// the loader calls (and the calls that reach one, by the LoadFacts of the
// functions they run) that run while the meta device is ambient
// (AmbientDevice); and inside a visible loader's own implementation, the
// place where it builds the model on meta and a part of it loads there.
// Findings go to the reporter.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_FROM_PRETRAINED_IN_META_SCOPE_METASCOPELOADFINDER_H
#define METAGUARD_CHECKS_FROM_PRETRAINED_IN_META_SCOPE_METASCOPELOADFINDER_H

#include "MetaScopeLoadReporter.h"
#include "utils/analysis/InvokedCallables.h"
#include "utils/domain/AmbientDevice.h"

#include "llvm/ADT/DenseSet.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <tuple>

namespace clang::tidy::metaguard {

class MetaScopeLoadFinder {
public:
  using SummariesFn = std::function<SummaryTable &(ASTContext &)>;

  /// Summaries: the translation unit's table, with this finder's facet and
  /// the AmbientDevice's registered.
  MetaScopeLoadFinder(AmbientDevice &Ambient, MetaScopeLoadReporter &Reporter,
                      unsigned CallDepth, SummariesFn Summaries);
  ~MetaScopeLoadFinder();

  /// The facet that computes LoadFacts, for the summary table.
  SummaryFacet *facet();

  /// Reports the loads in F (Lambda's call operator, when F is one) that run
  /// on meta; each function once per translation unit.
  void analyzeFunction(const FunctionDecl *F, const LambdaExpr *Lambda,
                       ASTContext &Context);
  /// Reports Call, to a loader whose implementation is visible, when that
  /// implementation builds the model on meta and building it loads.
  void checkLoaderBuildsOnMeta(const CallExpr *Call, ASTContext &Context);

  /// At the end of a translation unit.
  void clear();

private:
  /// Which kind of meta state an inner loader call must be exposed to.
  enum class Exposure { Scope, DefaultDevice };
  /// The facet of LoadFacts (MetaScopeLoadCollector.cpp).
  class LoadsFacet;
  std::unique_ptr<SummaryFacet> makeLoadsFacet();
  /// Calls that are plumbing between user functions and do not count
  /// towards CallDepth.
  static bool isFreeHop(const FunctionDecl *FD);
  /// The body of a thread Call starts (std::thread, std::jthread, a
  /// container's emplace of one, std::async that may launch one); a
  /// std::function given to one runs whatever the translation unit stores
  /// in it.
  static std::optional<InvokedCallable> threadStartedBy(const Expr *Call,
                                                        SummaryTable &Table);

  void checkScopeFunctionCall(const Expr *Call, ASTContext &Context);
  /// Reports Call (in F) when it loads, or runs a load, on meta.
  void checkCallOnMeta(const Expr *Call, const FunctionDecl *F,
                       AmbientDevice::InFunction &Here, ASTContext &Context);
  /// Reports Call when the callable it starts (a thread's body) or runs (a
  /// deferred task) loads while Origin's meta state reaches it.
  void checkCallableOnMeta(const Expr *Call, const InvokedCallable &Callable,
                           const AmbientDevice::Origin &Origin,
                           ASTContext &Context);
  /// Whether a loader call in F gets a device map: visibly, or from a
  /// helper that builds its options. Its weights are then placed by the map.
  bool hasDeviceMap(const Expr *Call, const FunctionDecl *F,
                    ASTContext &Context);
  /// The load that a call to Callee exposes to the caller's meta state of
  /// kind Kind, from Callee's summary; std::nullopt when there is none or it
  /// is deeper than CallDepth.
  std::optional<InnerLoad> exposedLoad(const FunctionDecl *Callee,
                                       Exposure Kind, ASTContext &Context);
  /// The same for a call whose target's summary is S (FreeHop: the target
  /// is plumbing that CallDepth does not count).
  std::optional<InnerLoad> exposedLoad(const FunctionSummary *S, bool FreeHop,
                                       Exposure Kind, ASTContext &Context);
  /// A load that runs under a meta scope somewhere inside F (a loader's own
  /// implementation), e.g. from_pretrained<M> building M on meta when M's
  /// constructor loads a pretrained part.
  std::optional<InnerLoad> findMetaLoadWithin(const FunctionDecl *F,
                                              unsigned Depth, unsigned FreeHops,
                                              ASTContext &Context);

  AmbientDevice &Ambient;
  MetaScopeLoadReporter &Reporter;
  const unsigned CallDepth;
  SummariesFn Summaries;
  std::unique_ptr<SummaryFacet> Loads;

  // Per translation unit.
  llvm::DenseSet<const FunctionDecl *> Analyzed;
  using WithinKey = std::tuple<const FunctionDecl *, unsigned, unsigned>;
  std::map<WithinKey, std::optional<InnerLoad>> WithinMemo;
  llvm::DenseSet<const FunctionDecl *> WithinInProgress;
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_FROM_PRETRAINED_IN_META_SCOPE_METASCOPELOADFINDER_H
