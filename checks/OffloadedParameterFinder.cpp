//===--- OffloadedParameterFinder.cpp - metaguard-tidy ---------*- C++ -*-===//

#include "OffloadedParameterFinder.h"
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

using offload::MutationKind;

namespace {

/// The callee's name for messages.
std::string calleeName(const FunctionDecl *FD) {
  return FD ? qualifiedNameOf(FD) : std::string("<call>");
}

/// How a called function is named in messages.
std::string helperName(const FunctionDecl *FD) {
  if (const auto *Method = dyn_cast<CXXMethodDecl>(FD))
    if (Method->getParent()->isLambda())
      return "lambda";
  return qualifiedNameOf(FD);
}

/// Methods of standard containers that put an element in.
constexpr llvm::StringLiteral ContainerInserters[] = {
    "push_back", "emplace_back", "push_front",       "emplace_front",
    "insert",    "emplace",      "insert_or_assign", "try_emplace"};

/// The first of Members whose dispatch applies to Ref.
const offload::Dispatch *
memberDispatch(llvm::ArrayRef<const offload::Dispatch *> Members,
               const ModuleRef &Ref, bool AncestorsToo) {
  for (const offload::Dispatch *D : Members)
    if (refCovers(D->Ref, Ref, AncestorsToo))
      return D;
  return nullptr;
}

} // namespace

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
// The events of a function
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// What called functions do to the models they are given
//===----------------------------------------------------------------------===//

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
