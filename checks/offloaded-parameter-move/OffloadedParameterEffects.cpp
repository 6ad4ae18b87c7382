//===--- OffloadedParameterEffects.cpp - metaguard-tidy --------*- C++ -*-===//
//
// What the functions a function calls do to the models they are given
// (their summaries, the lambdas they run), as events at the call.
//
//===----------------------------------------------------------------------===//

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

void OffloadedParameterFinder::addCallEffects(const CallExpr *Call,
                                              const FunctionDecl *Callee,
                                              unsigned FirstArg,
                                              ASTContext &Context, Events &Ev) {
  if (!Callee)
    return;
  addSummaryEffects(Call, Callee, FirstArg, Context, Ev);
  // What a lambda does to the models it captures, by reference or by copy
  // (a copy of a holder is the same model).
  if (const auto *Method = dyn_cast<CXXMethodDecl>(Callee);
      Method && Method->getParent()->isLambda())
    addCaptureEffects(Call, Method, Context, Ev);
}

void OffloadedParameterFinder::addSummaryEffects(const CallExpr *Call,
                                                 const FunctionDecl *Callee,
                                                 unsigned FirstArg,
                                                 ASTContext &Context,
                                                 Events &Ev) {
  SummaryTable &Table = summaries(Context);
  auto AddArgs = [&](const FunctionSummary &S, llvm::StringRef TargetName) {
    for (const auto &[Index, Effects] : S.get<ModelFacts>().Args) {
      const unsigned ArgIndex = Index + FirstArg;
      if (ArgIndex < Call->getNumArgs())
        if (std::optional<ModuleRef> Ref = argumentRef(Call->getArg(ArgIndex)))
          addEffects(Call, *Ref, TargetName, Effects, Ev);
    }
  };
  // Any function the call may run: every visible override of a virtual
  // one, then the overrides that only other translation units define.
  llvm::SmallVector<const FunctionDecl *, 2> Targets = Table.callTargets(Call);
  if (Targets.empty())
    Targets.push_back(Callee);
  for (const FunctionDecl *Target : Targets)
    if (const FunctionSummary *S = Table.lookup<ModelFacts>(Target))
      AddArgs(*S, helperName(Target));
  for (const FunctionSummary *S : Table.externalTargets(Call))
    AddArgs(*S, S->Name);
}

std::optional<ModuleRef>
OffloadedParameterFinder::argumentRef(const Expr *Arg) const {
  // A tensor (or a list, an iterator of them) stands for the model it is a
  // parameter of: what the callee does to it, it does to that model.
  if (holdsTensors(Arg->getType()))
    return Writes.parameterOwner(Arg);
  return moduleRefOf(Arg);
}

bool OffloadedParameterFinder::addInvokedEffects(const Expr *Call,
                                                 ASTContext &Context,
                                                 Events &Ev) {
  SummaryTable &Table = summaries(Context);
  std::optional<InvokedCallable> Invoked =
      invokedCallable(Call, &Table.callableStores());
  if (!Invoked)
    return false;
  for (const FunctionDecl *Fn : Invoked->Functions) {
    // What a lambda does to the models it captures.
    if (const auto *Method = dyn_cast<CXXMethodDecl>(Fn);
        Method && Method->getParent()->isLambda())
      addCaptureEffects(Call, Method, Context, Ev);
    // What it does to what it is given: arguments, or elements of ranges.
    const FunctionSummary *S = Table.lookup<ModelFacts>(Fn);
    if (!S)
      continue;
    for (const auto &[Index, Effects] : S->get<ModelFacts>().Args)
      if (Index < Invoked->Params.size() && Invoked->Params[Index].Arg)
        if (std::optional<ModuleRef> Ref =
                argumentRef(Invoked->Params[Index].Arg))
          addEffects(Call, *Ref, helperName(Fn), Effects, Ev);
  }
  return true;
}

void OffloadedParameterFinder::addCaptureEffects(const Stmt *Call,
                                                 const CXXMethodDecl *Lambda,
                                                 ASTContext &Context,
                                                 Events &Ev) {
  const FunctionDecl *Def = definitionWithBody(Lambda);
  if (!Def || !LambdasInProgress.insert(Def).second)
    return;
  Events Inner = collectEvents(Def, Context);
  const std::string Name = helperName(Lambda);
  // Variables of the enclosing function, not the lambda's own locals.
  auto IsCaptured = [&](const ModuleRef &Ref) {
    return isa<VarDecl>(Ref.Root) && Ref.Root->getDeclContext() != Def;
  };
  forEachEffect(Def, Inner, Name, summaries(Context), IsCaptured,
                [&](const ModuleRef &Ref, const ArgumentEffects &Effects) {
                  addEffects(Call, Ref, Name, Effects, Ev);
                });
  LambdasInProgress.erase(Def);
}

