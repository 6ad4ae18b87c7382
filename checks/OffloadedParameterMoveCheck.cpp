//===--- OffloadedParameterMoveCheck.cpp - metaguard-tidy ------*- C++ -*-===//

#include "OffloadedParameterMoveCheck.h"
#include "utils/DeviceExpr.h"
#include "utils/ExplicitOptions.h"
#include "utils/FunctionBodies.h"
#include "utils/LocalVariables.h"

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
constexpr llvm::StringLiteral DefaultParameterMutators = "set_data;copy_;data";

/// How many local variables are followed from a parameter back to the
/// module it came from (including the hidden variables of range-for loops).
constexpr unsigned MaxParameterHops = 12;

bool isNamed(const NamedDecl *D, llvm::StringRef Name) {
  return D && D->getIdentifier() && D->getName() == Name;
}

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

/// Whether the value of E (a call) is thrown away: it is an expression
/// statement, so the call is made for what it does to its object.
bool isDiscarded(const Expr *E, const StmtParents &Parents) {
  const Stmt *Node = E;
  for (unsigned Steps = 0; Steps < 8; ++Steps) {
    Node = Parents.parent(Node);
    if (!Node)
      return false;
    if (isa<ExprWithCleanups, CXXBindTemporaryExpr, ParenExpr>(Node))
      continue;
    if (const auto *Cast = dyn_cast<ImplicitCastExpr>(Node))
      return Cast->getCastKind() == CK_ToVoid;
    if (const auto *Cast = dyn_cast<CStyleCastExpr>(Node))
      return Cast->getCastKind() == CK_ToVoid;
    if (isa<CompoundStmt, LabelStmt, AttributedStmt, CaseStmt, DefaultStmt>(
            Node))
      return true;
    if (const auto *If = dyn_cast<IfStmt>(Node))
      return If->getCond() != E;
    if (isa<ForStmt, WhileStmt, DoStmt, CXXForRangeStmt>(Node))
      return true; // Bodies; conditions are Exprs with an implicit cast.
    return false;
  }
  return false;
}

/// Whether FD returns a model (a module, a holder, or a pointer to a
/// module): only such functions can return a dispatched one.
bool returnsModel(const FunctionDecl *FD) {
  QualType T = FD->getReturnType();
  if (T.isNull() || T->isVoidType())
    return false;
  T = T.getNonReferenceType();
  if (T->isPointerType())
    T = T->getPointeeType();
  if (isModuleOrHolderType(T))
    return true;
  // std::shared_ptr<Impl>, std::unique_ptr<Impl>.
  if (const auto *Spec = dyn_cast_or_null<ClassTemplateSpecializationDecl>(
          T->getAsCXXRecordDecl()))
    if (Spec->getTemplateArgs().size() > 0 &&
        Spec->getTemplateArgs()[0].getKind() == TemplateArgument::Type)
      return isModuleOrHolderType(Spec->getTemplateArgs()[0].getAsType());
  return false;
}

/// The call an initialiser evaluates to (`from_pretrained<M>(...)`,
/// `make_model(...)`), also through `.ptr()` / `.get()` on its result, or
/// nullptr.
const CallExpr *producingCall(const Expr *Init) {
  for (unsigned Steps = 0; Init && Steps < 8; ++Steps) {
    Init = ignoreObjectPlumbing(Init);
    const auto *Member = dyn_cast<CXXMemberCallExpr>(Init);
    if (!Member)
      return dyn_cast<CallExpr>(Init);
    if (Member->getNumArgs() != 0 ||
        !(isNamed(Member->getMethodDecl(), "ptr") ||
          isNamed(Member->getMethodDecl(), "get")))
      return Member;
    Init = Member->getImplicitObjectArgument();
  }
  return nullptr;
}

/// How many factories returning factories' results the notes name (the
/// dispatch itself is followed at any depth).
constexpr unsigned MaxFactoryDepth = 4;

