//===--- EmptyModelCollector.cpp - metaguard-tidy --------------*- C++ -*-===//
//
// The events of one function for metaguard-empty-model-used (see
// EmptyModelEvents.h): what builds a model, gives it weights or uses it,
// statement by statement, with the facts of the functions it calls.
//
//===----------------------------------------------------------------------===//

#include "EmptyModelEvents.h"
#include "EmptyModelExprs.h"
#include "utils/analysis/CallableStores.h"
#include "utils/analysis/FunctionBodies.h"
#include "utils/analysis/NameList.h"
#include "utils/domain/LibraryCode.h"
#include "utils/domain/MemberModels.h"
#include "utils/domain/ModelCalls.h"
#include "utils/domain/ModelProducers.h"
#include "utils/domain/OptimizerParameters.h"
#include "utils/domain/TensorReads.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/StmtCXX.h"
#include "llvm/ADT/STLExtras.h"

namespace clang::tidy::metaguard::emptymodel {

namespace {

/// How deep `.ptr()`, `.get()` and `register_module(name, m)` are looked
/// through to the value that builds a model.
constexpr unsigned MaxValueSteps = 8;

/// Tensor methods that overwrite every value of their object whatever it
/// held: over a model's parameters, they initialise it. (Other in-place
/// methods, `mul_` or `add_`, compute with the values that are there.)
constexpr llvm::StringLiteral FillMethods[] = {
    "fill_",        "zero_",      "normal_", "uniform_",
    "copy_",        "set_data",   "random_", "bernoulli_",
    "exponential_", "geometric_", "cauchy_", "log_normal_"};

/// The state a helper's use concerns, from its yes/no facts.
std::optional<UseOf> useOf(const ModelSlotFacts &Slot) {
  if (Slot.Uses && Slot.UsesUninitialised)
    return UseOf::Any;
  if (Slot.Uses)
    return UseOf::Empty;
  if (Slot.UsesUninitialised)
    return UseOf::Uninitialised;
  return std::nullopt;
}

/// Collects the events of one function, statement by statement.
class Collector {
public:
  Collector(const EventKinds &Kinds, const FunctionDecl *F,
            AmbientDevice::InFunction &Here, SummaryTable &Table)
      : Kinds(Kinds), Ambient(Kinds.Ambient), F(F), Here(Here), Table(Table),
        Context(Table.context()) {}

  Events run() {
    Ambient.functions().parents().indexFunction(F);
    if (const auto *Ctor = dyn_cast<CXXConstructorDecl>(F))
      for (const CXXCtorInitializer *Init : Ctor->inits())
        if (Init->isMemberInitializer() && Init->getInit())
          assign(Init->getInit(), memberOf(std::nullopt, Init->getMember()),
                 Init->getInit());
    forEachEvaluatedStmt(F, [this](const Stmt *S) { visit(S); });
    return std::move(Ev);
  }

private:
  /// The facts of the functions a call may run, with their names.
  struct TargetFacts {
    std::string Name;
    const EmptyModelFacts *Facts;
  };

  void visit(const Stmt *S) {
    if (const auto *DS = dyn_cast<DeclStmt>(S))
      declaration(DS);
    else if (const auto *BO = dyn_cast<BinaryOperator>(S))
      assignment(BO, BO->getLHS(), BO->getRHS(), BO->getOpcode() == BO_Assign);
    else if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(S))
      operatorCall(Op);
    else if (const auto *Call = dyn_cast<CXXMemberCallExpr>(S))
      memberCall(Call);
    else if (const auto *Call = dyn_cast<CallExpr>(S))
      call(Call);
    else if (const auto *Construct = dyn_cast<CXXConstructExpr>(S))
      construction(Construct);
    else if (const auto *Ret = dyn_cast<ReturnStmt>(S))
      returned(Ret);
    else if (isa<CXXThrowExpr>(S))
      Ev.Exits.push_back(S);
  }

  // ---- Building -----------------------------------------------------------

