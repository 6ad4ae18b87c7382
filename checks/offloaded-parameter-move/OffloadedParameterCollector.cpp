//===--- OffloadedParameterCollector.cpp - metaguard-tidy ------*- C++ -*-===//
//
// The events of one function for metaguard-offloaded-parameter-move (see
// OffloadedParameterEvents.h): dispatches, moves, parameter writes, hook
// removals and uses of hooks, statement by statement.
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

offload::Events OffloadedParameterFinder::collectEvents(const FunctionDecl *F,
                                                        ASTContext &Context) {
  Events Ev;
  Functions.parents().indexFunction(F);
  if (const auto *Ctor = dyn_cast<CXXConstructorDecl>(F))
    addMemberInitEvents(Ctor, Context, Ev);
  forEachEvaluatedStmt(
      F, [&](const Stmt *S) { addStmtEvents(S, F, Context, Ev); });
  return Ev;
}

void OffloadedParameterFinder::addStmtEvents(const Stmt *S,
                                             const FunctionDecl *F,
                                             ASTContext &Context, Events &Ev) {
  if (const auto *DS = dyn_cast<DeclStmt>(S))
    addDeclEvents(DS, F, Context, Ev);
  else if (const auto *BO = dyn_cast<BinaryOperator>(S))
    addAssignmentEvents(BO, F, Context, Ev);
  else if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(S))
    addOperatorCallEvents(Op, F, Context, Ev);
  else if (const auto *Call = dyn_cast<CXXMemberCallExpr>(S))
    addMemberCallEvents(Call, F, Context, Ev);
  else if (const auto *Call = dyn_cast<CallExpr>(S))
    addCallEvents(Call, Context, Ev);
  else if (const auto *Construct = dyn_cast<CXXConstructExpr>(S))
    addInvokedEffects(Construct, Context, Ev); // std::thread t(body);
}

void OffloadedParameterFinder::addMemberInitEvents(
    const CXXConstructorDecl *Ctor, ASTContext &Context, Events &Ev) {
  for (const CXXCtorInitializer *Init : Ctor->inits()) {
    if (!Init->isMemberInitializer() || !Init->isWritten())
      continue;
    if (std::optional<Dispatch> D =
            dispatchedValue(Init->getInit(), Ctor, Context)) {
      D->Ref.Root = Init->getMember();
      Ev.Dispatches.push_back(*D);
    }
  }
}

void OffloadedParameterFinder::addDeclEvents(const DeclStmt *DS,
                                             const FunctionDecl *F,
                                             ASTContext &Context, Events &Ev) {
  for (const Decl *D : DS->decls()) {
    const auto *Var = dyn_cast<VarDecl>(D);
    if (!Var || !Var->hasLocalStorage() || !Var->getInit())
      continue;
    // Aliases (`auto &mod = *m;`) name another model; only a variable
    // holding an object of its own starts a new life here.
    if (moduleRefOf(Var->getInit()))
      continue;
    ModuleRef Target;
    Target.Root = Var;
    addInitOrAssignment(Var->getInit(), Target, Var->getInit(), F, Context, Ev);
  }
}

void OffloadedParameterFinder::addAssignmentEvents(const BinaryOperator *BO,
                                                   const FunctionDecl *F,
                                                   ASTContext &Context,
                                                   Events &Ev) {
  if (!BO->isAssignmentOp())
    return;
  if (std::optional<ModuleRef> Target = moduleRefOf(BO->getLHS());
      Target && BO->getOpcode() == BO_Assign)
    addInitOrAssignment(BO, *Target, BO->getRHS(), F, Context, Ev);
  addParameterAssignment(BO, BO->getLHS(), BO->isCompoundAssignmentOp(), Ev);
}

void OffloadedParameterFinder::addOperatorCallEvents(
    const CXXOperatorCallExpr *Op, const FunctionDecl *F, ASTContext &Context,
    Events &Ev) {
  if (Op->isAssignmentOp() && Op->getNumArgs() == 2) {
    bool Compound = Op->getOperator() != OO_Equal;
    if (std::optional<ModuleRef> Target = moduleRefOf(Op->getArg(0));
        Target && !Compound)
      addInitOrAssignment(Op, *Target, Op->getArg(1), F, Context, Ev);
    addParameterAssignment(Op, Op->getArg(0), Compound, Ev);
    return;
  }
  if (Op->getOperator() != OO_Call)
    return;
  // model(x) on a module holder runs its forward.
  if (const Expr *Model = forwardedModel(Op)) {
    if (std::optional<ModuleRef> Ref = moduleRefOf(Model))
      Ev.Needs.push_back(ModelEvent{Op, *Ref, "forward", {}});
    return;
  }
  if (addInvokedEffects(Op, Context, Ev)) // std::ranges::for_each(r, f)
    return;
  // A call of a lambda, another callable object of the user's, or a
  // std::function set once: the object is the first argument.
  addCallEffects(Op, calledFunction(Op), /*FirstArg=*/1, Context, Ev);
}