/// Whether a dispatch of Dispatched makes Target dispatched: Target is the
/// dispatched object or inside it; with AncestorsToo, also when Target
/// contains it.
bool covers(const ModuleRef &Dispatched, const ModuleRef &Target,
            bool AncestorsToo) {
  if (Dispatched.Root->getCanonicalDecl() != Target.Root->getCanonicalDecl())
    return false;
  return isPathPrefix(Dispatched.Path, Target.Path) ||
         (AncestorsToo && isPathPrefix(Target.Path, Dispatched.Path));
}

/// "dispatched model 'm'" or "'m.encoder' of dispatched model 'm'".
std::string describe(const ModuleRef &Ref) {
  std::string Model = "dispatched model '" + Ref.Root->getNameAsString() + "'";
  if (Ref.isRoot())
    return Model;
  return "'" + Ref.displayName() + "' of " + Model;
}

bool sameRoot(const ModuleRef &A, const ModuleRef &B) {
  return A.Root->getCanonicalDecl() == B.Root->getCanonicalDecl();
}

/// Methods of standard containers that put an element in.
constexpr llvm::StringLiteral ContainerInserters[] = {
    "push_back", "emplace_back", "push_front",       "emplace_front",
    "insert",    "emplace",      "insert_or_assign", "try_emplace"};

/// The name of the runtime's query that makes a move safe when it says no.
constexpr llvm::StringLiteral NoOffloadQuery = "has_offloaded_parameters";

/// How a called function is named in messages.
std::string helperName(const FunctionDecl *FD) {
  if (const auto *Method = dyn_cast<CXXMethodDecl>(FD))
    if (Method->getParent()->isLambda())
      return "lambda";
  return qualifiedNameOf(FD);
}

/// Whether Cond, evaluating to WhenTrue, implies that the model of Ref has
/// no offloaded parameters: `!has_offloaded_parameters(m)` when true,
/// `has_offloaded_parameters(m)` when false, through !, && and ||, and
/// through a local that keeps the value it was initialised with (`const bool
/// offloaded = has_offloaded_parameters(m);`). Depth bounds the locals
/// followed.
bool impliesNoOffload(const Expr *Cond, const ModuleRef &Ref, bool WhenTrue,
                      unsigned Depth = 0) {
  if (!Cond || Depth > 8)
    return false;
  Cond = Cond->IgnoreParenImpCasts();
  if (const auto *U = dyn_cast<UnaryOperator>(Cond))
    return U->getOpcode() == UO_LNot &&
           impliesNoOffload(U->getSubExpr(), Ref, !WhenTrue, Depth);
  if (const auto *B = dyn_cast<BinaryOperator>(Cond)) {
    if ((B->getOpcode() == BO_LAnd && WhenTrue) ||
        (B->getOpcode() == BO_LOr && !WhenTrue))
      return impliesNoOffload(B->getLHS(), Ref, WhenTrue, Depth) ||
             impliesNoOffload(B->getRHS(), Ref, WhenTrue, Depth);
    return false;
  }
  if (const auto *DRE = dyn_cast<DeclRefExpr>(Cond)) {
    const auto *Var = dyn_cast<VarDecl>(DRE->getDecl());
    return Var && Var->hasLocalStorage() && !isa<ParmVarDecl>(Var) &&
           Var->getType()->isBooleanType() && keepsItsInitialiser(Var) &&
           impliesNoOffload(Var->getInit(), Ref, WhenTrue, Depth + 1);
  }
  const auto *Call = dyn_cast<CallExpr>(Cond);
  if (WhenTrue || !Call || Call->getNumArgs() != 1 ||
      !isNamed(Call->getDirectCallee(), NoOffloadQuery))
    return false;
  // The query on the model, or on a module containing Ref.
  std::optional<ModuleRef> Asked = moduleRefOf(Call->getArg(0));
  return Asked &&
         Asked->Root->getCanonicalDecl() == Ref.Root->getCanonicalDecl() &&
         isPathPrefix(Asked->Path, Ref.Path);
}

