//===--- OffloadedParameterMoveCheck.h - metaguard-tidy --------*- C++ -*-===//
//
// metaguard-offloaded-parameter-move: flags code that makes the offloaded
// parameters of a dispatched model unreachable or writes them where the
// write never lands: moving the model, writing, replacing or moving its
// parameters (in-place methods, initialisers, optimizers, checkpoints), or
// removing its offloading hooks and then needing them.
//
// The check class finds the events of a function and reports; which calls
// write tensors (utils/TensorWrites), optimizers over a model's parameters
// (utils/OptimizerParameters), member models across methods
// (utils/MemberModels), guards (utils/OffloadGuards) and reachability
// (utils/CfgReachability) are analyses of their own.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_OFFLOADEDPARAMETERMOVECHECK_H
#define METAGUARD_CHECKS_OFFLOADEDPARAMETERMOVECHECK_H

#include "utils/CfgReachability.h"
#include "utils/ClangCompat.h"
#include "utils/FunctionSummaries.h"
#include "utils/LoaderCalls.h"
#include "utils/ModelFacts.h"
#include "utils/ModuleExprs.h"
#include "utils/NameList.h"
#include "utils/OffloadGuards.h"
#include "utils/ReturnedOptions.h"
#include "utils/StmtParents.h"
#include "utils/TensorWrites.h"
#include "utils/WholeProgram.h"

#include "clang-tidy/ClangTidyCheck.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace clang::tidy::metaguard {

/// Flags moves of dispatched models, hand-made replacements of their
/// parameters, and uses of their hooks after the hooks were removed.
///
/// For the user-facing documentation see
/// docs/checks/metaguard-offloaded-parameter-move.md.
class OffloadedParameterMoveCheck : public ClangTidyCheck {
public:
  OffloadedParameterMoveCheck(llvm::StringRef Name, ClangTidyContext *Context);
  ~OffloadedParameterMoveCheck() override;
  bool isLanguageVersionSupported(const LangOptions &LangOpts) const override {
    return LangOpts.CPlusPlus;
  }
  compat::Optional<TraversalKind> getCheckTraversalKind() const override {
    return TK_AsIs;
  }
  void storeOptions(ClangTidyOptions::OptionMap &Opts) override;
  void registerMatchers(ast_matchers::MatchFinder *Finder) override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;
  void onEndOfTranslationUnit() override;

private:
  /// How a model became dispatched: a DispatchFunctions call, a loader call
  /// with a visible device map that may offload, or a call to a function
  /// that returns a dispatched model (Inner or ExternalChain says how).
  using DispatchSource = DispatchKind;
  /// A statement that makes a model (or a submodule) dispatched.
  struct Dispatch {
    const Stmt *S = nullptr;
    ModuleRef Ref;
    DispatchSource Source = DispatchSource::Call;
    std::string Function;
    /// Factory: the dispatch inside the factory (owned by FactoryMemo).
    const Dispatch *Inner = nullptr;
    /// Factory in another translation unit: the steps its summary records.
    std::vector<DispatchStep> ExternalChain;
  };
  /// A statement about a model: a move, a hook removal, a use of hooks, or
  /// a replacement of the model object.
  struct ModelEvent {
    const Stmt *S = nullptr;
    ModuleRef Ref;
    std::string Function;
    /// The event happens inside a function called at S (a helper the model
    /// is passed to, a lambda that captures it): what the callee does there.
    std::optional<ArgumentEffects> Via;
  };
  /// How parameters are written: a tensor method or initialiser, an
  /// assignment, a new registration, an optimizer's step(), a checkpoint
  /// loaded into the model.
  enum class MutationKind { Call, Assign, Register, Optimizer, Load };
  struct Mutation {
    const Stmt *S = nullptr;
    /// The module whose parameter is changed.
    ModuleRef Owner;
    MutationKind Kind = MutationKind::Call;
    std::string Function;
    std::optional<ArgumentEffects> Via;
    /// Optimizer: the optimizer variable, for the note at its construction.
    const VarDecl *Optimizer = nullptr;
    /// Every parameter of Owner is written, so a dispatched submodule of it
    /// counts (as for moves).
    bool WholeModel = false;
  };
  struct Events {
    std::vector<Dispatch> Dispatches;
    std::vector<ModelEvent> Reassigns;
    /// DispatchFunctions calls with an in-memory map: nothing offloaded,
    /// no hooks, the model may move again.
    std::vector<ModelEvent> Undispatches;
    std::vector<ModelEvent> Moves;
    std::vector<Mutation> Mutations;
    std::vector<ModelEvent> Removals;
    std::vector<ModelEvent> Needs;
  };

