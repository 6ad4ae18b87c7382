//===--- OffloadedParameterFinder.h - metaguard-tidy -----------*- C++ -*-===//
//
// The analysis behind metaguard-offloaded-parameter-move: the events of a
// function (dispatches, moves, parameter writes, hook removals, uses of
// hooks, what called helpers and lambdas do), which dispatch reaches each of
// them, factories that return dispatched models, member models across
// methods, and the model facet of the function summaries. What it finds, it
// hands to the reporter.
//
// Which calls write tensors (utils/domain/TensorWrites), optimizers over a
// model's parameters (utils/domain/OptimizerParameters), member models across
// methods (utils/domain/MemberModels), guards (utils/domain/OffloadGuards) and
// reachability (utils/analysis/CfgReachability) are analyses of their own.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_OFFLOADED_PARAMETER_MOVE_OFFLOADEDPARAMETERFINDER_H
#define METAGUARD_CHECKS_OFFLOADED_PARAMETER_MOVE_OFFLOADEDPARAMETERFINDER_H

#include "CheckOptions.h"
#include "OffloadedParameterEvents.h"
#include "utils/analysis/CfgReachability.h"
#include "utils/analysis/NameList.h"
#include "utils/analysis/StmtParents.h"
#include "utils/domain/LoaderCalls.h"
#include "utils/domain/OffloadGuards.h"
#include "utils/domain/ReturnedOptions.h"
#include "utils/domain/TensorWrites.h"
#include "utils/summaries/FunctionSummaries.h"
#include "utils/summaries/WholeProgram.h"

#include "clang/AST/ExprCXX.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <map>
#include <memory>
#include <optional>
#include <string>

namespace clang::tidy::metaguard {

class OffloadedParameterReporter;

/// The check's option values, as given (declared in Options.def).
using OffloadedParameterOptions =
    OptionValues<check_bit::OffloadedParameterMoveCheck>;

/// Finds the moves, parameter writes and uses of removed hooks of
/// dispatched models, function by function, for one translation unit at a
/// time.
class OffloadedParameterFinder {
public:
  OffloadedParameterFinder(const OffloadedParameterOptions &Options,
                           WholeProgramFacts &Facts,
                           OffloadedParameterReporter &Report);
  ~OffloadedParameterFinder();

  /// Whether Call may make a model dispatched: a DispatchFunctions call, a
  /// loader call (whose options decide later), or a call to a function that
  /// returns a dispatched model.
  bool mayDispatch(const CallExpr *Call, ASTContext &Context);
  /// Analyses the function Call is in, once, and reports what it finds.
  void analyzeEnclosingFunction(const CallExpr *Call, ASTContext &Context);
  /// Exports the translation unit's summaries (whole-program mode) and
  /// forgets the translation unit.
  void endTranslationUnit();

private:
  class ModelFacet;
  using Dispatch = offload::Dispatch;
  using Events = offload::Events;
  using ModelEvent = offload::ModelEvent;
  using Mutation = offload::Mutation;
  /// Receives the effect on a model that one event amounts to for a caller.
  using EffectCallback =
      llvm::function_ref<void(const ModuleRef &, const ArgumentEffects &)>;

  SummaryTable &summaries(ASTContext &Context);

  // What a function does wrong: each event reached by a dispatch.
  void analyzeFunction(const FunctionDecl *F, ASTContext &Context);
  /// The dispatch an event at S about Ref belongs to: S runs (it is in
  /// Cfg), no has_offloaded_parameters check guards it, and a dispatch
  /// reaches it (as in Events::reachingDispatch).
  const Dispatch *unguardedDispatch(const Stmt *S, const ModuleRef &Ref,
                                    bool AncestorsToo, const FunctionDecl *F,
                                    const Events &Ev,
                                    const CfgReachability &Cfg);
  void reportMovesAndWrites(const FunctionDecl *F, const Events &Ev,
                            const CfgReachability &Cfg,
                            const SummaryTable &Table);
  void reportHooksNeeded(const Events &Ev, const CfgReachability &Cfg,
                         const SummaryTable &Table);
  /// Member models F dispatches: moves and writes of them in the other
  /// methods of the class, reached from their entry (see MemberModels.h).
  void reportInLaterMethods(const CXXMethodDecl *F, const Events &Ev,
                            const CfgReachability &FCfg, ASTContext &Context);
  void reportInLaterMethod(const CXXMethodDecl &F,
                           llvm::ArrayRef<const Dispatch *> Members,
                           const CXXMethodDecl *Other, ASTContext &Context);
  /// Whether S only runs when the model of Ref has no offloaded parameters:
  /// inside `if (!has_offloaded_parameters(m))`, or after
  /// `if (has_offloaded_parameters(m)) return;`.
  bool guardedByNoOffload(const Stmt *S, const ModuleRef &Ref,
                          const FunctionDecl *F);