/// Whether control never continues after S.
bool alwaysExits(const Stmt *S) {
  if (!S)
    return false;
  if (isa<ReturnStmt, BreakStmt, ContinueStmt, CXXThrowExpr>(S))
    return true;
  if (const auto *Block = dyn_cast<CompoundStmt>(S))
    return !Block->body_empty() && alwaysExits(Block->body_back());
  if (const auto *E = dyn_cast<Expr>(S))
    if (const auto *Call = dyn_cast<CallExpr>(E->IgnoreParenImpCasts()))
      if (const FunctionDecl *Callee = Call->getDirectCallee())
        return Callee->isNoReturn();
  return false;
}

/// The function `apply` runs: a lambda or function, also through the
/// std::function it converts to.
const FunctionDecl *appliedFunction(const Expr *Arg) {
  for (unsigned Steps = 0; Arg && Steps < 4; ++Steps) {
    if (const FunctionDecl *Fn = functionOfCallable(Arg))
      return Fn;
    const auto *Construct =
        dyn_cast<CXXConstructExpr>(ignoreObjectPlumbing(Arg)->IgnoreImplicit());
    if (!Construct || Construct->getNumArgs() != 1)
      return nullptr;
    Arg = Construct->getArg(0);
  }
  return nullptr;
}

} // namespace

/// Model facts: what a function does to the models passed to it (moves,
/// mutates parameters of, removes hooks of its argument N, at any depth),
/// and whether it returns a dispatched model.
class OffloadedParameterMoveCheck::ModelFacet : public SummaryFacet {
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

  void summarise(const FunctionDecl *F, FunctionSummary &Out,
                 SummaryTable &Table) override {
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
      }
  }

  void reset(FunctionSummary &S) const override {
    S.Args.clear();
    S.ReturnsDispatchedModel = false;
    S.DispatchedAt = {};
  }

  bool same(const FunctionSummary &A, const FunctionSummary &B) const override {
    if (A.ReturnsDispatchedModel != B.ReturnsDispatchedModel ||
        A.Args.size() != B.Args.size())
      return false;
    for (const auto &[Index, Effects] : A.Args) {
      auto It = B.Args.find(Index);
      if (It == B.Args.end() || It->second.Moves != Effects.Moves ||
          It->second.MutatesParameters != Effects.MutatesParameters ||
          It->second.RemovesHooks != Effects.RemovesHooks)
        return false;
    }
    return true;
  }

private:
  OffloadedParameterMoveCheck &Check;
};

OffloadedParameterMoveCheck::OffloadedParameterMoveCheck(
    llvm::StringRef Name, ClangTidyContext *Context)
    : ClangTidyCheck(Name, Context),
      DispatchFunctionsOption(
          Options.get("DispatchFunctions", DefaultDispatchFunctions).str()),
      LoaderFunctionsOption(
          Options.get("LoaderFunctions", DefaultLoaderFunctions).str()),
      HookRemoversOption(
          Options.get("HookRemovers", DefaultHookRemovers).str()),
      NeedsHooksOption(Options.get("NeedsHooks", DefaultNeedsHooks).str()),
      ParameterMutatorsOption(
          Options.get("ParameterMutators", DefaultParameterMutators).str()),
      Dispatchers(DispatchFunctionsOption), Loaders(LoaderFunctionsOption),
      HookRemovers(HookRemoversOption), NeedsHooks(NeedsHooksOption),
      Mutators(ParameterMutatorsOption),
      ModelFacetImpl(std::make_unique<ModelFacet>(*this)),
      Facts(Name, Options) {}

OffloadedParameterMoveCheck::~OffloadedParameterMoveCheck() = default;

SummaryTable &OffloadedParameterMoveCheck::summaries(ASTContext &Context) {
  return Facts.table(Summaries, Context,
                     {{Facet::Model, ModelFacetImpl.get()},
                      {Facet::Options, &OptionsFacetImpl}});
}