void OffloadedParameterFinder::forEachEffect(
    const FunctionDecl *F, const Events &Ev, llvm::StringRef In,
    SummaryTable &Table, llvm::function_ref<bool(const ModuleRef &)> Concerns,
    EffectCallback Fn) {
  const CfgReachability *Cfg = Cfgs.get(F, F->getBody(), Table.context());
  auto Visit = [&](const Stmt *S, const ModuleRef &Ref, llvm::StringRef What,
                   const std::optional<ArgumentEffects> &Via,
                   bool ArgumentEffects::*Flag) {
    if (!Concerns(Ref) || (Cfg && !Cfg->contains(S)) ||
        guardedByNoOffload(S, Ref, F))
      return;
    // Through a helper, notes point at the innermost place, where the chain
    // of helpers ends.
    ArgumentEffects Effects;
    Effects.At = Via ? Via->At : Table.refOf(S->getBeginLoc());
    Effects.What = Via ? Via->What : What.str();
    Effects.In = Via ? Via->In : In.str();
    Effects.*Flag = true;
    Fn(Ref, Effects);
  };
  for (const ModelEvent &Move : Ev.Moves)
    Visit(Move.S, Move.Ref, Move.Function, Move.Via, &ArgumentEffects::Moves);
  for (const Mutation &M : Ev.Mutations)
    Visit(M.S, M.Owner, M.Function, M.Via, &ArgumentEffects::MutatesParameters);
  for (const ModelEvent &Removal : Ev.Removals)
    Visit(Removal.S, Removal.Ref, Removal.Function, Removal.Via,
          &ArgumentEffects::RemovesHooks);
  if (!Cfg)
    return;
  // Uses of the hooks: of those the model came with (reached from the entry
  // with no removal, new value or dispatch first), or of hooks removed here.
  auto VisitNeed = [&](const ModelEvent &Need, bool ArgumentEffects::*Flag) {
    if (!Cfg->contains(Need.S) || guardedByNoOffload(Need.S, Need.Ref, F))
      return;
    ArgumentEffects Effects;
    const std::optional<ArgumentEffects> &Via = Need.Via;
    Effects.NeedsAt = Via ? Via->NeedsAt : Table.refOf(Need.S->getBeginLoc());
    Effects.NeedsWhat = Via ? Via->NeedsWhat : Need.Function;
    Effects.NeedsIn = Via ? Via->NeedsIn : In.str();
    Effects.*Flag = true;
    Fn(Need.Ref, Effects);
  };
  for (const ModelEvent &Need : Ev.Needs) {
    if (!Concerns(Need.Ref))
      continue;
    if (Ev.reachedFromEntry(Need.S, Need.Ref, *Cfg, /*RemovalsToo=*/true))
      VisitNeed(Need, &ArgumentEffects::NeedsHooks);
    if (llvm::any_of(Ev.Removals, [&](const ModelEvent &Removal) {
          return Ev.removalReaches(Removal, Need, *Cfg);
        }))
      VisitNeed(Need, &ArgumentEffects::NeedsRemovedHooks);
  }
  for (const ModelEvent &Misuse : Ev.NeedsOfRemoved)
    if (Concerns(Misuse.Ref))
      VisitNeed(Misuse, &ArgumentEffects::NeedsRemovedHooks);
}

void OffloadedParameterFinder::addEffects(const Stmt *Call,
                                          const ModuleRef &Ref,
                                          llvm::StringRef Callee,
                                          const ArgumentEffects &Effects,
                                          Events &Ev) {
  if (Effects.Moves)
    Ev.Moves.push_back(ModelEvent{Call, Ref, Callee.str(), Effects});
  if (Effects.MutatesParameters)
    Ev.Mutations.push_back(
        Mutation{Call, Ref, MutationKind::Call, Callee.str(), Effects});
  if (Effects.RemovesHooks)
    Ev.Removals.push_back(ModelEvent{Call, Ref, Callee.str(), Effects});
  if (Effects.NeedsHooks)
    Ev.Needs.push_back(ModelEvent{Call, Ref, Callee.str(), Effects});
  if (Effects.NeedsRemovedHooks)
    Ev.NeedsOfRemoved.push_back(ModelEvent{Call, Ref, Callee.str(), Effects});
}

} // namespace clang::tidy::metaguard