  /// How the model a value gives is built, when it is built here or by a
  /// function the value calls.
  std::optional<Building> built(const Expr *Value) {
    const Expr *E = Value;
    for (unsigned Steps = 0; E && Steps < MaxValueSteps; ++Steps) {
      E = ignoreObjectPlumbing(E);
      if (const auto *Default = dyn_cast<CXXDefaultInitExpr>(E)) {
        E = Default->getExpr();
        continue;
      }
      // Encoder(config): a construction written as a cast.
      if (const auto *Cast = dyn_cast<CXXFunctionalCastExpr>(E)) {
        E = Cast->getSubExpr();
        continue;
      }
      const auto *Member = dyn_cast<CXXMemberCallExpr>(E);
      const CXXMethodDecl *Method = Member ? Member->getMethodDecl() : nullptr;
      if (Method && Member->getNumArgs() == 0 &&
          (isNamed(Method, "ptr") || isNamed(Method, "get"))) {
        E = Member->getImplicitObjectArgument();
        continue;
      }
      // register_module("name", M(config)) hands back its argument.
      if (Method && Member->getNumArgs() == 2 &&
          (isNamed(Method, "register_module") ||
           isNamed(Method, "replace_module")) &&
          isModuleClass(Method->getParent())) {
        E = Member->getArg(1);
        continue;
      }
      break;
    }
    if (!E)
      return std::nullopt;
    if (const auto *Construct = dyn_cast<CXXConstructExpr>(E)) {
      if (!isModuleOrHolderType(Construct->getType()) ||
          isEmptyHolder(Construct))
        return std::nullopt;
      return buildingAt(Construct, {});
    }
    if (const auto *New = dyn_cast<CXXNewExpr>(E))
      return isModuleOrHolderType(New->getAllocatedType()) ? buildingAt(New, {})
                                                           : std::nullopt;
    const auto *Call = dyn_cast<CallExpr>(E);
    const FunctionDecl *Callee = Call ? calledFunction(Call) : nullptr;
    if (!Callee || Ambient.loaders().isLoader(Callee))
      return std::nullopt;
    if (isModelBuilder(Callee))
      return buildingAt(Call, {});
    if (Ambient.isScopeFunction(Callee))
      return scopeFunctionValue(Call);
    if (isLibraryFunction(Callee) || !returnsModel(Callee))
      return std::nullopt;
    for (const TargetFacts &T : targets(Call))
      if (std::optional<Building> B =
              fromFacts(Call, T.Facts->Returns, T.Facts->ReturnsOrigin, T.Name))
        return B;
    return std::nullopt;
  }

  /// A model built at At: empty when the meta device is ambient there, else
  /// with the caller's device unless a scope of F decides it.
  std::optional<Building> buildingAt(const Expr *At, std::string Through) {
    Building B;
    B.At = At;
    B.Through = std::move(Through);
    if ((B.Ambient = Here.at(At)))
      return B;
    if (Ambient.liveGuardAt(At, F, Context))
      return std::nullopt;
    B.Kind = BuiltModel::CallersDevice;
    return B;
  }

  /// What a call hands back, by its callee's facts about how it leaves the
  /// model (Kind, built at Origin).
  std::optional<Building> fromFacts(const Expr *Call, BuiltModel Kind,
                                    const BuiltOrigin &Origin,
                                    const std::string &Name) {
    if (Kind == BuiltModel::Empty) {
      Building B;
      B.At = Call;
      B.Through = Name;
      B.Inner = Origin;
      return B;
    }
    if (Kind == BuiltModel::CallersDevice)
      return buildingAt(Call, Name);
    if (Kind == BuiltModel::Uninitialised) {
      Building B;
      B.Kind = Kind;
      B.At = Call;
      B.Through = Name;
      B.Inner = Origin;
      // Built empty in there, or given memory there as the caller gave it.
      B.IfEmptyBefore = !Origin.ScopeAt.valid();
      return B;
    }
    return std::nullopt;
  }

  /// with_meta_device(callable): the callable's model, built on meta.
  std::optional<Building> scopeFunctionValue(const CallExpr *Call) {
    for (const Expr *Arg : Call->arguments()) {
      const FunctionDecl *Fn = functionOfCallable(Arg);
      const EmptyModelFacts *Facts = factsOf(Fn);
      if (!Facts || Facts->Returns == BuiltModel::None ||
          Facts->Returns == BuiltModel::Unknown)
        continue;
      Building B;
      B.At = Call;
      B.Kind = Facts->Returns == BuiltModel::Uninitialised
                   ? BuiltModel::Uninitialised
                   : BuiltModel::Empty;
      if (Facts->Returns != BuiltModel::CallersDevice) {
        B.Through = displayName(Fn);
        B.Inner = Facts->ReturnsOrigin;
      } else {
        // Built by the callable the scope function runs on meta: here.
        B.Ambient = AmbientDevice::Origin{
            AmbientDevice::Source::ScopeFunction, nullptr, Call, {}, {}};
      }
      return B;
    }
    return std::nullopt;
  }