  // The events of a function.
  Events collectEvents(const FunctionDecl *F, ASTContext &Context);
  void addStmtEvents(const Stmt *S, const FunctionDecl *F, ASTContext &Context,
                     Events &Ev);
  /// `: model_(from_pretrained<M>(dir, placed))` dispatches the member.
  void addMemberInitEvents(const CXXConstructorDecl *Ctor, ASTContext &Context,
                           Events &Ev);
  void addDeclEvents(const DeclStmt *DS, const FunctionDecl *F,
                     ASTContext &Context, Events &Ev);
  void addAssignmentEvents(const BinaryOperator *BO, const FunctionDecl *F,
                           ASTContext &Context, Events &Ev);
  void addOperatorCallEvents(const CXXOperatorCallExpr *Op,
                             const FunctionDecl *F, ASTContext &Context,
                             Events &Ev);
  /// The events of a method call (moves, forward passes, parameter writes,
  /// models put into containers, what a helper does) in F.
  void addMemberCallEvents(const CXXMemberCallExpr *Call, const FunctionDecl *F,
                           ASTContext &Context, Events &Ev);
  /// models.push_back(from_pretrained<M>(dir, placed)): the container now
  /// holds a dispatched model.
  void addContainerInsertion(const CXXMemberCallExpr *Call,
                             const FunctionDecl *F, ASTContext &Context,
                             Events &Ev);
  /// model->apply(fn): what fn does to its module argument is done to the
  /// model and each submodule.
  void addApplyEffects(const CXXMemberCallExpr *Call, ASTContext &Context,
                       Events &Ev);
  /// The events of a call of a function (dispatches, hook removals, uses of
  /// hooks, parameter writes, what a helper does).
  void addCallEvents(const CallExpr *Call, ASTContext &Context, Events &Ev);
  void addDispatchCall(const CallExpr *Call, const FunctionDecl *Callee,
                       Events &Ev);
  /// Adds the parameter writes Call makes (an in-place tensor method or
  /// initialiser, an optimizer step, a checkpoint loaded into a model);
  /// whether Call is such a write at all.
  bool addWrite(const CallExpr *Call, Events &Ev);
  void addParameterAssignment(const Stmt *S, const Expr *Lhs, bool Compound,
                              Events &Ev) const;
  void addInitOrAssignment(const Stmt *S, const ModuleRef &Target,
                           const Expr *Value, const FunctionDecl *F,
                           ASTContext &Context, Events &Ev);

  // What called functions do to the models they are given.
  /// Adds the effects a call has on the models passed to it (from the
  /// callee's summary) or captured by the lambda it calls, as events at the
  /// call. FirstArg: the index of the call's argument bound to the callee's
  /// first parameter (1 for an operator call on an object).
  void addCallEffects(const CallExpr *Call, const FunctionDecl *Callee,
                      unsigned FirstArg, ASTContext &Context, Events &Ev);
  void addSummaryEffects(const CallExpr *Call, const FunctionDecl *Callee,
                         unsigned FirstArg, ASTContext &Context, Events &Ev);
  void addCaptureEffects(const Stmt *Call, const CXXMethodDecl *Lambda,
                         ASTContext &Context, Events &Ev);
  /// Adds the effects of the callable a standard library call runs (an
  /// algorithm's function object, a thread's body: see InvokedCallables.h)
  /// on what it captures and on what it is given, as events at Call;
  /// whether Call runs one.
  bool addInvokedEffects(const Expr *Call, ASTContext &Context, Events &Ev);
  /// The model an argument stands for when a callee acts on it: the model
  /// itself, or the model whose parameters it holds (a tensor, a list of
  /// them, an iterator over them).
  std::optional<ModuleRef> argumentRef(const Expr *Arg) const;
  /// Calls Fn for each move, parameter write, hook removal and use of hooks
  /// among the events Ev of F that is done (in F's CFG, not under a guard)
  /// to a model Concerns accepts, as the effect a caller of F sees.
  void forEachEffect(const FunctionDecl *F, const Events &Ev,
                     llvm::StringRef In, SummaryTable &Table,
                     llvm::function_ref<bool(const ModuleRef &)> Concerns,
                     EffectCallback Fn);
  /// Adds what Effects says a callee does to Ref as events at Call.
  static void addEffects(const Stmt *Call, const ModuleRef &Ref,
                         llvm::StringRef Callee, const ArgumentEffects &Effects,
                         Events &Ev);

  // Where dispatched models come from.
  /// If Value (an initialiser or assigned value) produces a dispatched
  /// model, how.
  std::optional<Dispatch> dispatchedValue(const Expr *Value,
                                          const FunctionDecl *F,
                                          ASTContext &Context);
  std::optional<Dispatch> loaderDispatch(const CallExpr *Call,
                                         llvm::StringRef LoaderName,
                                         const FunctionDecl *F,
                                         ASTContext &Context);
  std::optional<Dispatch> factoryCallDispatch(const CallExpr *Call,
                                              ASTContext &Context);
  /// The dispatch carried by the models FD returns, if some return
  /// statement returns a dispatched model; memoised.
  const Dispatch *factoryDispatch(const FunctionDecl *FD, ASTContext &Context);
  std::optional<Dispatch> returnedDispatch(const FunctionDecl *Def,
                                           ASTContext &Context);

  // Configuration.
  NameList Dispatchers;
  LoaderMatcher Loaders;
  NameList HookRemovers;
  NameList NeedsHooks;
  TensorWrites Writes;
  WholeProgramFacts &Facts;
  OffloadedParameterReporter &Report;
  std::unique_ptr<ModelFacet> ModelFacetImpl;
  ReturnedOptionsFacet OptionsFacetImpl;

  // Per translation unit.
  std::shared_ptr<SummaryTable> Summaries;
  CfgCache Cfgs;
  FunctionIndex Functions;
  llvm::DenseSet<const FunctionDecl *> Analyzed;
  /// Owns the dispatches that factory dispatches point at (Dispatch::Inner).
  std::map<const FunctionDecl *, std::optional<Dispatch>> FactoryMemo;
  llvm::DenseSet<const FunctionDecl *> FactoryInProgress;
  llvm::DenseSet<const FunctionDecl *> LambdasInProgress;
  NoOffloadGuards Guards;
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_OFFLOADED_PARAMETER_MOVE_OFFLOADEDPARAMETERFINDER_H