void OffloadedParameterMoveCheck::storeOptions(
    ClangTidyOptions::OptionMap &Opts) {
  Options.store(Opts, "DispatchFunctions", DispatchFunctionsOption);
  Options.store(Opts, "LoaderFunctions", LoaderFunctionsOption);
  Options.store(Opts, "HookRemovers", HookRemoversOption);
  Options.store(Opts, "NeedsHooks", NeedsHooksOption);
  Options.store(Opts, "ParameterMutators", ParameterMutatorsOption);
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
            summaries(*Result.Context).lookup(Callee, Facet::Model))
      MayDispatch = S->ReturnsDispatchedModel;
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
      {Facet::Model, Facet::Options});
  Cfgs.clear();
  Functions.clear();
  Analyzed.clear();
  Reported.clear();
  FactoryMemo.clear();
  FactoryInProgress.clear();
  Summaries.reset();
  OptionsFacetImpl.clear();
  LambdasInProgress.clear();
  EarlyExits.clear();
}

std::optional<ModuleRef>
OffloadedParameterMoveCheck::parameterOwner(const Expr *E) const {
  unsigned Hops = 0;
  for (unsigned Steps = 0; E && Steps < 64; ++Steps) {
    E = ignoreObjectPlumbing(E);
    if (const auto *U = dyn_cast<UnaryOperator>(E)) {
      if (U->getOpcode() != UO_Deref)
        return std::nullopt;
      E = U->getSubExpr();
      continue;
    }
    if (const auto *Subscript = dyn_cast<ArraySubscriptExpr>(E)) {
      E = Subscript->getBase();
      continue;
    }
    if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(E)) {
      // params["w"], *it, item->..., *params.find("w").
      OverloadedOperatorKind Kind = Op->getOperator();
      if ((Kind == OO_Subscript || Kind == OO_Star || Kind == OO_Arrow) &&
          Op->getNumArgs() >= 1) {
        E = Op->getArg(0);
        continue;
      }
      return std::nullopt;
    }
    if (const auto *Call = dyn_cast<CXXMemberCallExpr>(E)) {
      const CXXMethodDecl *Method = Call->getMethodDecl();
      if (!Method)
        return std::nullopt;
      const Expr *Object = Call->getImplicitObjectArgument();
      if ((isNamed(Method, "named_parameters") ||
           isNamed(Method, "parameters")) &&
          isModuleClass(Method->getParent()))
        return moduleRefOf(Object);
      // Accessors of the containers and items they return: the result is
      // (a handle to) the same parameter.
      if (isNamed(Method, "value") || isNamed(Method, "at") ||
          isNamed(Method, "find") || isNamed(Method, "front") ||
          isNamed(Method, "back") || isNamed(Method, "begin")) {
        E = Object;
        continue;
      }
      // A mutator without arguments (data()) gives write access to the
      // tensor's storage.
      if (Call->getNumArgs() == 0 && Mutators.matches(Method)) {
        E = Object;
        continue;
      }
      return std::nullopt;
    }
    if (const auto *Member = dyn_cast<MemberExpr>(E)) {
      // m->layer->weight: a tensor member of a submodule.
      const auto *Field = dyn_cast<FieldDecl>(Member->getMemberDecl());
      if (!Field || !isTensorType(Field->getType()))
        return std::nullopt;
      return moduleRefOf(Member->getBase());
    }
    if (const auto *Ref = dyn_cast<DeclRefExpr>(E)) {
      // A local handle initialised from a parameter shares its tensor
      // (copies of torch::Tensor are shallow), and so does the variable of a
      // range-for loop over parameters().
      const auto *Var = dyn_cast<VarDecl>(Ref->getDecl());
      if (!Var || !Var->hasLocalStorage() || isa<ParmVarDecl>(Var) ||
          !Var->getInit() || ++Hops > MaxParameterHops)
        return std::nullopt;
      E = Var->getInit();
      continue;
    }
    return std::nullopt;
  }
  return std::nullopt;
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
  if (!Inner) {
    // No body here: a summary from another translation unit may know.
    const FunctionSummary *S = summaries(Context).lookup(Callee, Facet::Model);
    if (!S || !S->ReturnsDispatchedModel)
      return std::nullopt;
  }
  Dispatch D;
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
  if (std::optional<ModuleRef> Owner = parameterOwner(Lhs))
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
    for (const auto &[Index, Effects] : S.Args) {
      const unsigned ArgIndex = Index + FirstArg;
      if (ArgIndex < Call->getNumArgs())
        if (std::optional<ModuleRef> Ref = moduleRefOf(Call->getArg(ArgIndex)))
          addEffects(Call, *Ref, TargetName, Effects, Out);
    }
  };
  for (const FunctionDecl *Target : Targets)
    if (const FunctionSummary *S = Table.lookup(Target, Facet::Model))
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
  StmtParents &Parents = Functions.parents();
  Parents.indexFunction(F);
  const SourceManager &SM = F->getASTContext().getSourceManager();
  const Stmt *Child = S;
  for (unsigned Steps = 0; Child && Steps < 4096; ++Steps) {
    const Stmt *Parent = Parents.parent(Child);
    if (!Parent || isa<LambdaExpr>(Parent))
      return false;
    if (const auto *If = dyn_cast<IfStmt>(Parent)) {
      if ((Child == If->getThen() &&
           impliesNoOffload(If->getCond(), Ref, /*WhenTrue=*/true)) ||
          (Child == If->getElse() &&
           impliesNoOffload(If->getCond(), Ref, /*WhenTrue=*/false)))
        return true;
    } else if (const auto *Block = dyn_cast<CompoundStmt>(Parent)) {
      // An earlier `if (has_offloaded_parameters(m)) return;` in the block.
      auto [It, Inserted] = EarlyExits.try_emplace(Block);
      if (Inserted)
        for (const Stmt *Item : Block->body())
          if (const auto *Exit = dyn_cast<IfStmt>(Item);
              Exit && !Exit->getElse() && alwaysExits(Exit->getThen()))
            It->second.push_back(Exit);
      for (const IfStmt *Exit : It->second)
        if (SM.isBeforeInTranslationUnit(Exit->getEndLoc(),
                                         Child->getBeginLoc()) &&
            impliesNoOffload(Exit->getCond(), Ref, /*WhenTrue=*/false))
          return true;
    }
    Child = Parent;
  }
  return false;
}

