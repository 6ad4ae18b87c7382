//===--- OffloadedParameterMoveCheck.cpp - metaguard-tidy ------*- C++ -*-===//

#include "OffloadedParameterMoveCheck.h"
#include "utils/DeviceExpr.h"
#include "utils/ExplicitOptions.h"
#include "utils/FunctionBodies.h"
#include "utils/MemberModels.h"
#include "utils/ModelProducers.h"
#include "utils/OptimizerParameters.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/StmtCXX.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"
#include "llvm/ADT/STLExtras.h"

using namespace clang::ast_matchers;

namespace clang::tidy::metaguard {

namespace {

constexpr llvm::StringLiteral DefaultDispatchFunctions =
    "::metaguard::dispatch_model";
constexpr llvm::StringLiteral DefaultHookRemovers =
    "::metaguard::remove_hook_from_module";
constexpr llvm::StringLiteral DefaultNeedsHooks =
    "::metaguard::save_pretrained;::metaguard::load_offloaded_parameter;"
    "::metaguard::verify_dispatch";

/// The callee's name for messages.
std::string calleeName(const FunctionDecl *FD) {
  return FD ? qualifiedNameOf(FD) : std::string("<call>");
}

/// Whether the call passes a device (not only a dtype) to the method.
bool passesDevice(const CXXMemberCallExpr *Call) {
  const FunctionDecl *Method = Call->getDirectCallee();
  if (!Method)
    return false;
  for (unsigned I = 0; I < Call->getNumArgs(); ++I) {
    if (isa<CXXDefaultArgExpr>(Call->getArg(I)))
      continue;
    if (I < Method->getNumParams() &&
        isDeviceType(Method->getParamDecl(I)->getType()))
      return true;
  }
  return false;
}

/// How many factories returning factories' results the notes name (the
/// dispatch itself is followed at any depth).
constexpr unsigned MaxFactoryDepth = 4;

/// "dispatched model 'm'" or "'m.encoder' of dispatched model 'm'".
std::string describe(const ModuleRef &Ref) {
  std::string Model = "dispatched model '" + Ref.Root->getNameAsString() + "'";
  if (Ref.isRoot())
    return Model;
  return "'" + Ref.displayName() + "' of " + Model;
}

/// Methods of standard containers that put an element in.
constexpr llvm::StringLiteral ContainerInserters[] = {
    "push_back", "emplace_back", "push_front",       "emplace_front",
    "insert",    "emplace",      "insert_or_assign", "try_emplace"};

/// How a called function is named in messages.
std::string helperName(const FunctionDecl *FD) {
  if (const auto *Method = dyn_cast<CXXMethodDecl>(FD))
    if (Method->getParent()->isLambda())
      return "lambda";
  return qualifiedNameOf(FD);
}

} // namespace

/// Model facts: what a function does to the models passed to it (moves,
/// mutates parameters of, removes hooks of its argument N, at any depth),
/// and whether it returns a dispatched model.
class OffloadedParameterMoveCheck::ModelFacet
    : public SummaryFacetFor<ModelFacts> {
public:
  explicit ModelFacet(OffloadedParameterMoveCheck &Check) : Check(Check) {}

  bool follows(const FunctionDecl *FD) const override {
    // The offload API itself and library code are not the user's helpers.
    return !FD->isDependentContext() &&
           !FD->getASTContext().getSourceManager().isInSystemHeader(
               FD->getLocation()) &&
           !Check.Dispatchers.matches(FD) && !Check.Loaders.isLoader(FD) &&
           !Check.HookRemovers.matches(FD) && !Check.NeedsHooks.matches(FD);
  }

  void summarise(const FunctionDecl *F, FunctionSummary &Summary,
                 SummaryTable &Table) override {
    ModelFacts &Out = Summary.edit<ModelFacts>();
    ASTContext &Context = Table.context();
    Events Ev = Check.collectEvents(F, Context);
    const CfgReachability *Cfg = Check.Cfgs.get(F, F->getBody(), Context);
    // The index of the parameter an event is about, if it is one of F's.
    auto ParamIndex = [&](const ModuleRef &Ref) -> std::optional<unsigned> {
      const auto *Param = dyn_cast_or_null<ParmVarDecl>(Ref.Root);
      if (!Param || Param->getDeclContext() != F)
        return std::nullopt;
      return Param->getFunctionScopeIndex();
    };
    auto Record = [&](const Stmt *S, const ModuleRef &Ref, llvm::StringRef What,
                      const std::optional<ArgumentEffects> &Via,
                      bool ArgumentEffects::*Flag) {
      std::optional<unsigned> Index = ParamIndex(Ref);
      if (!Index || (Cfg && !Cfg->contains(S)) ||
          Check.guardedByNoOffload(S, Ref, F))
        return;
      ArgumentEffects &Effects = Out.Args[*Index];
      if (!Effects.any()) {
        // The first effect found names the place for notes: the innermost
        // one, where the helper chain ends.
        Effects.At = Via ? Via->At : Table.refOf(S->getBeginLoc());
        Effects.What = Via ? Via->What : What.str();
        Effects.In = Via ? Via->In : helperName(F);
      }
      Effects.*Flag = true;
    };
    for (const ModelEvent &Move : Ev.Moves)
      Record(Move.S, Move.Ref, Move.Function, Move.Via,
             &ArgumentEffects::Moves);
    for (const Mutation &M : Ev.Mutations)
      Record(M.S, M.Owner, M.Function, M.Via,
             &ArgumentEffects::MutatesParameters);
    for (const ModelEvent &Removal : Ev.Removals)
      Record(Removal.S, Removal.Ref, Removal.Function, Removal.Via,
             &ArgumentEffects::RemovesHooks);
    if (returnsModel(F))
      if (const Dispatch *D = Check.factoryDispatch(F, Context)) {
        Out.ReturnsDispatchedModel = true;
        Out.DispatchedAt = Table.refOf(D->S->getBeginLoc());
        Out.DispatchChain = Check.dispatchChain(*D, Table);
      }
  }

private:
  OffloadedParameterMoveCheck &Check;
};

OffloadedParameterMoveCheck::OffloadedParameterMoveCheck(
    llvm::StringRef Name, ClangTidyContext *Context)
    : ClangTidyCheck(Name, Context),
      DispatchFunctionsOption(std::string(
          Options.get("DispatchFunctions", DefaultDispatchFunctions))),
      LoaderFunctionsOption(
          std::string(Options.get("LoaderFunctions", DefaultLoaderFunctions))),
      HookRemoversOption(
          std::string(Options.get("HookRemovers", DefaultHookRemovers))),
      NeedsHooksOption(
          std::string(Options.get("NeedsHooks", DefaultNeedsHooks))),
      ParameterMutatorsOption(std::string(
          Options.get("ParameterMutators", DefaultParameterMutators))),
      IgnoredInPlaceMethodsOption(std::string(
          Options.get("IgnoredInPlaceMethods", DefaultIgnoredInPlaceMethods))),
      Dispatchers(DispatchFunctionsOption), Loaders(LoaderFunctionsOption),
      HookRemovers(HookRemoversOption), NeedsHooks(NeedsHooksOption),
      Writes(ParameterMutatorsOption, IgnoredInPlaceMethodsOption),
      ModelFacetImpl(std::make_unique<ModelFacet>(*this)),
      Facts(Name, Options) {}

OffloadedParameterMoveCheck::~OffloadedParameterMoveCheck() = default;

SummaryTable &OffloadedParameterMoveCheck::summaries(ASTContext &Context) {
  return Facts.table(Summaries, Context,
                     {ModelFacetImpl.get(), &OptionsFacetImpl});
}

void OffloadedParameterMoveCheck::storeOptions(
    ClangTidyOptions::OptionMap &Opts) {
  Options.store(Opts, "DispatchFunctions", DispatchFunctionsOption);
  Options.store(Opts, "LoaderFunctions", LoaderFunctionsOption);
  Options.store(Opts, "HookRemovers", HookRemoversOption);
  Options.store(Opts, "NeedsHooks", NeedsHooksOption);
  Options.store(Opts, "ParameterMutators", ParameterMutatorsOption);
  Options.store(Opts, "IgnoredInPlaceMethods", IgnoredInPlaceMethodsOption);
  Facts.storeOptions(Options, Opts);
}

void OffloadedParameterMoveCheck::registerMatchers(MatchFinder *Finder) {
  Facts.registerMatchers(Finder);
  // A function is analysed when something in it may dispatch a model: a
  // DispatchFunctions call, a loader call (whose options decide later), or a
  // call to a function that returns a dispatched model.
  Finder->addMatcher(
      callExpr(unless(isExpansionInSystemHeader()), callee(functionDecl()))
          .bind("call"),
      this);
}

void OffloadedParameterMoveCheck::check(
    const MatchFinder::MatchResult &Result) {
  const auto *Call = Result.Nodes.getNodeAs<CallExpr>("call");
  if (!Call)
    return;
  const FunctionDecl *Callee = Call->getDirectCallee();
  if (!Callee)
    return;
  bool MayDispatch =
      Dispatchers.matches(Callee) || Loaders.isLoader(Callee) ||
      (returnsModel(Callee) && factoryDispatch(Callee, *Result.Context));
  if (!MayDispatch && !definitionWithBody(Callee) && returnsModel(Callee))
    // A factory in another translation unit, known from its summary.
    if (const FunctionSummary *S =
            summaries(*Result.Context).lookup<ModelFacts>(Callee))
      MayDispatch = S->get<ModelFacts>().ReturnsDispatchedModel;
  if (!MayDispatch)
    return;
  EnclosingFunction Fn = Functions.enclosing(Call, *Result.Context);
  analyzeFunction(Fn.Function, *Result.Context);
}

void OffloadedParameterMoveCheck::onEndOfTranslationUnit() {
  Facts.exportTable(
      [this](ASTContext &Context) -> SummaryTable & {
        return summaries(Context);
      },
      {&facetKind<ModelFacts>(), &facetKind<OptionsFacts>()});
  Cfgs.clear();
  Functions.clear();
  Analyzed.clear();
  Reported.clear();
  FactoryMemo.clear();
  FactoryInProgress.clear();
  Summaries.reset();
  OptionsFacetImpl.clear();
  LambdasInProgress.clear();
  Guards.clear();
}

std::optional<OffloadedParameterMoveCheck::Dispatch>
OffloadedParameterMoveCheck::dispatchedValue(const Expr *Value,
                                             const FunctionDecl *F,
                                             ASTContext &Context, bool &Fresh) {
  Fresh = true;
  const CallExpr *Call = Value ? producingCall(Value) : nullptr;
  if (!Call)
    return std::nullopt;
  if (std::optional<std::string> LoaderName = Loaders.loaderCallName(Call)) {
    // As at run time: only a device map dispatches the loaded model (an
    // offload folder alone is ignored), and a map that visibly keeps every
    // parameter in memory offloads nothing.
    const Expr *Map =
        findExplicitOptionMember(Call, {DeviceMapMember}, F, Context, Cfgs);
    if (Map) {
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
    D.Source = DispatchSource::Loader;
    D.Function = Callee ? qualifiedNameOf(Callee) : *LoaderName;
    return D;
  }
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
  D.Source = DispatchSource::Factory;
  D.Function = calleeName(Callee);
  D.Inner = Inner;
  return D;
}

const OffloadedParameterMoveCheck::Dispatch *
OffloadedParameterMoveCheck::factoryDispatch(const FunctionDecl *FD,
                                             ASTContext &Context) {
  const FunctionDecl *Def = definitionWithBody(FD);
  if (!Def || Def->isDependentContext() || Loaders.isLoader(Def) ||
      Dispatchers.matches(Def) ||
      Context.getSourceManager().isInSystemHeader(Def->getLocation()))
    return nullptr;
  if (auto It = FactoryMemo.find(Def); It != FactoryMemo.end()) {
    const std::optional<Dispatch> &Memo = It->second;
    if (!Memo.has_value())
      return nullptr;
    return &*Memo;
  }
  if (!FactoryInProgress.insert(Def).second)
    return nullptr; // Recursive: the outer search decides.

  std::optional<Dispatch> Result;
  Events Ev = collectEvents(Def, Context);
  const CfgReachability *Cfg = Cfgs.get(Def, Def->getBody(), Context);
  forEachEvaluatedStmt(Def, [&](const Stmt *S) {
    const auto *Ret = dyn_cast<ReturnStmt>(S);
    if (Result || !Ret || !Ret->getRetValue() || !Cfg || !Cfg->contains(Ret))
      return;
    // `return from_pretrained<M>(dir, placed);`, `return other_factory();`
    bool Fresh = false;
    if (std::optional<Dispatch> D =
            dispatchedValue(Ret->getRetValue(), Def, Context, Fresh)) {
      Result = D;
      return;
    }
    // `return model;` with model dispatched on some path to here.
    std::optional<ModuleRef> Ref = moduleRefOf(Ret->getRetValue());
    if (!Ref || !Ref->isRoot())
      return;
    if (const Dispatch *D =
            reachingDispatch(Ret, *Ref, /*AncestorsToo=*/false, Ev, *Cfg))
      Result = *D;
  });
  FactoryInProgress.erase(Def);
  std::optional<Dispatch> &Slot = FactoryMemo[Def];
  Slot = Result;
  return Slot ? &*Slot : nullptr;
}

void OffloadedParameterMoveCheck::addInitOrAssignment(
    const Stmt *S, const ModuleRef &Target, const Expr *Value,
    const FunctionDecl *F, ASTContext &Context, Events &Out) {
  bool Fresh = false;
  if (std::optional<Dispatch> D = dispatchedValue(Value, F, Context, Fresh)) {
    D->Ref = Target;
    Out.Dispatches.push_back(*D);
    return;
  }
  // Any other value is a model that was not dispatched here.
  Out.Reassigns.push_back(ModelEvent{S, Target, {}, {}});
}

void OffloadedParameterMoveCheck::addParameterAssignment(const Stmt *S,
                                                         const Expr *Lhs,
                                                         bool Compound,
                                                         Events &Out) const {
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
    Out.Mutations.push_back(
        Mutation{S, *Owner, MutationKind::Assign, Compound ? "+=" : "=", {}});
}

void OffloadedParameterMoveCheck::addEffects(const Stmt *Call,
                                             const ModuleRef &Ref,
                                             llvm::StringRef Callee,
                                             const ArgumentEffects &Effects,
                                             Events &Out) {
  if (Effects.Moves)
    Out.Moves.push_back(ModelEvent{Call, Ref, Callee.str(), Effects});
  if (Effects.MutatesParameters)
    Out.Mutations.push_back(
        Mutation{Call, Ref, MutationKind::Call, Callee.str(), Effects});
  if (Effects.RemovesHooks)
    Out.Removals.push_back(ModelEvent{Call, Ref, Callee.str(), Effects});
}

void OffloadedParameterMoveCheck::addCallEffects(const CallExpr *Call,
                                                 const FunctionDecl *Callee,
                                                 unsigned FirstArg,
                                                 ASTContext &Context,
                                                 Events &Out) {
  if (!Callee)
    return;
  SummaryTable &Table = summaries(Context);
  const std::string Name = helperName(Callee);
  // What it does to the models passed to it: any function the call may run
  // (every visible override of a virtual one).
  llvm::SmallVector<const FunctionDecl *, 2> Targets = Table.callTargets(Call);
  if (Targets.empty())
    Targets.push_back(Callee);
  auto AddArgs = [&](const FunctionSummary &S, llvm::StringRef TargetName) {
    for (const auto &[Index, Effects] : S.get<ModelFacts>().Args) {
      const unsigned ArgIndex = Index + FirstArg;
      if (ArgIndex < Call->getNumArgs())
        if (std::optional<ModuleRef> Ref = moduleRefOf(Call->getArg(ArgIndex)))
          addEffects(Call, *Ref, TargetName, Effects, Out);
    }
  };
  for (const FunctionDecl *Target : Targets)
    if (const FunctionSummary *S = Table.lookup<ModelFacts>(Target))
      AddArgs(*S, helperName(Target));
  // Overrides that only other translation units define.
  for (const FunctionSummary *S : Table.externalTargets(Call))
    AddArgs(*S, S->Name);
  // What a lambda does to the models it captures (by reference or by copy:
  // a copy of a holder is the same model).
  const auto *Method = dyn_cast<CXXMethodDecl>(Callee);
  if (!Method || !Method->getParent()->isLambda())
    return;
  const FunctionDecl *Def = definitionWithBody(Method);
  if (!Def || !LambdasInProgress.insert(Def).second)
    return;
  Events Inner = collectEvents(Def, Context);
  const CfgReachability *Cfg = Cfgs.get(Def, Def->getBody(), Context);
  auto Add = [&](const Stmt *S, const ModuleRef &Ref, llvm::StringRef What,
                 const std::optional<ArgumentEffects> &Via,
                 bool ArgumentEffects::*Flag) {
    if (!isa<VarDecl>(Ref.Root) || Ref.Root->getDeclContext() == Def ||
        (Cfg && !Cfg->contains(S)) || guardedByNoOffload(S, Ref, Def))
      return; // Not a captured variable, or not done.
    ArgumentEffects Effects;
    Effects.At = Via ? Via->At : Table.refOf(S->getBeginLoc());
    Effects.What = Via ? Via->What : What.str();
    Effects.In = Via ? Via->In : Name;
    Effects.*Flag = true;
    addEffects(Call, Ref, Name, Effects, Out);
  };
  for (const ModelEvent &Move : Inner.Moves)
    Add(Move.S, Move.Ref, Move.Function, Move.Via, &ArgumentEffects::Moves);
  for (const Mutation &M : Inner.Mutations)
    Add(M.S, M.Owner, M.Function, M.Via, &ArgumentEffects::MutatesParameters);
  for (const ModelEvent &Removal : Inner.Removals)
    Add(Removal.S, Removal.Ref, Removal.Function, Removal.Via,
        &ArgumentEffects::RemovesHooks);
  LambdasInProgress.erase(Def);
}

bool OffloadedParameterMoveCheck::guardedByNoOffload(const Stmt *S,
                                                     const ModuleRef &Ref,
                                                     const FunctionDecl *F) {
  return Guards.guarded(S, Ref, F, Functions.parents());
}

OffloadedParameterMoveCheck::Events
OffloadedParameterMoveCheck::collectEvents(const FunctionDecl *F,
                                           ASTContext &Context) {
  Events Ev;
  Functions.parents().indexFunction(F);
  // `: model_(from_pretrained<M>(dir, placed))` dispatches the member.
  if (const auto *Ctor = dyn_cast<CXXConstructorDecl>(F))
    for (const CXXCtorInitializer *Init : Ctor->inits()) {
      bool Fresh = false;
      if (!Init->isMemberInitializer() || !Init->isWritten())
        continue;
      if (std::optional<Dispatch> D =
              dispatchedValue(Init->getInit(), F, Context, Fresh)) {
        D->Ref.Root = Init->getMember();
        Ev.Dispatches.push_back(*D);
      }
    }
  forEachEvaluatedStmt(F, [&](const Stmt *S) {
    if (const auto *DS = dyn_cast<DeclStmt>(S)) {
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
        addInitOrAssignment(Var->getInit(), Target, Var->getInit(), F, Context,
                            Ev);
      }
      return;
    }
    if (const auto *BO = dyn_cast<BinaryOperator>(S)) {
      if (!BO->isAssignmentOp())
        return;
      if (std::optional<ModuleRef> Target = moduleRefOf(BO->getLHS());
          Target && BO->getOpcode() == BO_Assign)
        addInitOrAssignment(BO, *Target, BO->getRHS(), F, Context, Ev);
      addParameterAssignment(BO, BO->getLHS(), BO->isCompoundAssignmentOp(),
                             Ev);
      return;
    }
    if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(S)) {
      if (Op->isAssignmentOp() && Op->getNumArgs() == 2) {
        bool Compound = Op->getOperator() != OO_Equal;
        if (std::optional<ModuleRef> Target = moduleRefOf(Op->getArg(0));
            Target && !Compound)
          addInitOrAssignment(Op, *Target, Op->getArg(1), F, Context, Ev);
        addParameterAssignment(Op, Op->getArg(0), Compound, Ev);
        return;
      }
      // model(x) on a module holder runs its forward.
      if (Op->getOperator() == OO_Call && Op->getNumArgs() >= 1 &&
          isModuleOrHolderType(Op->getArg(0)->getType())) {
        if (std::optional<ModuleRef> Ref = moduleRefOf(Op->getArg(0)))
          Ev.Needs.push_back(ModelEvent{Op, *Ref, "forward", {}});
        return;
      }
      // A call of a lambda, another callable object of the user's, or a
      // std::function set once: the object is the first argument.
      if (Op->getOperator() == OO_Call)
        addCallEffects(Op, calledFunction(Op), /*FirstArg=*/1, Context, Ev);
      return;
    }
    if (const auto *Call = dyn_cast<CXXMemberCallExpr>(S)) {
      addMemberCallEvents(Call, F, Context, Ev);
      return;
    }
    if (const auto *Call = dyn_cast<CallExpr>(S))
      addCallEvents(Call, Context, Ev);
  });
  return Ev;
}