  /// Target gets the value Value (at S): a model built here, members left
  /// built by the constructor it runs, or any other new value.
  void assign(const Expr *S, const ModuleRef &Target, const Expr *Value) {
    if (std::optional<Building> B = built(Value)) {
      Ev.Gens.push_back(Gen{S, Target, std::move(*B)});
      return;
    }
    Ev.Kills.push_back(Kill{S, Target, KillKind::NewValue});
    if (const CXXConstructExpr *Construct = objectConstruction(Value))
      applyMembers(S, Construct->getConstructor(), Target, /*Uses=*/false);
  }

  /// The construction of an object of the user's that is not a module
  /// (Runner r(config), std::make_unique<Runner>(config)).
  const CXXConstructExpr *objectConstruction(const Expr *Value) {
    const Expr *E = ignoreObjectPlumbing(Value);
    const auto *Construct = dyn_cast<CXXConstructExpr>(E);
    if (!Construct)
      if (const auto *Call = dyn_cast<CallExpr>(E))
        Construct = Ambient.owning().construction(Call);
    if (!Construct || isModuleOrHolderType(Construct->getType()))
      return nullptr;
    return Construct;
  }

  void declaration(const DeclStmt *DS) {
    for (const Decl *D : DS->decls()) {
      const auto *Var = dyn_cast<VarDecl>(D);
      if (!Var || !Var->hasLocalStorage() || !Var->getInit() ||
          moduleRefOf(Var->getInit()))
        continue; // Not a new object: an alias names another one.
      ModuleRef Target;
      Target.Root = Var;
      assign(Var->getInit(), Target, Var->getInit());
    }
  }

  void assignment(const Expr *S, const Expr *Lhs, const Expr *Rhs, bool Plain) {
    if (!Plain)
      return;
    if (std::optional<ModuleRef> Target = moduleRefOf(Lhs))
      assign(S, *Target, Rhs);
  }

  void returned(const ReturnStmt *Ret) {
    const Expr *Value = Ret->getRetValue();
    if (!Value || !returnsModel(F))
      return;
    Returned R;
    R.S = Ret;
    R.Built = built(Value);
    if (!R.Built)
      if (std::optional<ModuleRef> Ref = moduleRefOf(Value);
          Ref && Ref->isRoot())
        R.Ref = Ref;
    Ev.Returns.push_back(std::move(R));
  }

  // ---- Uses and weights ---------------------------------------------------

  void use(const Stmt *S, const Expr *Model, UseKind Kind,
           llvm::StringRef Function) {
    if (std::optional<ModuleRef> Ref = moduleRefOf(Model))
      Ev.Uses.push_back(Use{S, *Ref, Kind, Function.str(), {}, nullptr});
  }

  void giveWeights(const Stmt *S, const Expr *Model,
                   KillKind Kind = KillKind::Weights) {
    if (std::optional<ModuleRef> Ref = moduleRefOf(Model))
      Ev.Kills.push_back(Kill{S, *Ref, Kind});
  }

  /// A MemoryGivers call: the model has memory but no values after it, if
  /// it was empty before.
  void giveMemory(const CallExpr *Call, const FunctionDecl *Callee) {
    for (const Expr *Arg : Call->arguments()) {
      std::optional<ModuleRef> Ref =
          isModelExpr(Arg) ? moduleRefOf(Arg) : std::nullopt;
      if (!Ref)
        continue;
      Building B;
      B.Kind = BuiltModel::Uninitialised;
      B.At = Call;
      B.Through = qualifiedNameOf(Callee);
      B.IfEmptyBefore = true;
      Ev.Gens.push_back(Gen{Call, *Ref, std::move(B)});
    }
  }

  /// A write that overwrites a parameter's values (Tensor, the object of a
  /// fill method or the argument of a torch::nn::init function). In a loop
  /// over the parameters() of a module, it initialises that module (all of
  /// them, at the loop). A write to a named tensor (`m->fc->weight`) is
  /// initialisation by hand, tensor by tensor: the check does not count the
  /// tensors, so it takes the whole model as initialised rather than guess.
  void initialisedBy(const Stmt *S, const Expr *Tensor) {
    std::optional<ModuleRef> Owner = Kinds.Writes.parameterOwner(Tensor);
    if (!Owner)
      return;
    if (const Stmt *Loop = loopOver(S, *Owner))
      return Ev.Kills.push_back(Kill{Loop, *Owner, KillKind::Initialises});
    ModuleRef Whole;
    Whole.Root = Owner->Root;
    Ev.Kills.push_back(Kill{S, Whole, KillKind::Initialises});
  }