OffloadedParameterMoveCheck::Events
OffloadedParameterMoveCheck::collectEvents(const FunctionDecl *F,
                                           ASTContext &Context) {
  Events Ev;
  Functions.parents().indexFunction(F);
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
      if (Mutators.matches(Method) &&
          (Call->getNumArgs() > 0 || isDiscarded(Call, Functions.parents()))) {
        if (std::optional<ModuleRef> Owner = parameterOwner(Object))
          Ev.Mutations.push_back(Mutation{
              Call, *Owner, MutationKind::Call, Method->getNameAsString(), {}});
        return;
      }
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
          if (const FunctionDecl *Fn = appliedFunction(Call->getArg(0)))
            if (const FunctionSummary *S =
                    summaries(Context).lookup(Fn, Facet::Model))
              if (auto It = S->Args.find(0); It != S->Args.end())
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
    if (const auto *Call = dyn_cast<CallExpr>(S)) {
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
          Ev.Undispatches.push_back(
              ModelEvent{Call, *Ref, calleeName(Callee), {}});
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
            Ev.Removals.push_back(
                ModelEvent{Call, *Ref, calleeName(Callee), {}});
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
      if (!Loaders.isLoader(Callee))
        addCallEffects(Call, Callee, /*FirstArg=*/0, Context, Ev);
    }
  });
  return Ev;
}

