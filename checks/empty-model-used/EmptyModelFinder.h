//===--- EmptyModelFinder.h - metaguard-tidy -------------------*- C++ -*-===//
//
// The analysis behind metaguard-empty-model-used: in one function, the
// models built empty (while the meta device is ambient there, as
// AmbientDevice says, or by a factory, constructor or method whose summary
// says so) and the uses of them that a path reaches before anything gives
// them weights; and the empty-model facet of the function summaries (what a
// function returns, does to its arguments and to its object's member
// models), which carries all of it through helpers and across files. What
// it finds, it hands to the reporter.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_EMPTY_MODEL_USED_EMPTYMODELFINDER_H
#define METAGUARD_CHECKS_EMPTY_MODEL_USED_EMPTYMODELFINDER_H

#include "CheckOptions.h"
#include "EmptyModelEvents.h"
#include "EmptyModelReporter.h"
#include "utils/domain/AmbientDevice.h"
#include "utils/domain/TensorWrites.h"

#include "llvm/ADT/DenseSet.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace clang::tidy::metaguard {

/// The check's option values, as given (declared in Options.def).
using EmptyModelOptions = OptionValues<check_bit::EmptyModelUsedCheck>;

class EmptyModelFinder {
public:
  using SummariesFn = std::function<SummaryTable &(ASTContext &)>;

  /// Summaries: the translation unit's table, with this finder's facet and
  /// the AmbientDevice's registered.
  EmptyModelFinder(AmbientDevice &Ambient, const EmptyModelOptions &Options,
                   EmptyModelReporter &Reporter, SummariesFn Summaries);
  ~EmptyModelFinder();

  /// The facet that computes EmptyModelFacts, for the summary table.
  SummaryFacet *facet();

  /// Whether Call (to a function of the user's) hands back a model built
  /// empty by its callee's facts: a factory that returns one, a constructor
  /// or method that leaves a member model empty. Its function is then worth
  /// analysing even without a meta scope of its own.
  bool givesEmptyModel(const Expr *Call, ASTContext &Context);

  /// Reports the uses of empty models in F (Lambda's call operator, when F
  /// is one); each function once per translation unit.
  void analyzeFunction(const FunctionDecl *F, const LambdaExpr *Lambda,
                       ASTContext &Context);

  /// At the end of a translation unit.
  void clear();

private:
  class Facet;

  emptymodel::EventKinds kinds() {
    return {Ambient,      WeightGivers, NeedsWeights,
            MemoryGivers, Initializers, Writes};
  }
  /// The rewrite that loads the model of U before U, when it is certain
  /// (see EmptyModelReporter::LoadFirst).
  std::optional<EmptyModelReporter::LoadFirst>
  loadFirst(const emptymodel::Use &U, const emptymodel::Gen &G,
            const FunctionDecl *F, AmbientDevice::InFunction &Here);

  AmbientDevice &Ambient;
  EmptyModelReporter &Reporter;
  SummariesFn Summaries;
  NameList WeightGivers;
  NameList NeedsWeights;
  NameList MemoryGivers;
  NameList Initializers;
  TensorWrites Writes;
  std::unique_ptr<Facet> FacetImpl;

  // Per translation unit.
  llvm::DenseSet<const FunctionDecl *> Analyzed;
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_EMPTY_MODEL_USED_EMPTYMODELFINDER_H