  /// The range of the outermost range-for loop over the parameters of Owner
  /// that S is in, which every path evaluates (a model has parameters, so
  /// the loop runs); nullptr when there is none.
  const Stmt *loopOver(const Stmt *S, const ModuleRef &Owner) {
    const StmtParents &Parents = Ambient.functions().parents();
    const Stmt *Outermost = nullptr;
    for (const Stmt *P = Parents.parent(S); P; P = Parents.parent(P)) {
      const auto *Loop = dyn_cast<CXXForRangeStmt>(P);
      if (!Loop || !Loop->getLoopVariable() ||
          !Loop->getLoopVariable()->getInit())
        continue;
      std::optional<ModuleRef> Over =
          Kinds.Writes.parameterOwner(Loop->getLoopVariable()->getInit());
      if (Over && sameRoot(*Over, Owner) && Over->Path == Owner.Path)
        Outermost = Loop->getRangeInit();
    }
    return Outermost;
  }

  /// A method that initialises the module it is called on: Initializers,
  /// or `apply` with a function.
  bool initialiserMethod(const CXXMemberCallExpr *Call,
                         const CXXMethodDecl *Method) {
    const bool Applies = isNamed(Method, "apply") && Call->getNumArgs() > 0 &&
                         isModuleClass(Method->getParent());
    if (!Applies && !Kinds.Initializers.matches(Method))
      return false;
    std::optional<ModuleRef> Ref =
        moduleRefOf(Call->getImplicitObjectArgument());
    if (!Ref)
      return false;
    Ev.Kills.push_back(Kill{Call, *Ref, KillKind::Initialises});
    return true;
  }

  static bool isFillMethod(const CXXMethodDecl *Method) {
    return llvm::any_of(FillMethods, [Method](llvm::StringRef Name) {
      return isNamed(Method, Name);
    });
  }

  /// A read of a parameter's data, or of a value computed from it.
  bool parameterRead(const Expr *Call) {
    std::optional<TensorRead> Read = tensorRead(Call);
    if (!Read)
      return false;
    if (std::optional<ModuleRef> Owner =
            Kinds.Writes.parameterOwner(computedFrom(Read->Tensor)))
      Ev.Uses.push_back(
          Use{Call,
              *Owner,
              Read->Prints ? UseKind::PrintParameter : UseKind::ReadParameter,
              Read->How,
              {},
              nullptr});
    return true;
  }

  void memberCall(const CXXMemberCallExpr *Call) {
    const CXXMethodDecl *Method = Call->getMethodDecl();
    if (!Method)
      return;
    const Expr *Object = Call->getImplicitObjectArgument();
    if (const Expr *Model = forwardedModel(Call))
      return use(Call, Model, UseKind::Forward, "forward");
    if (const Expr *Model = movedModel(Call))
      return use(Call, Model, UseKind::Move, "to");
    if (const Expr *Model = TensorWrites::loadedModel(Call))
      return giveWeights(Call, Model);
    if (initialiserMethod(Call, Method))
      return;
    if (isFillMethod(Method) && isTensorClass(Method->getParent()))
      initialisedBy(Call, Object);
    if (std::optional<OptimizerStep> Step = optimizerStep(Call, Kinds.Writes)) {
      for (const ModuleRef &Owner : Step->Owners)
        Ev.Uses.push_back(Use{
            Call, Owner, UseKind::OptimizerStep, "step", {}, Step->Optimizer});
      return;
    }
    if (parameterRead(Call))
      return;
    if (isNamed(Method, "reset") && Call->getNumArgs() == 0) {
      if (std::optional<ModuleRef> Ref = moduleRefOf(Object);
          Ref && Ref->isRoot())
        Ev.Kills.push_back(Kill{Call, *Ref, KillKind::NewValue});
      return;
    }
    if (isLibraryFunction(Method))
      return;
    std::optional<ModuleRef> ObjectRef;
    if (!isThis(Object)) {
      ObjectRef = moduleRefOf(Object);
      if (!ObjectRef)
        return callArguments(Call, Method, 0);
    }
    if (!applyMembers(Call, Method, ObjectRef, /*Uses=*/true) &&
        !Method->isConst() && ObjectRef)
      // Not known (defined elsewhere): it may load its members.
      Ev.Kills.push_back(Kill{Call, *ObjectRef, KillKind::Weights});
    callArguments(Call, Method, 0);
  }