void OffloadedParameterMoveCheck::addMemberCallEvents(
    const CXXMemberCallExpr *Call, const FunctionDecl *F, ASTContext &Context,
    Events &Ev) {
  const CXXMethodDecl *Method = Call->getMethodDecl();
  if (!Method)
    return;
  const Expr *Object = Call->getImplicitObjectArgument();
  const bool OnModule = isModuleClass(Method->getParent());
  if (OnModule && isNamed(Method, "to")) {
    if (passesDevice(Call))
      if (std::optional<ModuleRef> Ref = moduleRefOf(Object))
        Ev.Moves.push_back(ModelEvent{Call, *Ref, "to", {}});
    return;
  }
  if (OnModule && isNamed(Method, "forward")) {
    if (std::optional<ModuleRef> Ref = moduleRefOf(Object))
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
  // models.push_back(from_pretrained<M>(dir, placed)): the container
  // now holds a dispatched model.
  if (Method->getIdentifier() &&
      llvm::is_contained(ContainerInserters, Method->getName()) &&
      isModelContainerType(Object->getType())) {
    if (std::optional<ModuleRef> Ref = moduleRefOf(Object))
      for (const Expr *Arg : Call->arguments()) {
        bool Fresh = false;
        if (std::optional<Dispatch> D =
                dispatchedValue(Arg, F, Context, Fresh)) {
          D->Ref = *Ref;
          Ev.Dispatches.push_back(*D);
          break;
        }
      }
    return;
  }
  // model->apply(fn) calls fn on the model and each submodule: what fn
  // does to its module argument is done to the model.
  if (OnModule && isNamed(Method, "apply") && Call->getNumArgs() == 1) {
    if (std::optional<ModuleRef> Ref = moduleRefOf(Object))
      if (const FunctionDecl *Fn = functionOfCallableObject(Call->getArg(0)))
        if (const FunctionSummary *S =
                summaries(Context).lookup<ModelFacts>(Fn))
          if (auto It = S->get<ModelFacts>().Args.find(0);
              It != S->get<ModelFacts>().Args.end())
            addEffects(Call, *Ref, "apply", It->second, Ev);
    return;
  }
  // ptr.reset() ends the model the variable held.
  if (isNamed(Method, "reset")) {
    if (std::optional<ModuleRef> Ref = moduleRefOf(Object);
        Ref && Ref->isRoot())
      Ev.Reassigns.push_back(ModelEvent{Call, *Ref, {}, {}});
    return;
  }
  addCallEffects(Call, Method, /*FirstArg=*/0, Context, Ev);
  return;
}

void OffloadedParameterMoveCheck::addCallEvents(const CallExpr *Call,
                                                ASTContext &Context,
                                                Events &Ev) {
  // Also through a function pointer set once.
  const FunctionDecl *Callee = calledFunction(Call);
  if (!Callee)
    return;
  if (Dispatchers.matches(Callee)) {
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
  if (!addWrite(Call, Ev) && !Loaders.isLoader(Callee))
    addCallEffects(Call, Callee, /*FirstArg=*/0, Context, Ev);
}

bool OffloadedParameterMoveCheck::addWrite(const CallExpr *Call, Events &Ev) {
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

const OffloadedParameterMoveCheck::Dispatch *
OffloadedParameterMoveCheck::reachingDispatch(
    const Stmt *Target, const ModuleRef &Ref, bool AncestorsToo,
    const Events &Ev, const CfgReachability &Cfg) const {
  llvm::SmallVector<const Stmt *, 4> Gens, Kills;
  for (const Dispatch &D : Ev.Dispatches)
    if (refCovers(D.Ref, Ref, AncestorsToo))
      Gens.push_back(D.S);
  if (Gens.empty())
    return nullptr;
  // A new object in the variable (or in a member on the way to Ref) is not
  // dispatched.
  addReplacements(Ev, Ref, Kills);
  std::optional<CfgReachability::Reach> Reach =
      Cfg.findReachingGen(Target, Gens, Kills);
  if (!Reach || !Reach->Gen)
    return nullptr;
  for (const Dispatch &D : Ev.Dispatches)
    if (D.S == Reach->Gen)
      return &D;
  return nullptr;
}

void OffloadedParameterMoveCheck::addReplacements(
    const Events &Ev, const ModuleRef &Ref,
    llvm::SmallVectorImpl<const Stmt *> &Kills) {
  for (const std::vector<ModelEvent> *List : {&Ev.Reassigns, &Ev.Undispatches})
    for (const ModelEvent &R : *List)
      if (sameRoot(R.Ref, Ref) && isPathPrefix(R.Ref.Path, Ref.Path))
        Kills.push_back(R.S);
}

const OffloadedParameterMoveCheck::Dispatch *
OffloadedParameterMoveCheck::dispatchToReport(
    const Stmt *S, const ModuleRef &Ref, bool AncestorsToo, const Events &Ev,
    const CfgReachability &Cfg, ASTContext &Context) {
  if (!Cfg.contains(S))
    return nullptr;
  const Dispatch *D = reachingDispatch(S, Ref, AncestorsToo, Ev, Cfg);
  if (!D || !report(S, Context))
    return nullptr;
  return D;
}

void OffloadedParameterMoveCheck::analyzeFunction(const FunctionDecl *F,
                                                  ASTContext &Context) {
  if (!F || !F->getBody() || F->isDependentContext() ||
      !Analyzed.insert(F).second)
    return;
  const SourceManager &SM = Context.getSourceManager();
  if (SM.isInSystemHeader(F->getLocation()))
    return;
  Events Ev = collectEvents(F, Context);
  if (Ev.Dispatches.empty())
    return;
  const CfgReachability *Cfg = Cfgs.get(F, F->getBody(), Context);
  if (!Cfg)
    return;

  // 1. Moving a dispatched model, or a submodule of one.
  for (const ModelEvent &Move : Ev.Moves)
    if (!guardedByNoOffload(Move.S, Move.Ref, F))
      if (const Dispatch *D = dispatchToReport(
              Move.S, Move.Ref, /*AncestorsToo=*/true, Ev, *Cfg, Context))
        reportMove(Move, *D, Context);

  // 2. Replacing, moving or writing a parameter of a dispatched model.
  for (const Mutation &M : Ev.Mutations)
    if (!guardedByNoOffload(M.S, M.Owner, F))
      if (const Dispatch *D =
              dispatchToReport(M.S, M.Owner, M.WholeModel, Ev, *Cfg, Context))
        reportMutation(M, *D, Context);

  // 2b. The same in other methods of the object, for a member model.
  if (const auto *Method = dyn_cast<CXXMethodDecl>(F))
    analyzeLaterMethods(Method, Ev, *Cfg, Context);

  // 3. Needing hooks after they were removed, with no re-dispatch between.
  // Dispatching again needs them too: it reads every offloaded parameter
  // through its hook before placing it anew.
  std::vector<ModelEvent> Needs = Ev.Needs;
  for (const Dispatch &D : Ev.Dispatches)
    if (D.Source == DispatchSource::Call)
      Needs.push_back(ModelEvent{D.S, D.Ref, D.Function, {}});
  Needs.insert(Needs.end(), Ev.Undispatches.begin(), Ev.Undispatches.end());
  for (const ModelEvent &Need : Needs) {
    if (!Cfg->contains(Need.S))
      continue;
    for (const ModelEvent &Removal : Ev.Removals) {
      if (!sameRoot(Removal.Ref, Need.Ref) ||
          !(isPathPrefix(Removal.Ref.Path, Need.Ref.Path) ||
            isPathPrefix(Need.Ref.Path, Removal.Ref.Path)))
        continue;
      // A dispatch of the stripped module or of a model containing it gives
      // it hooks again; so does a new object in the variable.
      llvm::SmallVector<const Stmt *, 4> Kills;
      for (const Dispatch &D : Ev.Dispatches)
        if (D.S != Need.S && sameRoot(D.Ref, Removal.Ref) &&
            isPathPrefix(D.Ref.Path, Removal.Ref.Path))
          Kills.push_back(D.S);
      addReplacements(Ev, Removal.Ref, Kills);
      Kills.erase(std::remove(Kills.begin(), Kills.end(), Need.S), Kills.end());
      const Stmt *Gen[] = {Removal.S};
      if (!Cfg->findReachingGen(Need.S, Gen, Kills))
        continue;
      const Dispatch *D = reachingDispatch(Removal.S, Removal.Ref,
                                           /*AncestorsToo=*/true, Ev, *Cfg);
      if (!D || !report(Need.S, Context))
        continue;
      diag(SM.getFileLoc(Need.S->getBeginLoc()),
           "'%0' needs the offloading hooks of '%1', but they were removed "
           "on a path to here and the model was not dispatched again; its "
           "offloaded parameters are meta tensors with no way back to their "
           "weights, and dispatching it again cannot find them either: reload "
           "the model with its device map, or read what you need with "
           "load_offloaded_parameter before removing the hooks")
          << Need.Function << Need.Ref.displayName()
          << Need.S->getSourceRange();
      diag(SM.getFileLoc(Removal.S->getBeginLoc()),
           "'%0' removes the hooks of '%1' here", DiagnosticIDs::Note)
          << Removal.Function << Removal.Ref.displayName();
      if (Removal.Via)
        noteVia(*Removal.Via, 2, Context);
      noteDispatch(*D, Context);
      break;
    }
  }
}

void OffloadedParameterMoveCheck::reportMove(const ModelEvent &Move,
                                             const Dispatch &D,
                                             ASTContext &Context) {
  SourceLocation Loc =
      Context.getSourceManager().getFileLoc(Move.S->getBeginLoc());
  if (Move.Via) {
    diag(Loc, "'%0' moves %1 (with '%2'), which leaves its offloaded "
              "parameters behind their hooks as meta tensors whose weights "
              "can no longer be found; change where it runs through the "
              "device map instead: reload it with a new device_map, or call "
              "dispatch_model with a new map")
        << Move.Function << describe(Move.Ref) << Move.Via->What
        << Move.S->getSourceRange();
    noteVia(*Move.Via, 0, Context);
  } else {
    diag(Loc, "moving %0 with 'to' leaves its offloaded "
              "parameters behind their hooks as meta tensors whose weights "
              "can no longer be found; change where it runs through the "
              "device map instead: reload it with a new device_map, or call "
              "dispatch_model with a new map")
        << describe(Move.Ref) << Move.S->getSourceRange();
  }
  noteDispatch(D, Context);
}

void OffloadedParameterMoveCheck::reportMutation(const Mutation &M,
                                                 const Dispatch &D,
                                                 ASTContext &Context) {
  SourceLocation Loc =
      Context.getSourceManager().getFileLoc(M.S->getBeginLoc());
  if (M.Via) {
    diag(Loc, "'%0' changes a parameter of %1 in place (with '%2'), behind "
              "its offloading hook: the hook loads the offloaded weights into "
              "the tensor it registered, so the parameter is cut off from "
              "them or the change is silently lost; to read or change a copy, "
              "use load_offloaded_parameter, and to move parameters, reload "
              "the model or call dispatch_model with a new device map")
        << M.Function << describe(M.Owner) << M.Via->What
        << M.S->getSourceRange();
    noteVia(*M.Via, 1, Context);
  } else if (M.Kind == MutationKind::Optimizer) {
    diag(Loc, "'step' of an optimizer over the parameters of %0 updates "
              "them in place behind their offloading hooks: offloaded "
              "parameters are meta tensors between forwards, so every update "
              "of them is lost; train a model loaded without offloading "
              "(reload it, or call dispatch_model with an in-memory map "
              "first)")
        << describe(M.Owner) << M.S->getSourceRange();
    diag(M.Optimizer->getLocation(),
         "the optimizer '%0' is built here from the parameters of '%1'",
         DiagnosticIDs::Note)
        << M.Optimizer->getName() << M.Owner.displayName();
  } else if (M.Kind == MutationKind::Load) {
    diag(Loc, "'%0' writes a checkpoint into the parameters of %1 behind "
              "their offloading hooks: offloaded parameters are meta tensors "
              "between forwards, so their new values are lost; load the "
              "weights before dispatching, or reload the model from the "
              "checkpoint with its device map")
        << M.Function << describe(M.Owner) << M.S->getSourceRange();
  } else {
    diag(Loc, "%select{'%1' on|assigning to|re-registering}0 a parameter of "
              "%2 goes behind its offloading hook: the hook loads the "
              "offloaded weights into the tensor it registered, so the "
              "parameter is cut off from them or the change is silently lost; "
              "to read or change a copy, use load_offloaded_parameter, and to "
              "move parameters, reload the model or call dispatch_model with "
              "a new device map")
        << static_cast<int>(M.Kind) << M.Function << describe(M.Owner)
        << M.S->getSourceRange();
  }
  noteDispatch(D, Context);
}

void OffloadedParameterMoveCheck::analyzeLaterMethods(
    const CXXMethodDecl *F, const Events &Ev, const CfgReachability &FCfg,
    ASTContext &Context) {
  // A member still dispatched when F returns (on some path) is dispatched
  // when another method starts; a move or write there, reached from its
  // entry with no new value or in-memory dispatch of the member first, is
  // one of the dispatched model.
  llvm::SmallVector<const Dispatch *, 2> Members;
  for (const Dispatch &D : Ev.Dispatches) {
    if (!isMemberModel(D.Ref, F))
      continue;
    llvm::SmallVector<const Stmt *, 4> Kills;
    addReplacements(Ev, D.Ref, Kills);
    const Stmt *Gen[] = {D.S};
    if (FCfg.findReachingGenAtExit(Gen, Kills))
      Members.push_back(&D);
  }
  if (Members.empty())
    return;
  auto DispatchOf = [&](const ModuleRef &Ref,
                        bool AncestorsToo) -> const Dispatch * {
    for (const Dispatch *D : Members)
      if (refCovers(D->Ref, Ref, AncestorsToo))
        return D;
    return nullptr;
  };
  for (const CXXMethodDecl *Other : laterMethods(F)) {
    if (!Other->getBody())
      continue;
    const CfgReachability *Cfg = Cfgs.get(Other, Other->getBody(), Context);
    if (!Cfg)
      continue;
    Events Later = collectEvents(Other, Context);
    auto Reached = [&](const Stmt *S, const ModuleRef &Ref) {
      if (!Cfg->contains(S) || guardedByNoOffload(S, Ref, Other))
        return false;
      llvm::SmallVector<const Stmt *, 4> Kills;
      addReplacements(Later, Ref, Kills);
      for (const Dispatch &D : Later.Dispatches)
        if (sameRoot(D.Ref, Ref))
          Kills.push_back(D.S); // Its own analysis covers what follows.
      return Cfg->reachableFromEntry(S, Kills) && report(S, Context);
    };
    for (const ModelEvent &Move : Later.Moves)
      if (const Dispatch *D = DispatchOf(Move.Ref, /*AncestorsToo=*/true))
        if (Reached(Move.S, Move.Ref)) {
          reportMove(Move, *D, Context);
          noteLaterMethod(*F, Context);
        }
    for (const Mutation &M : Later.Mutations)
      if (const Dispatch *D = DispatchOf(M.Owner, M.WholeModel))
        if (Reached(M.S, M.Owner)) {
          reportMutation(M, *D, Context);
          noteLaterMethod(*F, Context);
        }
  }
}

void OffloadedParameterMoveCheck::noteLaterMethod(const CXXMethodDecl &F,
                                                  ASTContext &Context) {
  diag(Context.getSourceManager().getFileLoc(F.getLocation()),
       "the object keeps the model dispatched after '%0' returns, and this "
       "method does not check has_offloaded_parameters first",
       DiagnosticIDs::Note)
      << qualifiedNameOf(&F);
}

void OffloadedParameterMoveCheck::noteVia(const ArgumentEffects &Via,
                                          unsigned What, ASTContext &Context) {
  SourceLocation Loc = summaries(Context).locationOf(Via.At);
  if (Loc.isInvalid())
    return; // In another translation unit: the warning names the callee.
  diag(Loc,
       "%select{it is moved|its parameter is changed|its hooks are "
       "removed}0 here with '%1', in '%2'",
       DiagnosticIDs::Note)
      << What << Via.What << Via.In;
}

bool OffloadedParameterMoveCheck::report(const Stmt *At, ASTContext &Context) {
  SourceLocation Loc = Context.getSourceManager().getFileLoc(At->getBeginLoc());
  return Loc.isValid() && Reported.insert(Loc).second;
}

void OffloadedParameterMoveCheck::noteDispatch(const Dispatch &D,
                                               ASTContext &Context) {
  SourceLocation Loc =
      Context.getSourceManager().getFileLoc(D.S->getBeginLoc());
  switch (D.Source) {
  case DispatchSource::Call:
    diag(Loc, "'%0' is dispatched here by '%1'", DiagnosticIDs::Note)
        << D.Ref.displayName() << D.Function;
    break;
  case DispatchSource::Loader:
    diag(Loc,
         "'%0' is loaded by '%1' with an explicit device map here, which "
         "dispatches it",
         DiagnosticIDs::Note)
        << D.Ref.displayName() << D.Function;
    break;
  case DispatchSource::Factory:
    diag(Loc, "'%0' comes from '%1', which returns a dispatched model",
         DiagnosticIDs::Note)
        << D.Ref.displayName() << D.Function;
    if (D.Inner)
      noteInnerDispatch(*D.Inner, D.Function, Context, 0);
    else
      noteExternalChain(D.ExternalChain, D.Function, Context, 0);
    break;
  }
}

void OffloadedParameterMoveCheck::noteInnerDispatch(const Dispatch &D,
                                                    llvm::StringRef Factory,
                                                    ASTContext &Context,
                                                    unsigned Depth) {
  noteDispatchStep(Context.getSourceManager().getFileLoc(D.S->getBeginLoc()),
                   D.Source, Factory, D.Function);
  if (D.Source != DispatchSource::Factory || Depth >= MaxFactoryDepth)
    return;
  if (D.Inner)
    noteInnerDispatch(*D.Inner, D.Function, Context, Depth + 1);
  else
    noteExternalChain(D.ExternalChain, D.Function, Context, Depth + 1);
}

void OffloadedParameterMoveCheck::noteExternalChain(
    llvm::ArrayRef<DispatchStep> Chain, llvm::StringRef Factory,
    ASTContext &Context, unsigned Depth) {
  // The same notes as for a factory whose body is visible, one per step,
  // each in the function the previous step calls.
  for (const DispatchStep &Step : Chain) {
    SourceLocation Loc = summaries(Context).locationOf(Step.At);
    if (Loc.isInvalid() || Depth > MaxFactoryDepth)
      return;
    noteDispatchStep(Loc, Step.How, Factory, Step.With);
    if (Step.How != DispatchSource::Factory)
      return;
    Factory = Step.With;
    ++Depth;
  }
}

void OffloadedParameterMoveCheck::noteDispatchStep(SourceLocation Loc,
                                                   DispatchSource How,
                                                   llvm::StringRef Factory,
                                                   llvm::StringRef With) {
  switch (How) {
  case DispatchSource::Call:
    diag(Loc, "'%0' dispatches it here with '%1'", DiagnosticIDs::Note)
        << Factory << With;
    break;
  case DispatchSource::Loader:
    diag(Loc,
         "'%0' loads it with '%1' and an explicit device map here, which "
         "dispatches it",
         DiagnosticIDs::Note)
        << Factory << With;
    break;
  case DispatchSource::Factory:
    diag(Loc, "'%0' gets it from '%1' here", DiagnosticIDs::Note)
        << Factory << With;
    break;
  }
}

std::vector<DispatchStep>
OffloadedParameterMoveCheck::dispatchChain(const Dispatch &D,
                                           const SummaryTable &Table) const {
  // As many steps as notes follow a factory's call (noteInnerDispatch).
  const size_t MaxSteps = MaxFactoryDepth + 1;
  std::vector<DispatchStep> Chain;
  const Dispatch *Last = &D;
  for (const Dispatch *Step = &D; Step && Chain.size() < MaxSteps;
       Step = Step->Inner) {
    Chain.push_back(
        {Step->Source, Table.refOf(Step->S->getBeginLoc()), Step->Function});
    Last = Step;
  }
  // The innermost visible step may call a factory of another TU in turn.
  if (!Last->Inner)
    for (const DispatchStep &Next : Last->ExternalChain) {
      if (Chain.size() >= MaxSteps)
        break;
      Chain.push_back(Next);
    }
  return Chain;
}

} // namespace clang::tidy::metaguard
