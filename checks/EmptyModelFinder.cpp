//===--- EmptyModelFinder.cpp - metaguard-tidy -----------------*- C++ -*-===//

#include "EmptyModelFinder.h"
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
#include "llvm/ADT/SetVector.h"

namespace clang::tidy::metaguard {

using namespace emptymodel;

namespace {

/// How deep `.ptr()`, `.get()` and `register_module(name, m)` are looked
/// through to the value that builds a model.
constexpr unsigned MaxValueSteps = 8;

/// A library function that builds a model with the ambient device and
/// returns it: metaguard::from_config, std::make_shared / make_unique /
/// allocate_shared of a module.
bool isModelBuilder(const FunctionDecl *FD) {
  if (!FD->getIdentifier() || !returnsModel(FD) ||
      FD->getReturnType()->isReferenceType())
    return false;
  llvm::StringRef Name = FD->getName();
  if (FD->isInStdNamespace())
    return Name == "make_shared" || Name == "make_unique" ||
           Name == "allocate_shared";
  return qualifiedNameOf(FD) == "metaguard::from_config";
}

/// `Encoder e{nullptr}`: a holder that holds nothing yet.
bool isEmptyHolder(const CXXConstructExpr *Construct) {
  return Construct->getNumArgs() == 1 &&
         Construct->getArg(0)->getType()->isNullPtrType();
}

/// Whether E denotes a model: a module, a holder, a smart pointer or a
/// pointer to one (a path or a tensor that moduleRefOf also names is not).
bool isModelExpr(const Expr *E) {
  QualType T = E->getType().getNonReferenceType();
  if (T->isPointerType())
    T = T->getPointeeType();
  return isModelValueType(T);
}

/// Whether E denotes a model or an object of the user's that keeps some
/// (a class with member models).
bool keepsModels(const Expr *E) {
  if (isModelExpr(E))
    return true;
  QualType T = E->getType().getNonReferenceType();
  if (T->isPointerType())
    T = T->getPointeeType();
  return hasMemberModels(T->getAsCXXRecordDecl());
}

/// Whether a parameter of this type lets the callee change the model it is
/// given: anything but a reference or pointer to const.
bool mayChangeArgument(QualType T) {
  if (T->isReferenceType() || T->isPointerType())
    return !T->getPointeeType().isConstQualified();
  return true; // A holder or shared_ptr copy shares the module.
}

/// The origin a fact keeps of a building in F.
BuiltOrigin originOf(const Building &B, const FunctionDecl *F,
                     const SummaryTable &Table) {
  if (B.Inner)
    return *B.Inner;
  BuiltOrigin O;
  O.BuiltAt = Table.refOf(B.At->getBeginLoc());
  O.BuiltIn = displayName(F);
  if (!B.Ambient)
    return O;
  const AmbientDevice::Origin &A = *B.Ambient;
  switch (A.Kind) {
  case AmbientDevice::Source::ScopeGuard:
    O.Scope = EmptyScope::Guard;
    O.ScopeAt = Table.refOf(A.OriginDecl->getLocation());
    O.ScopeName = cast<NamedDecl>(A.OriginDecl)->getNameAsString();
    break;
  case AmbientDevice::Source::ScopeFunction: {
    O.Scope = EmptyScope::ScopeFunction;
    O.ScopeAt = Table.refOf(A.OriginStmt->getBeginLoc());
    const auto *Call = cast<CallExpr>(A.OriginStmt);
    if (const FunctionDecl *Fn = Call->getDirectCallee())
      O.ScopeName = displayName(Fn);
    break;
  }
  case AmbientDevice::Source::DefaultDevice:
    O.Scope = EmptyScope::DefaultDevice;
    O.ScopeAt = A.InnerSetter.isValid()
                    ? Table.refOf(A.InnerSetter)
                    : Table.refOf(A.OriginStmt->getBeginLoc());
    break;
  }
  return O;
}

/// Whether Var is declared by a statement of F's outermost block.
bool declaredInOutermostBlock(const VarDecl *Var, const FunctionDecl *F) {
  const auto *Body = dyn_cast_or_null<CompoundStmt>(F->getBody());
  if (!Body)
    return false;
  for (const Stmt *S : Body->body())
    if (const auto *DS = dyn_cast<DeclStmt>(S))
      for (const Decl *D : DS->decls())
        if (D == Var)
          return true;
  return false;
}

/// Whether S is `this` (written or implicit), through parentheses and casts.
bool isThis(const Expr *E) {
  return isa<CXXThisExpr>(E->IgnoreParenImpCasts());
}

/// Ref with Field appended; the object being `this` (no Object), Field
/// itself.
ModuleRef memberOf(const std::optional<ModuleRef> &Object,
                   const FieldDecl *Field) {
  ModuleRef Ref;
  if (!Object) {
    Ref.Root = Field;
    return Ref;
  }
  Ref = *Object;
  Ref.Path.push_back(Field);
  return Ref;
}

} // namespace

//===----------------------------------------------------------------------===//
// The events of a function
//===----------------------------------------------------------------------===//

/// Collects the events of one function, statement by statement.
class EmptyModelFinder::Collector {
public:
  Collector(EmptyModelFinder &Finder, const FunctionDecl *F,
            AmbientDevice::InFunction &Here, SummaryTable &Table)
      : Finder(Finder), Ambient(Finder.Ambient), F(F), Here(Here),
        Table(Table), Context(Table.context()) {}

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
      return isModuleOrHolderType(New->getAllocatedType())
                 ? buildingAt(New, {})
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
      if (Facts->Returns == BuiltModel::Empty) {
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
    Ev.Kills.push_back(Kill{S, Target, /*NewValue=*/true});
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

  void assignment(const Expr *S, const Expr *Lhs, const Expr *Rhs,
                  bool Plain) {
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

  void giveWeights(const Stmt *S, const Expr *Model) {
    if (std::optional<ModuleRef> Ref = moduleRefOf(Model))
      Ev.Kills.push_back(Kill{S, *Ref, false});
  }

  /// A read of a parameter's data, or of a value computed from it.
  bool parameterRead(const Expr *Call) {
    std::optional<TensorRead> Read = tensorRead(Call);
    if (!Read)
      return false;
    if (std::optional<ModuleRef> Owner =
            Finder.Writes.parameterOwner(computedFrom(Read->Tensor)))
      Ev.Uses.push_back(Use{Call, *Owner,
                            Read->Prints ? UseKind::PrintParameter
                                         : UseKind::ReadParameter,
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
    if (std::optional<OptimizerStep> Step =
            optimizerStep(Call, Finder.Writes)) {
      for (const ModuleRef &Owner : Step->Owners)
        Ev.Uses.push_back(
            Use{Call, Owner, UseKind::OptimizerStep, "step", {}, Step->Optimizer});
      return;
    }
    if (parameterRead(Call))
      return;
    if (isNamed(Method, "reset") && Call->getNumArgs() == 0) {
      if (std::optional<ModuleRef> Ref = moduleRefOf(Object);
          Ref && Ref->isRoot())
        Ev.Kills.push_back(Kill{Call, *Ref, /*NewValue=*/true});
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
      Ev.Kills.push_back(Kill{Call, *ObjectRef, false});
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
    if (Finder.WeightGivers.matches(Callee) ||
        Ambient.loaders().isLoader(Callee)) {
      for (const Expr *Arg : Call->arguments())
        if (isModelExpr(Arg))
          giveWeights(Call, Arg);
      return;
    }
    if (const Expr *Model = TensorWrites::loadedModel(Call))
      return giveWeights(Call, Model);
    if (Finder.NeedsWeights.matches(Callee)) {
      for (const Expr *Arg : Call->arguments())
        if (isModelExpr(Arg))
          use(Call, Arg, UseKind::NeedsWeights, qualifiedNameOf(Callee));
      return;
    }
    // std::make_shared<Worker>(model): the user's constructor gets the
    // arguments.
    if (const CXXConstructExpr *Construct =
            Ambient.owning().construction(Call))
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
    if (!Callee || Ambient.isMachinery(Callee) || isLibraryFunction(Callee))
      return;
    llvm::ArrayRef<const Expr *> Args = arguments(Call);
    if (llvm::none_of(Args.drop_front(std::min<size_t>(FirstArg, Args.size())),
                      keepsModels))
      return;
    llvm::SmallVector<TargetFacts, 2> Targets = targets(Call);
    if (Targets.empty()) {
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
      for (const TargetFacts &T : Targets) {
        auto It = T.Facts->Args.find(I - FirstArg);
        const ModelSlotFacts *Slot =
            It == T.Facts->Args.end() ? nullptr : &It->second;
        EveryTargetGives &= Slot && Slot->GivesWeights;
        if (Slot && Slot->Uses)
          if (std::optional<ModuleRef> Ref = moduleRefOf(Args[I]))
            Ev.Uses.push_back(
                Use{Call, *Ref, UseKind::Call, T.Name, Slot->Use, nullptr});
      }
      if (EveryTargetGives)
        giveWeights(Call, Args[I]);
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
        Ev.Kills.push_back(Kill{Call, Ref, false});
      if (Uses && Slot.Uses)
        Ev.Uses.push_back(Use{Call, Ref, UseKind::Call, Name, Slot.Use, nullptr});
    }
    return true;
  }

  // ---- Callees -------------------------------------------------------------

  static llvm::ArrayRef<const Expr *> arguments(const Expr *Call) {
    if (const auto *CE = dyn_cast<CallExpr>(Call))
      return llvm::ArrayRef(CE->getArgs(), CE->getNumArgs());
    if (const auto *Construct = dyn_cast<CXXConstructExpr>(Call))
      return llvm::ArrayRef(Construct->getArgs(), Construct->getNumArgs());
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

  EmptyModelFinder &Finder;
  AmbientDevice &Ambient;
  const FunctionDecl *F;
  AmbientDevice::InFunction &Here;
  SummaryTable &Table;
  ASTContext &Context;
  Events Ev;
};

Events EmptyModelFinder::collectEvents(const FunctionDecl *F,
                                       AmbientDevice::InFunction &Here,
                                       SummaryTable &Table) {
  return Collector(*this, F, Here, Table).run();
}

//===----------------------------------------------------------------------===//
// The facet: what callers see
//===----------------------------------------------------------------------===//

/// Empty-model facts: the model a function returns, what it does to the
/// models given as arguments, and to the member models of its object.
class EmptyModelFinder::Facet : public SummaryFacetFor<EmptyModelFacts> {
public:
  explicit Facet(EmptyModelFinder &Finder) : Finder(Finder) {}

  bool follows(const FunctionDecl *FD) const override {
    // Library code neither builds the user's models empty nor loads them
    // (the runtime's loaders are known by name).
    return !FD->isDependentContext() && !Finder.Ambient.isMachinery(FD) &&
           !isLibraryFunction(FD);
  }

  void summarise(const FunctionDecl *F, FunctionSummary &Summary,
                 SummaryTable &Table) override {
    ASTContext &Context = Table.context();
    AmbientDevice::InFunction Here =
        Finder.Ambient.inFunction(F, nullptr, Table, Context);
    Events Ev = Finder.collectEvents(F, Here, Table);
    if (Ev.Gens.empty() && Ev.Kills.empty() && Ev.Uses.empty() &&
        Ev.Returns.empty())
      return;
    const CfgReachability *Cfg =
        Finder.Ambient.cfgs().get(F, F->getBody(), Context);
    if (!Cfg)
      return;
    EmptyModelFacts &Out = Summary.edit<EmptyModelFacts>();
    returns(F, Ev, *Cfg, Table, Out);
    // The parameters and members the events are about, in order.
    llvm::SetVector<const ValueDecl *> Roots;
    for (const Gen &G : Ev.Gens)
      Roots.insert(G.Ref.Root);
    for (const Kill &K : Ev.Kills)
      Roots.insert(K.Ref.Root);
    for (const Use &U : Ev.Uses)
      Roots.insert(U.Ref.Root);
    for (const ValueDecl *Root : Roots)
      if (const auto *Param = dyn_cast<ParmVarDecl>(Root);
          Param && Param->getDeclContext() == F) {
        ModelSlotFacts Slot = slot(F, Param, Ev, *Cfg, Table,
                                   Param->getType()->isReferenceType());
        if (Slot.any())
          Out.Args[Param->getFunctionScopeIndex()] = Slot;
      }
    const auto *Method = dyn_cast<CXXMethodDecl>(F);
    if (!Method || Method->isStatic())
      return;
    for (const ValueDecl *Root : Roots) {
      ModuleRef Member;
      Member.Root = Root;
      if (!isMemberModel(Member, Method))
        continue;
      const auto *Field = cast<FieldDecl>(Root);
      ModelSlotFacts Slot = slot(F, Field, Ev, *Cfg, Table, true);
      ModuleRef Ref;
      Ref.Root = Field;
      if (const Gen *G = Ev.leftAtReturn(Ref, *Cfg)) {
        Slot.Left = G->How.Kind;
        Slot.Origin = originOf(G->How, F, Table);
      }
      if (!Slot.any())
        continue;
      Slot.Member = Field->getNameAsString();
      Out.Members[Field->getFieldIndex()] = Slot;
    }
  }

private:
  /// How the model F returns is built, on some path: an empty one first.
  static void returns(const FunctionDecl *F, const Events &Ev,
                      const CfgReachability &Cfg, const SummaryTable &Table,
                      EmptyModelFacts &Out) {
    for (const Returned &R : Ev.Returns) {
      if (!Cfg.contains(R.S))
        continue;
      const Building *B = R.Built ? &*R.Built : nullptr;
      if (!B && R.Ref)
        if (const Gen *G = Ev.reachingGen(R.S, *R.Ref, Cfg))
          B = &G->How;
      if (!B || (Out.Returns == BuiltModel::CallersDevice &&
                 B->Kind != BuiltModel::Empty))
        continue;
      Out.Returns = B->Kind;
      Out.ReturnsOrigin = originOf(*B, F, Table);
      if (B->Kind == BuiltModel::Empty)
        return;
    }
  }

  /// What F does to the model Root (a parameter or a member) names.
  static ModelSlotFacts slot(const FunctionDecl *F, const ValueDecl *Root,
                             const Events &Ev, const CfgReachability &Cfg,
                             const SummaryTable &Table, bool NewValues) {
    ModelSlotFacts Slot;
    ModuleRef Ref;
    Ref.Root = Root;
    Slot.GivesWeights = Ev.givesWeights(Ref, NewValues, Cfg);
    if (const Use *U = Ev.useBeforeWeights(
            [Root](const ModuleRef &R) {
              return R.Root->getCanonicalDecl() == Root->getCanonicalDecl();
            },
            Cfg)) {
      Slot.Uses = true;
      // Through a helper, notes point at the innermost place.
      Slot.Use = U->Via ? *U->Via
                        : ModelUse{Table.refOf(U->S->getBeginLoc()),
                                   U->Function, displayName(F)};
    }
    return Slot;
  }

  EmptyModelFinder &Finder;
};

//===----------------------------------------------------------------------===//
// The finder
//===----------------------------------------------------------------------===//

EmptyModelFinder::EmptyModelFinder(AmbientDevice &Ambient,
                                   const EmptyModelOptions &Options,
                                   EmptyModelReporter &Reporter,
                                   SummariesFn Summaries)
    : Ambient(Ambient), Reporter(Reporter), Summaries(std::move(Summaries)),
      WeightGivers(Options.WeightGivers), NeedsWeights(Options.NeedsWeights),
      Writes(DefaultParameterMutators, DefaultIgnoredInPlaceMethods),
      FacetImpl(std::make_unique<Facet>(*this)) {}

EmptyModelFinder::~EmptyModelFinder() = default;

SummaryFacet *EmptyModelFinder::facet() { return FacetImpl.get(); }

void EmptyModelFinder::clear() { Analyzed.clear(); }

bool EmptyModelFinder::givesEmptyModel(const Expr *Call, ASTContext &Context) {
  SummaryTable &Table = Summaries(Context);
  // std::make_unique<Runner>(config) runs the constructor of the user's.
  llvm::SmallVector<const FunctionDecl *, 2> Targets;
  if (const CXXConstructExpr *Inner = Ambient.owning().construction(Call))
    Targets.push_back(Inner->getConstructor());
  else
    Targets = Table.callTargets(Call);
  for (const FunctionDecl *Target : Targets) {
    if (!Ambient.canEnter(Target))
      continue;
    const FunctionSummary *S = Table.lookup<EmptyModelFacts>(Target);
    if (!S)
      continue;
    const EmptyModelFacts &Facts = S->get<EmptyModelFacts>();
    if (Facts.Returns == BuiltModel::Empty)
      return true;
    for (const auto &Member : Facts.Members)
      if (Member.second.Left == BuiltModel::Empty)
        return true;
  }
  return false;
}

void EmptyModelFinder::analyzeFunction(const FunctionDecl *F,
                                       const LambdaExpr *Lambda,
                                       ASTContext &Context) {
  if (!F || !F->getBody() || F->isDependentContext() ||
      !Analyzed.insert(F).second || Ambient.isInsideMachinery(F) ||
      Context.getSourceManager().isInSystemHeader(F->getLocation()))
    return;
  SummaryTable &Table = Summaries(Context);
  AmbientDevice::InFunction Here =
      Ambient.inFunction(F, Lambda, Table, Context);
  Events Ev = collectEvents(F, Here, Table);
  if (!Ev.buildsEmpty())
    return;
  const CfgReachability *Cfg = Ambient.cfgs().get(F, F->getBody(), Context);
  if (!Cfg)
    return;
  for (const Use &U : Ev.Uses)
    if (const Gen *G = Ev.emptyAt(U, *Cfg))
      Reporter.emptyModelUsed(U, *G, loadFirst(U, *G, F, Here), Table);
}

std::optional<EmptyModelReporter::LoadFirst>
EmptyModelFinder::loadFirst(const Use &U, const Gen &G, const FunctionDecl *F,
                            AmbientDevice::InFunction &Here) {
  // Certain only for a model this function builds from a config it read
  // from a folder it names: that folder holds its weights.
  const auto *Var = dyn_cast<VarDecl>(G.Ref.Root);
  if (!Var || !G.Ref.isRoot() || !U.Ref.isRoot() || G.How.Inner ||
      !G.How.Through.empty() || G.S->getBeginLoc().isMacroID() ||
      U.S->getBeginLoc().isMacroID())
    return std::nullopt;
  // Loading while the meta device is ambient loads nothing.
  const auto *UseExpr = dyn_cast<Expr>(U.S);
  if (!UseExpr || Here.at(UseExpr))
    return std::nullopt;
  const auto *Built = dyn_cast<Expr>(G.How.At);
  const Expr *Config = nullptr;
  if (const auto *Construct = dyn_cast_or_null<CXXConstructExpr>(Built))
    Config = Construct->getNumArgs() == 1 ? Construct->getArg(0) : nullptr;
  else if (const auto *Call = dyn_cast_or_null<CallExpr>(Built))
    Config = Call->getNumArgs() == 1 ? Call->getArg(0) : nullptr;
  if (!Config)
    return std::nullopt;
  Config = ignoreObjectPlumbing(Config);
  if (const auto *Ref = dyn_cast<DeclRefExpr>(Config))
    if (const auto *ConfigVar = dyn_cast<VarDecl>(Ref->getDecl());
        ConfigVar && ConfigVar->hasLocalStorage() && ConfigVar->getInit())
      Config = ignoreObjectPlumbing(ConfigVar->getInit());
  const auto *LoadConfig = dyn_cast<CallExpr>(Config);
  const FunctionDecl *Reader =
      LoadConfig ? LoadConfig->getDirectCallee() : nullptr;
  if (!Reader || qualifiedNameOf(Reader) != "metaguard::load_config" ||
      LoadConfig->getNumArgs() != 1)
    return std::nullopt;
  // The folder must be a variable the use can see: a parameter of F or a
  // local declared in F's outermost block.
  const auto *DirRef =
      dyn_cast<DeclRefExpr>(LoadConfig->getArg(0)->IgnoreParenImpCasts());
  const auto *DirVar = DirRef ? dyn_cast<VarDecl>(DirRef->getDecl()) : nullptr;
  if (!DirVar || DirVar->getDeclContext() != F ||
      (!isa<ParmVarDecl>(DirVar) && !declaredInOutermostBlock(DirVar, F)))
    return std::nullopt;
  // Insert before the statement of the use, a statement of a block.
  const StmtParents &Parents = Ambient.functions().parents();
  const Stmt *Before = U.S;
  while (Before && !isa_and_nonnull<CompoundStmt>(Parents.parent(Before)))
    Before = Parents.parent(Before);
  if (!Before)
    return std::nullopt;
  EmptyModelReporter::LoadFirst Fix;
  Fix.Before = Before;
  Fix.Dir = DirRef;
  Fix.Qualifier = "metaguard::";
  const QualType T = Var->getType().getNonReferenceType();
  Fix.Model = (isModuleClass(T->getAsCXXRecordDecl()) ? "" : "*") +
              Var->getNameAsString();
  return Fix;
}

} // namespace clang::tidy::metaguard