  void analyzeFunction(const FunctionDecl *F, ASTContext &Context);
  Events collectEvents(const FunctionDecl *F, ASTContext &Context);
  void addInitOrAssignment(const Stmt *S, const ModuleRef &Target,
                           const Expr *Value, const FunctionDecl *F,
                           ASTContext &Context, Events &Out);
  /// If Value (an initialiser or assigned value) produces a dispatched
  /// model, how; Fresh says whether it produces a new object at all.
  std::optional<Dispatch> dispatchedValue(const Expr *Value,
                                          const FunctionDecl *F,
                                          ASTContext &Context, bool &Fresh);
  /// The dispatch carried by the models FD returns, if some return
  /// statement returns a dispatched model; memoised.
  const Dispatch *factoryDispatch(const FunctionDecl *FD, ASTContext &Context);
  /// The events of a method call (moves, forward passes, parameter writes,
  /// models put into containers, what a helper does) in F.
  void addMemberCallEvents(const CXXMemberCallExpr *Call, const FunctionDecl *F,
                           ASTContext &Context, Events &Ev);
  /// The events of a call of a function (dispatches, hook removals, uses of
  /// hooks, parameter writes, what a helper does).
  void addCallEvents(const CallExpr *Call, ASTContext &Context, Events &Ev);
  /// Adds the parameter writes Call makes (an in-place tensor method or
  /// initialiser, an optimizer step, a checkpoint loaded into a model);
  /// whether Call is such a write at all.
  bool addWrite(const CallExpr *Call, Events &Out);
  void addParameterAssignment(const Stmt *S, const Expr *Lhs, bool Compound,
                              Events &Out) const;
  /// Adds the effects a call has on the models passed to it (from the
  /// callee's summary) or captured by the lambda it calls, as events at the
  /// call. FirstArg: the index of the call's argument bound to the callee's
  /// first parameter (1 for an operator call on an object).
  void addCallEffects(const CallExpr *Call, const FunctionDecl *Callee,
                      unsigned FirstArg, ASTContext &Context, Events &Out);
  /// Whether S only runs when the model of Ref has no offloaded parameters:
  /// inside `if (!has_offloaded_parameters(m))`, or after
  /// `if (has_offloaded_parameters(m)) return;`.
  bool guardedByNoOffload(const Stmt *S, const ModuleRef &Ref,
                          const FunctionDecl *F);
  /// Adds what Effects says a callee does to Ref as events at Call.
  static void addEffects(const Stmt *Call, const ModuleRef &Ref,
                         llvm::StringRef Callee, const ArgumentEffects &Effects,
                         Events &Out);
  /// A note at the place inside a callee where it does what Via says.
  void noteVia(const ArgumentEffects &Via, unsigned What, ASTContext &Context);
  SummaryTable &summaries(ASTContext &Context);

  /// The dispatch that reaches Target (on some path with no reassignment of
  /// the model in between) and applies to Ref. AncestorsToo: a dispatched
  /// submodule counts for Ref (moving a model moves its submodules).
  const Dispatch *reachingDispatch(const Stmt *Target, const ModuleRef &Ref,
                                   bool AncestorsToo, const Events &Ev,
                                   const CfgReachability &Cfg) const;
  /// Adds to Kills the events that put a new object in Ref, or in a member
  /// on the way to it: reassignments and single-device dispatches.
  static void addReplacements(const Events &Ev, const ModuleRef &Ref,
                              llvm::SmallVectorImpl<const Stmt *> &Kills);
  /// The dispatch an event at S (about Ref) is reported against: S is in
  /// Cfg, a dispatch reaches it (as in reachingDispatch), and nothing was
  /// reported at its location yet, which report() then records. nullptr
  /// otherwise.
  const Dispatch *dispatchToReport(const Stmt *S, const ModuleRef &Ref,
                                   bool AncestorsToo, const Events &Ev,
                                   const CfgReachability &Cfg,
                                   ASTContext &Context);

  bool report(const Stmt *At, ASTContext &Context);
  void reportMove(const ModelEvent &Move, const Dispatch &D,
                  ASTContext &Context);
  void reportMutation(const Mutation &M, const Dispatch &D,
                      ASTContext &Context);
  /// Member models F dispatches: moves and writes of them in the other
  /// methods of the class, reached from their entry (see MemberModels.h).
  void analyzeLaterMethods(const CXXMethodDecl *F, const Events &Ev,
                           const CfgReachability &FCfg, ASTContext &Context);
  void noteLaterMethod(const CXXMethodDecl &F, ASTContext &Context);
  void noteDispatch(const Dispatch &D, ASTContext &Context);
  void noteInnerDispatch(const Dispatch &D, llvm::StringRef Factory,
                         ASTContext &Context, unsigned Depth);
  void noteExternalChain(llvm::ArrayRef<DispatchStep> Chain,
                         llvm::StringRef Factory, ASTContext &Context,
                         unsigned Depth);
  void noteDispatchStep(SourceLocation Loc, DispatchSource How,
                        llvm::StringRef Factory, llvm::StringRef With);
  /// The steps of D down to its dispatching call, for F's summary.
  std::vector<DispatchStep> dispatchChain(const Dispatch &D,
                                          const SummaryTable &Table) const;

  // Options.
  const std::string DispatchFunctionsOption;
  const std::string LoaderFunctionsOption;
  const std::string HookRemoversOption;
  const std::string NeedsHooksOption;
  const std::string ParameterMutatorsOption;
  const std::string IgnoredInPlaceMethodsOption;

  NameList Dispatchers;
  LoaderMatcher Loaders;
  NameList HookRemovers;
  NameList NeedsHooks;
  TensorWrites Writes;

  class ModelFacet;
  std::unique_ptr<ModelFacet> ModelFacetImpl;
  ReturnedOptionsFacet OptionsFacetImpl;

  // Per translation unit.
  std::shared_ptr<SummaryTable> Summaries;
  CfgCache Cfgs;
  FunctionIndex Functions;
  llvm::DenseSet<const FunctionDecl *> Analyzed;
  llvm::DenseSet<SourceLocation> Reported;
  std::map<const FunctionDecl *, std::optional<Dispatch>> FactoryMemo;
  llvm::DenseSet<const FunctionDecl *> LambdasInProgress;
  NoOffloadGuards Guards;
  llvm::DenseSet<const FunctionDecl *> FactoryInProgress;

  /// Whole-program mode: SummaryFile / ExportSummaries.
  WholeProgramFacts Facts;
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_OFFLOADEDPARAMETERMOVECHECK_H