  void operatorCall(const CXXOperatorCallExpr *Op) {
    if (Op->isAssignmentOp())
      return assignment(Op, Op->getArg(0), Op->getArg(1),
                        Op->getOperator() == OO_Equal);
    if (const Expr *Model = forwardedModel(Op))
      return use(Op, Model, UseKind::Forward, "forward");
    if (parameterRead(Op))
      return;
    // A lambda or another callable of the user's: the object is the first
    // argument.
    if (Op->getOperator() == OO_Call)
      callArguments(Op, calledFunction(Op), 1);
  }

  void call(const CallExpr *Call) {
    const FunctionDecl *Callee = calledFunction(Call);
    if (!Callee)
      return;
    if (Callee->isNoReturn())
      Ev.Exits.push_back(Call);
    if (Kinds.WeightGivers.matches(Callee) ||
        Ambient.loaders().isLoader(Callee)) {
      for (const Expr *Arg : Call->arguments())
        if (isModelExpr(Arg))
          giveWeights(Call, Arg);
      return;
    }
    if (Kinds.MemoryGivers.matches(Callee))
      return giveMemory(Call, Callee);
    if (Kinds.Initializers.matches(Callee)) {
      for (const Expr *Arg : Call->arguments())
        if (isModelExpr(Arg))
          giveWeights(Call, Arg, KillKind::Initialises);
      return;
    }
    if (const Expr *Tensor = Kinds.Writes.writtenArgument(Call))
      return initialisedBy(Call, Tensor);
    if (const Expr *Model = TensorWrites::loadedModel(Call))
      return giveWeights(Call, Model);
    if (Kinds.NeedsWeights.matches(Callee)) {
      for (const Expr *Arg : Call->arguments())
        if (isModelExpr(Arg))
          use(Call, Arg, UseKind::NeedsWeights, qualifiedNameOf(Callee));
      return;
    }
    // std::make_shared<Worker>(model): the user's constructor gets the
    // arguments.
    if (const CXXConstructExpr *Construct = Ambient.owning().construction(Call))
      return callArguments(Call, Construct->getConstructor(), 0);
    callArguments(Call, Callee, 0);
  }

  void construction(const CXXConstructExpr *Construct) {
    const CXXConstructorDecl *Ctor = Construct->getConstructor();
    if (!isModuleOrHolderType(Construct->getType()) &&
        !Ctor->isCopyOrMoveConstructor())
      callArguments(Construct, Ctor, 0);
  }

  /// What the callee does to the models given as its arguments: its facts,
  /// or, for a function of the user's that is not known, that it may give
  /// weights to those it may change. FirstArg: the call's argument bound to
  /// the callee's first parameter.
  void callArguments(const Expr *Call, const FunctionDecl *Callee,
                     unsigned FirstArg) {
    if (!Callee || Ambient.isMachinery(Callee))
      return;
    // The library's std::function::operator() is only the way into what a
    // table or member of them holds: the functions stored there.
    const bool Library = isLibraryFunction(Callee);
    if (Library && !callableSlotOfCall(Call))
      return;
    llvm::ArrayRef<const Expr *> Args = arguments(Call);
    if (llvm::none_of(Args.drop_front(std::min<size_t>(FirstArg, Args.size())),
                      keepsModels))
      return;
    llvm::SmallVector<TargetFacts, 2> Targets = targets(Call);
    if (Targets.empty()) {
      if (Library)
        return;
      for (unsigned I = FirstArg; I < Args.size(); ++I) {
        const unsigned Param = I - FirstArg;
        if (keepsModels(Args[I]) &&
            (Param >= Callee->getNumParams() ||
             mayChangeArgument(Callee->getParamDecl(Param)->getType())))
          giveWeights(Call, Args[I]);
      }
      return;
    }
    for (unsigned I = FirstArg; I < Args.size(); ++I) {
      bool EveryTargetGives = true;
      bool EveryTargetInitialises = true;
      std::optional<ModuleRef> Ref = moduleRefOf(Args[I]);
      for (const TargetFacts &T : Targets) {
        auto It = T.Facts->Args.find(I - FirstArg);
        const ModelSlotFacts *Slot =
            It == T.Facts->Args.end() ? nullptr : &It->second;
        EveryTargetGives &= Slot && Slot->GivesWeights;
        EveryTargetInitialises &=
            Slot && (Slot->GivesWeights || Slot->Initialises);
        if (Slot && Ref)
          slotEvents(Call, *Ref, *Slot, T.Name);
        if (Slot && Ref && Slot->Left == BuiltModel::Uninitialised)
          if (std::optional<Building> B =
                  fromFacts(Call, Slot->Left, Slot->Origin, T.Name))
            Ev.Gens.push_back(Gen{Call, *Ref, std::move(*B)});
      }
      if (EveryTargetGives)
        giveWeights(Call, Args[I]);
      else if (EveryTargetInitialises)
        giveWeights(Call, Args[I], KillKind::Initialises);
    }
  }