void OffloadedParameterFinder::addMemberCallEvents(
    const CXXMemberCallExpr *Call, const FunctionDecl *F, ASTContext &Context,
    Events &Ev) {
  const CXXMethodDecl *Method = Call->getMethodDecl();
  if (!Method)
    return;
  const Expr *Object = Call->getImplicitObjectArgument();
  const bool OnModule = isModuleClass(Method->getParent());
  if (OnModule && isNamed(Method, "to")) {
    if (const Expr *Moved = movedModel(Call))
      if (std::optional<ModuleRef> Ref = moduleRefOf(Moved))
        Ev.Moves.push_back(ModelEvent{Call, *Ref, "to", {}});
    return;
  }
  if (const Expr *Model = forwardedModel(Call)) {
    if (std::optional<ModuleRef> Ref = moduleRefOf(Model))
      Ev.Needs.push_back(ModelEvent{Call, *Ref, "forward", {}});
    return;
  }
  if (OnModule && isNamed(Method, "register_parameter")) {
    if (std::optional<ModuleRef> Ref = moduleRefOf(Object))
      Ev.Mutations.push_back(Mutation{
          Call, *Ref, MutationKind::Register, "register_parameter", {}});
    return;
  }
  if (addWrite(Call, Ev))
    return;
  if (Method->getIdentifier() &&
      llvm::is_contained(ContainerInserters, Method->getName()) &&
      isModelContainerType(Object->getType())) {
    addContainerInsertion(Call, F, Context, Ev);
    return;
  }
  if (OnModule && isNamed(Method, "apply") && Call->getNumArgs() == 1) {
    addApplyEffects(Call, Context, Ev);
    return;
  }
  // ptr.reset() ends the model the variable held.
  if (isNamed(Method, "reset")) {
    if (std::optional<ModuleRef> Ref = moduleRefOf(Object);
        Ref && Ref->isRoot())
      Ev.Reassigns.push_back(ModelEvent{Call, *Ref, {}, {}});
    return;
  }
  if (addInvokedEffects(Call, Context, Ev)) // threads.emplace_back(body)
    return;
  addCallEffects(Call, Method, /*FirstArg=*/0, Context, Ev);
}

void OffloadedParameterFinder::addContainerInsertion(
    const CXXMemberCallExpr *Call, const FunctionDecl *F, ASTContext &Context,
    Events &Ev) {
  std::optional<ModuleRef> Ref = moduleRefOf(Call->getImplicitObjectArgument());
  if (!Ref)
    return;
  for (const Expr *Arg : Call->arguments())
    if (std::optional<Dispatch> D = dispatchedValue(Arg, F, Context)) {
      D->Ref = *Ref;
      Ev.Dispatches.push_back(*D);
      return;
    }
}

void OffloadedParameterFinder::addApplyEffects(const CXXMemberCallExpr *Call,
                                               ASTContext &Context,
                                               Events &Ev) {
  std::optional<ModuleRef> Ref = moduleRefOf(Call->getImplicitObjectArgument());
  if (!Ref)
    return;
  const FunctionDecl *Fn = functionOfCallableObject(Call->getArg(0));
  if (!Fn)
    return;
  if (const FunctionSummary *S = summaries(Context).lookup<ModelFacts>(Fn))
    if (auto It = S->get<ModelFacts>().Args.find(0);
        It != S->get<ModelFacts>().Args.end())
      addEffects(Call, *Ref, "apply", It->second, Ev);
}

void OffloadedParameterFinder::addCallEvents(const CallExpr *Call,
                                             ASTContext &Context, Events &Ev) {
  // Also through a function pointer set once.
  const FunctionDecl *Callee = calledFunction(Call);
  if (!Callee)
    return;
  if (Dispatchers.matches(Callee)) {
    addDispatchCall(Call, Callee, Ev);
    return;
  }
  if (HookRemovers.matches(Callee)) {
    if (Call->getNumArgs() > 0)
      if (std::optional<ModuleRef> Ref = moduleRefOf(Call->getArg(0)))
        Ev.Removals.push_back(ModelEvent{Call, *Ref, calleeName(Callee), {}});
    return;
  }
  if (NeedsHooks.matches(Callee)) {
    for (const Expr *Arg : Call->arguments())
      if (std::optional<ModuleRef> Ref = moduleRefOf(Arg)) {
        Ev.Needs.push_back(ModelEvent{Call, *Ref, calleeName(Callee), {}});
        break;
      }
    return;
  }
  if (addWrite(Call, Ev) || Loaders.isLoader(Callee) ||
      addInvokedEffects(Call, Context, Ev)) // std::for_each(b, e, f)
    return;
  addCallEffects(Call, Callee, /*FirstArg=*/0, Context, Ev);
}

