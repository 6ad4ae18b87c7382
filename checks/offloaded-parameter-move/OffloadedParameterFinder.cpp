//===--- OffloadedParameterFinder.cpp - metaguard-tidy ---------*- C++ -*-===//

#include "OffloadedParameterFinder.h"
#include "OffloadedParameterNames.h"
#include "OffloadedParameterReporter.h"
#include "utils/analysis/FunctionBodies.h"
#include "utils/analysis/InvokedCallables.h"
#include "utils/domain/DeviceExpr.h"
#include "utils/domain/ExplicitOptions.h"
#include "utils/domain/MemberModels.h"
#include "utils/domain/ModelCalls.h"
#include "utils/domain/ModelProducers.h"
#include "utils/domain/OptimizerParameters.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/ExprCXX.h"
#include "llvm/ADT/STLExtras.h"

namespace clang::tidy::metaguard {

using offload::calleeName;
using offload::ContainerInserters;
using offload::helperName;
using offload::memberDispatch;
using offload::MutationKind;

/// Model facts: what a function does to the models passed to it (moves,
/// mutates parameters of, removes hooks of its argument N, at any depth),
/// and whether it returns a dispatched model.
class OffloadedParameterFinder::ModelFacet
    : public SummaryFacetFor<ModelFacts> {
public:
  explicit ModelFacet(OffloadedParameterFinder &Finder) : Finder(Finder) {}

  bool follows(const FunctionDecl *FD) const override {
    // The offload API itself and library code are not the user's helpers.
    return !FD->isDependentContext() &&
           !FD->getASTContext().getSourceManager().isInSystemHeader(
               FD->getLocation()) &&
           !Finder.Dispatchers.matches(FD) && !Finder.Loaders.isLoader(FD) &&
           !Finder.HookRemovers.matches(FD) && !Finder.NeedsHooks.matches(FD);
  }

  void summarise(const FunctionDecl *F, FunctionSummary &Summary,
                 SummaryTable &Table) override {
    ModelFacts &Out = Summary.edit<ModelFacts>();
    ASTContext &Context = Table.context();
    Events Ev = Finder.collectEvents(F, Context);
    auto IsOwnParameter = [&](const ModuleRef &Ref) {
      const auto *Param = dyn_cast_or_null<ParmVarDecl>(Ref.Root);
      return Param && Param->getDeclContext() == F;
    };
    Finder.forEachEffect(
        F, Ev, helperName(F), Table, IsOwnParameter,
        [&](const ModuleRef &Ref, const ArgumentEffects &Effect) {
          unsigned Index = cast<ParmVarDecl>(Ref.Root)->getFunctionScopeIndex();
          Out.Args[Index].add(Effect);
        });
    if (returnsModel(F))
      if (const Dispatch *D = Finder.factoryDispatch(F, Context)) {
        Out.ReturnsDispatchedModel = true;
        Out.DispatchedAt = Table.refOf(D->S->getBeginLoc());
        Out.DispatchChain = offload::dispatchChain(*D, Table);
      }
  }

private:
  OffloadedParameterFinder &Finder;
};

OffloadedParameterFinder::OffloadedParameterFinder(
    const OffloadedParameterOptions &Options, WholeProgramFacts &Facts,
    OffloadedParameterReporter &Report)
    : Dispatchers(Options.DispatchFunctions), Loaders(Options.LoaderFunctions),
      HookRemovers(Options.HookRemovers), NeedsHooks(Options.NeedsHooks),
      Writes(Options.ParameterMutators, Options.IgnoredInPlaceMethods,
             /*GivenTensors=*/true),
      Facts(Facts), Report(Report),
      ModelFacetImpl(std::make_unique<ModelFacet>(*this)) {}

OffloadedParameterFinder::~OffloadedParameterFinder() = default;

SummaryTable &OffloadedParameterFinder::summaries(ASTContext &Context) {
  return Facts.table(Summaries, Context,
                     {ModelFacetImpl.get(), &OptionsFacetImpl});
}

bool OffloadedParameterFinder::mayDispatch(const CallExpr *Call,
                                           ASTContext &Context) {
  const FunctionDecl *Callee = Call->getDirectCallee();
  if (!Callee)
    return false;
  if (Dispatchers.matches(Callee) || Loaders.isLoader(Callee) ||
      (returnsModel(Callee) && factoryDispatch(Callee, Context)))
    return true;
  if (definitionWithBody(Callee) || !returnsModel(Callee))
    return false;
  // A factory in another translation unit, known from its summary.
  const FunctionSummary *S = summaries(Context).lookup<ModelFacts>(Callee);
  return S && S->get<ModelFacts>().ReturnsDispatchedModel;
}

void OffloadedParameterFinder::analyzeEnclosingFunction(const CallExpr *Call,
                                                        ASTContext &Context) {
  analyzeFunction(Functions.enclosing(Call, Context).Function, Context);
}

void OffloadedParameterFinder::endTranslationUnit() {
  Facts.exportTable(
      [this](ASTContext &Context) -> SummaryTable & {
        return summaries(Context);
      },
      {&facetKind<ModelFacts>(), &facetKind<OptionsFacts>()});
  Cfgs.clear();
  Functions.clear();
  Analyzed.clear();
  FactoryMemo.clear();
  FactoryInProgress.clear();
  Summaries.reset();
  OptionsFacetImpl.clear();
  LambdasInProgress.clear();
  Guards.clear();
}

//===----------------------------------------------------------------------===//
// What a function does wrong
//===----------------------------------------------------------------------===//

void OffloadedParameterFinder::analyzeFunction(const FunctionDecl *F,
                                               ASTContext &Context) {
  if (!F || !F->getBody() || F->isDependentContext() ||
      !Analyzed.insert(F).second)
    return;
  if (Context.getSourceManager().isInSystemHeader(F->getLocation()))
    return;
  Events Ev = collectEvents(F, Context);
  if (Ev.Dispatches.empty())
    return;
  const CfgReachability *Cfg = Cfgs.get(F, F->getBody(), Context);
  if (!Cfg)
    return;
  const SummaryTable &Table = summaries(Context);
  reportMovesAndWrites(F, Ev, *Cfg, Table);
  if (const auto *Method = dyn_cast<CXXMethodDecl>(F))
    reportInLaterMethods(Method, Ev, *Cfg, Context);
  reportHooksNeeded(Ev, *Cfg, Table);
}

const offload::Dispatch *OffloadedParameterFinder::unguardedDispatch(
    const Stmt *S, const ModuleRef &Ref, bool AncestorsToo,
    const FunctionDecl *F, const Events &Ev, const CfgReachability &Cfg) {
  if (guardedByNoOffload(S, Ref, F) || !Cfg.contains(S))
    return nullptr;
  return Ev.reachingDispatch(S, Ref, AncestorsToo, Cfg);
}

void OffloadedParameterFinder::reportMovesAndWrites(const FunctionDecl *F,
                                                    const Events &Ev,
                                                    const CfgReachability &Cfg,
                                                    const SummaryTable &Table) {
  // Moving a model moves its submodules: a dispatched one counts.
  for (const ModelEvent &Move : Ev.Moves)
    if (const Dispatch *D =
            unguardedDispatch(Move.S, Move.Ref,
                              /*AncestorsToo=*/true, F, Ev, Cfg))
      Report.reportMove(Move, *D, Table);
  for (const Mutation &M : Ev.Mutations)
    if (const Dispatch *D =
            unguardedDispatch(M.S, M.Owner, M.WholeModel, F, Ev, Cfg))
      Report.reportMutation(M, *D, Table);
}

void OffloadedParameterFinder::reportHooksNeeded(const Events &Ev,
                                                 const CfgReachability &Cfg,
                                                 const SummaryTable &Table) {
  // Dispatching again needs the hooks too: it reads every offloaded
  // parameter through its hook before placing it anew.
  std::vector<ModelEvent> Needs = Ev.Needs;
  for (const Dispatch &D : Ev.Dispatches)
    if (D.Source == DispatchKind::Call)
      Needs.push_back(ModelEvent{D.S, D.Ref, D.Function, {}});
  Needs.insert(Needs.end(), Ev.Undispatches.begin(), Ev.Undispatches.end());
  for (const ModelEvent &Need : Needs) {
    if (!Cfg.contains(Need.S))
      continue;
    // The removal itself must be one of a dispatched model.
    for (const ModelEvent &Removal : Ev.Removals)
      if (Ev.removalReaches(Removal, Need, Cfg))
        if (const Dispatch *D = Ev.reachingDispatch(Removal.S, Removal.Ref,
                                                    /*AncestorsToo=*/true, Cfg))
          if (Report.reportHooksNeeded(Need, Removal, *D, Table))
            break;
  }
  // A helper that removes the hooks of a dispatched model and then uses
  // them.
  for (const ModelEvent &Misuse : Ev.NeedsOfRemoved)
    if (Cfg.contains(Misuse.S))
      if (const Dispatch *D = Ev.reachingDispatch(Misuse.S, Misuse.Ref,
                                                  /*AncestorsToo=*/true, Cfg))
        Report.reportHooksNeededAfterRemoval(Misuse, *D, Table);
}

void OffloadedParameterFinder::reportInLaterMethods(const CXXMethodDecl *F,
                                                    const Events &Ev,
                                                    const CfgReachability &FCfg,
                                                    ASTContext &Context) {
  // A member still dispatched when F returns (on some path) is dispatched
  // when another method starts.
  llvm::SmallVector<const Dispatch *, 2> Members;
  for (const Dispatch &D : Ev.Dispatches)
    if (isMemberModel(D.Ref, F) && Ev.reachesExit(D, FCfg))
      Members.push_back(&D);
  if (Members.empty())
    return;
  for (const CXXMethodDecl *Other : laterMethods(F))
    reportInLaterMethod(*F, Members, Other, Context);
}

void OffloadedParameterFinder::reportInLaterMethod(
    const CXXMethodDecl &F, llvm::ArrayRef<const Dispatch *> Members,
    const CXXMethodDecl *Other, ASTContext &Context) {
  if (!Other->getBody())
    return;
  const CfgReachability *Cfg = Cfgs.get(Other, Other->getBody(), Context);
  if (!Cfg)
    return;
  Events Later = collectEvents(Other, Context);
  // Reached from Other's entry with no new value or dispatch of the member
  // first: the model is still the one F dispatched.
  auto Reached = [&](const Stmt *S, const ModuleRef &Ref) {
    return Cfg->contains(S) && !guardedByNoOffload(S, Ref, Other) &&
           Later.reachedFromEntry(S, Ref, *Cfg);
  };
  const SummaryTable &Table = summaries(Context);
  for (const ModelEvent &Move : Later.Moves)
    if (const Dispatch *D =
            memberDispatch(Members, Move.Ref, /*AncestorsToo=*/true))
      if (Reached(Move.S, Move.Ref))
        Report.reportMove(Move, *D, Table, &F);
  for (const Mutation &M : Later.Mutations)
    if (const Dispatch *D = memberDispatch(Members, M.Owner, M.WholeModel))
      if (Reached(M.S, M.Owner))
        Report.reportMutation(M, *D, Table, &F);
}

bool OffloadedParameterFinder::guardedByNoOffload(const Stmt *S,
                                                  const ModuleRef &Ref,
                                                  const FunctionDecl *F) {
  return Guards.guarded(S, Ref, F, Functions.parents());
}

//===----------------------------------------------------------------------===//
// Where dispatched models come from
//===----------------------------------------------------------------------===//

std::optional<offload::Dispatch> OffloadedParameterFinder::dispatchedValue(
    const Expr *Value, const FunctionDecl *F, ASTContext &Context) {
  const CallExpr *Call = Value ? producingCall(Value) : nullptr;
  if (!Call)
    return std::nullopt;
  if (std::optional<std::string> LoaderName = Loaders.loaderCallName(Call))
    return loaderDispatch(Call, *LoaderName, F, Context);
  return factoryCallDispatch(Call, Context);
}

std::optional<offload::Dispatch> OffloadedParameterFinder::loaderDispatch(
    const CallExpr *Call, llvm::StringRef LoaderName, const FunctionDecl *F,
    ASTContext &Context) {
  // As at run time: only a device map dispatches the loaded model (an
  // offload folder alone is ignored), and a map that visibly keeps every
  // parameter in memory offloads nothing.
  if (const Expr *Map =
          findExplicitOptionMember(Call, {DeviceMapMember}, F, Context, Cfgs)) {
    if (isInMemoryDeviceMap(explicitOptionValue(Map, F, Context, Cfgs)))
      return std::nullopt;
  } else {
    // Options built by a helper: its summary says what map they carry.
    DeviceMapKind Kind = deviceMapFromHelpers(Call, summaries(Context));
    if (Kind == DeviceMapKind::None || Kind == DeviceMapKind::SingleDevice)
      return std::nullopt;
  }
  const FunctionDecl *Callee = calledFunction(Call);
  Dispatch D;
  D.S = Call;
  D.Source = DispatchKind::Loader;
  D.Function = Callee ? qualifiedNameOf(Callee) : LoaderName.str();
  return D;
}

std::optional<offload::Dispatch>
OffloadedParameterFinder::factoryCallDispatch(const CallExpr *Call,
                                              ASTContext &Context) {
  const FunctionDecl *Callee = Call->getDirectCallee();
  const Dispatch *Inner = factoryDispatch(Callee, Context);
  if (!Inner && (!Callee || definitionWithBody(Callee)))
    return std::nullopt;
  Dispatch D;
  if (!Inner) {
    // No body here: a summary from another translation unit may know.
    const FunctionSummary *S = summaries(Context).lookup<ModelFacts>(Callee);
    if (!S || !S->get<ModelFacts>().ReturnsDispatchedModel)
      return std::nullopt;
    D.ExternalChain = S->get<ModelFacts>().DispatchChain;
  }
  D.S = Call;
  D.Source = DispatchKind::Factory;
  D.Function = calleeName(Callee);
  D.Inner = Inner;
  return D;
}

const offload::Dispatch *
OffloadedParameterFinder::factoryDispatch(const FunctionDecl *FD,
                                          ASTContext &Context) {
  const FunctionDecl *Def = definitionWithBody(FD);
  if (!Def || Def->isDependentContext() || Loaders.isLoader(Def) ||
      Dispatchers.matches(Def) ||
      Context.getSourceManager().isInSystemHeader(Def->getLocation()))
    return nullptr;
  if (auto It = FactoryMemo.find(Def); It != FactoryMemo.end())
    return It->second ? &*It->second : nullptr;
  if (!FactoryInProgress.insert(Def).second)
    return nullptr; // Recursive: the outer search decides.
  std::optional<Dispatch> Result = returnedDispatch(Def, Context);
  FactoryInProgress.erase(Def);
  std::optional<Dispatch> &Slot = FactoryMemo[Def];
  Slot = std::move(Result);
  return Slot ? &*Slot : nullptr;
}

std::optional<offload::Dispatch>
OffloadedParameterFinder::returnedDispatch(const FunctionDecl *Def,
                                           ASTContext &Context) {
  std::optional<Dispatch> Result;
  Events Ev = collectEvents(Def, Context);
  const CfgReachability *Cfg = Cfgs.get(Def, Def->getBody(), Context);
  forEachEvaluatedStmt(Def, [&](const Stmt *S) {
    const auto *Ret = dyn_cast<ReturnStmt>(S);
    if (Result || !Ret || !Ret->getRetValue() || !Cfg || !Cfg->contains(Ret))
      return;
    // `return from_pretrained<M>(dir, placed);`, `return other_factory();`
    Result = dispatchedValue(Ret->getRetValue(), Def, Context);
    if (Result)
      return;
    // `return model;` with model dispatched on some path to here.
    std::optional<ModuleRef> Ref = moduleRefOf(Ret->getRetValue());
    if (!Ref || !Ref->isRoot())
      return;
    if (const Dispatch *D =
            Ev.reachingDispatch(Ret, *Ref, /*AncestorsToo=*/false, *Cfg))
      Result = *D;
  });
  return Result;
}

} // namespace clang::tidy::metaguard