  /// What a callee's facts about one model it is given (an argument, or a
  /// member of its object) make happen at Call: uses, and memory without
  /// values. Weights are the caller's to decide (every target must agree).
  void slotEvents(const Expr *Call, const ModuleRef &Ref,
                  const ModelSlotFacts &Slot, const std::string &Name) {
    if (std::optional<UseOf> Of = useOf(Slot)) {
      Use U{Call, Ref, UseKind::Call, Name, Slot.Use, nullptr};
      U.Of = *Of;
      Ev.Uses.push_back(std::move(U));
    }
  }

  /// What a constructor or method does to the member models of its object
  /// (ObjectRef; none for `this`): builds them, gives them weights, uses
  /// them. Whether the callee's facts are known.
  bool applyMembers(const Expr *Call, const CXXMethodDecl *Method,
                    const std::optional<ModuleRef> &ObjectRef, bool Uses) {
    const EmptyModelFacts *Facts = factsOf(Method);
    if (!Facts)
      return definitionWithBody(Method) != nullptr;
    const std::string Name = displayName(Method);
    for (const auto &[Index, Slot] : Facts->Members) {
      const FieldDecl *Field = fieldAt(Method->getParent(), Index);
      if (!Field)
        continue;
      const ModuleRef Ref = memberOf(ObjectRef, Field);
      if (std::optional<Building> B =
              fromFacts(Call, Slot.Left, Slot.Origin, Name)) {
        B->Member = Field->getNameAsString();
        Ev.Gens.push_back(Gen{Call, Ref, std::move(*B)});
      }
      if (Slot.GivesWeights)
        Ev.Kills.push_back(Kill{Call, Ref, KillKind::Weights});
      else if (Slot.Initialises)
        Ev.Kills.push_back(Kill{Call, Ref, KillKind::Initialises});
      if (Uses)
        slotEvents(Call, Ref, Slot, Name);
    }
    return true;
  }

  // ---- Callees -------------------------------------------------------------

  static llvm::ArrayRef<const Expr *> arguments(const Expr *Call) {
    if (const auto *CE = dyn_cast<CallExpr>(Call))
      return llvm::ArrayRef<const Expr *>(CE->getArgs(), CE->getNumArgs());
    if (const auto *Construct = dyn_cast<CXXConstructExpr>(Call))
      return llvm::ArrayRef<const Expr *>(Construct->getArgs(),
                                          Construct->getNumArgs());
    return {};
  }

  const EmptyModelFacts *factsOf(const FunctionDecl *FD) {
    if (!FD)
      return nullptr;
    const FunctionSummary *S = Table.lookup<EmptyModelFacts>(FD);
    return S ? &S->get<EmptyModelFacts>() : nullptr;
  }

  /// The facts of every function Call may run that has them: overrides of
  /// a virtual one too, those only other translation units define included.
  llvm::SmallVector<TargetFacts, 2> targets(const Expr *Call) {
    llvm::SmallVector<TargetFacts, 2> Result;
    for (const FunctionDecl *Target : Table.callTargets(Call))
      if (const EmptyModelFacts *Facts = factsOf(Target))
        Result.push_back({displayName(Target), Facts});
    for (const FunctionSummary *S : Table.externalTargets(Call))
      Result.push_back({S->Name, &S->get<EmptyModelFacts>()});
    return Result;
  }

  const EventKinds &Kinds;
  AmbientDevice &Ambient;
  const FunctionDecl *F;
  AmbientDevice::InFunction &Here;
  SummaryTable &Table;
  ASTContext &Context;
  Events Ev;
};

} // namespace

Events collectEvents(const FunctionDecl *F, AmbientDevice::InFunction &Here,
                     SummaryTable &Table, const EventKinds &Kinds) {
  return Collector(Kinds, F, Here, Table).run();
}

} // namespace clang::tidy::metaguard::emptymodel