const OffloadedParameterMoveCheck::Dispatch *
OffloadedParameterMoveCheck::reachingDispatch(
    const Stmt *Target, const ModuleRef &Ref, bool AncestorsToo,
    const Events &Ev, const CfgReachability &Cfg) const {
  llvm::SmallVector<const Stmt *, 4> Gens, Kills;
  for (const Dispatch &D : Ev.Dispatches)
    if (covers(D.Ref, Ref, AncestorsToo))
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
  for (const ModelEvent &Move : Ev.Moves) {
    if (guardedByNoOffload(Move.S, Move.Ref, F))
      continue;
    const Dispatch *D =
        dispatchToReport(Move.S, Move.Ref,
                         /*AncestorsToo=*/true, Ev, *Cfg, Context);
    if (!D)
      continue;
    if (Move.Via) {
      diag(SM.getFileLoc(Move.S->getBeginLoc()),
           "'%0' moves %1 (with '%2'), which leaves its offloaded "
           "parameters behind their hooks as meta tensors whose weights can "
           "no longer be found; change where it runs through the device map "
           "instead: reload it with a new device_map, or call dispatch_model "
           "with a new map")
          << Move.Function << describe(Move.Ref) << Move.Via->What
          << Move.S->getSourceRange();
      noteVia(*Move.Via, 0, Context);
      noteDispatch(*D, Context);
      continue;
    }
    diag(SM.getFileLoc(Move.S->getBeginLoc()),
         "moving %0 with 'to' leaves its offloaded "
         "parameters behind their hooks as meta tensors whose weights can "
         "no longer be found; change where it runs through the device map "
         "instead: reload it with a new device_map, or call dispatch_model "
         "with a new map")
        << describe(Move.Ref) << Move.S->getSourceRange();
    noteDispatch(*D, Context);
  }

  // 2. Replacing or moving a parameter of a dispatched model by hand.
  for (const Mutation &M : Ev.Mutations) {
    if (guardedByNoOffload(M.S, M.Owner, F))
      continue;
    const Dispatch *D =
        dispatchToReport(M.S, M.Owner,
                         /*AncestorsToo=*/false, Ev, *Cfg, Context);
    if (!D)
      continue;
    if (M.Via) {
      diag(SM.getFileLoc(M.S->getBeginLoc()),
           "'%0' changes a parameter of %1 in place (with '%2'), behind its "
           "offloading hook: the hook loads the offloaded weights into the "
           "tensor it registered, so the parameter is cut off from them or "
           "the change is silently lost; to read or change a copy, use "
           "load_offloaded_parameter, and to move parameters, reload the "
           "model or call dispatch_model with a new device map")
          << M.Function << describe(M.Owner) << M.Via->What
          << M.S->getSourceRange();
      noteVia(*M.Via, 1, Context);
      noteDispatch(*D, Context);
      continue;
    }
    diag(SM.getFileLoc(M.S->getBeginLoc()),
         "%select{'%1' on|assigning to|re-registering}0 a parameter of %2 "
         "goes behind its offloading hook: the hook "
         "loads the offloaded weights into the tensor it registered, so the "
         "parameter is cut off from them or the change is silently lost; to "
         "read or change a copy, use load_offloaded_parameter, and to move "
         "parameters, reload the model or call dispatch_model with a new "
         "device map")
        << static_cast<int>(M.Kind) << M.Function << describe(M.Owner)
        << M.S->getSourceRange();
    noteDispatch(*D, Context);
  }

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
      llvm::erase(Kills, Need.S);
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
    break;
  }
}

void OffloadedParameterMoveCheck::noteInnerDispatch(const Dispatch &D,
                                                    llvm::StringRef Factory,
                                                    ASTContext &Context,
                                                    unsigned Depth) {
  SourceLocation Loc =
      Context.getSourceManager().getFileLoc(D.S->getBeginLoc());
  switch (D.Source) {
  case DispatchSource::Call:
    diag(Loc, "'%0' dispatches it here with '%1'", DiagnosticIDs::Note)
        << Factory << D.Function;
    break;
  case DispatchSource::Loader:
    diag(Loc,
         "'%0' loads it with '%1' and an explicit device map here, which "
         "dispatches it",
         DiagnosticIDs::Note)
        << Factory << D.Function;
    break;
  case DispatchSource::Factory:
    diag(Loc, "'%0' gets it from '%1' here", DiagnosticIDs::Note)
        << Factory << D.Function;
    if (D.Inner && Depth < MaxFactoryDepth)
      noteInnerDispatch(*D.Inner, D.Function, Context, Depth + 1);
    break;
  }
}

} // namespace clang::tidy::metaguard