void OffloadedParameterFinder::addDispatchCall(const CallExpr *Call,
                                               const FunctionDecl *Callee,
                                               Events &Ev) {
  std::optional<ModuleRef> Ref;
  if (Call->getNumArgs() > 0)
    Ref = moduleRefOf(Call->getArg(0));
  if (!Ref)
    return;
  // dispatch_model(m, DeviceMap::on(cpu)), or any map without "disk",
  // brings everything back into memory: the model may move again.
  if (Call->getNumArgs() > 1 && isInMemoryDeviceMap(Call->getArg(1))) {
    Ev.Undispatches.push_back(ModelEvent{Call, *Ref, calleeName(Callee), {}});
    return;
  }
  Dispatch D;
  D.S = Call;
  D.Ref = *Ref;
  D.Function = calleeName(Callee);
  Ev.Dispatches.push_back(D);
}

bool OffloadedParameterFinder::addWrite(const CallExpr *Call, Events &Ev) {
  const FunctionDecl *Callee = Call->getDirectCallee();
  // torch::load(m, path), m->load_state_dict(dict): every parameter.
  if (const Expr *Model = TensorWrites::loadedModel(Call)) {
    if (std::optional<ModuleRef> Ref = moduleRefOf(Model)) {
      Mutation M{Call, *Ref, MutationKind::Load, calleeName(Callee), {}};
      M.WholeModel = true;
      Ev.Mutations.push_back(M);
    }
    return true;
  }
  const auto *Member = dyn_cast<CXXMemberCallExpr>(Call);
  if (!Member) {
    // torch::nn::init::normal_(p, ...).
    const Expr *Written = Writes.writtenArgument(Call);
    if (!Written)
      return false;
    if (std::optional<ModuleRef> Owner = Writes.parameterOwner(Written))
      Ev.Mutations.push_back(
          Mutation{Call, *Owner, MutationKind::Call, calleeName(Callee), {}});
    return true;
  }
  // opt.step() on an optimizer built from the model's parameters.
  if (std::optional<OptimizerStep> Step = optimizerStep(Member, Writes)) {
    for (const ModuleRef &Owner : Step->Owners) {
      Mutation M{Call, Owner, MutationKind::Optimizer, "step", {}};
      M.Optimizer = Step->Optimizer;
      M.WholeModel = true;
      Ev.Mutations.push_back(M);
    }
    return true;
  }
  if (!Writes.writesObject(Member, Functions.parents()))
    return false;
  if (std::optional<ModuleRef> Owner =
          Writes.parameterOwner(Member->getImplicitObjectArgument()))
    Ev.Mutations.push_back(Mutation{Call,
                                    *Owner,
                                    MutationKind::Call,
                                    Member->getMethodDecl()->getNameAsString(),
                                    {}});
  return true;
}

void OffloadedParameterFinder::addParameterAssignment(const Stmt *S,
                                                      const Expr *Lhs,
                                                      bool Compound,
                                                      Events &Ev) const {
  // Assigning a new tensor to a local handle only rebinds the handle.
  const Expr *Stripped = ignoreObjectPlumbing(Lhs);
  if (!Compound)
    if (const auto *Ref = dyn_cast<DeclRefExpr>(Stripped))
      if (const auto *Var = dyn_cast<VarDecl>(Ref->getDecl());
          Var && !Var->getType()->isReferenceType())
        return;
  if (!isTensorType(Lhs->getType()))
    return;
  if (std::optional<ModuleRef> Owner = Writes.parameterOwner(Lhs))
    Ev.Mutations.push_back(
        Mutation{S, *Owner, MutationKind::Assign, Compound ? "+=" : "=", {}});
}

void OffloadedParameterFinder::addInitOrAssignment(
    const Stmt *S, const ModuleRef &Target, const Expr *Value,
    const FunctionDecl *F, ASTContext &Context, Events &Ev) {
  if (std::optional<Dispatch> D = dispatchedValue(Value, F, Context)) {
    D->Ref = Target;
    Ev.Dispatches.push_back(*D);
    return;
  }
  // Any other value is a model that was not dispatched here.
  Ev.Reassigns.push_back(ModelEvent{S, Target, {}, {}});
}

} // namespace clang::tidy::metaguard
