//===--- EmptyModelCollector.cpp - metaguard-tidy --------------*- C++ -*-===//
//
// The events of one function for metaguard-empty-model-used (see
// EmptyModelEvents.h): what builds a model, statement by statement, and the
// facts of the functions it calls. What uses a model, gives it weights or
// initialises it is collected in EmptyModelWeights.cpp.
//
//===----------------------------------------------------------------------===//

#include "EmptyModelCollector.h"
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

} // namespace

Events Collector::run() {
  Ambient.functions().parents().indexFunction(F);
  if (const auto *Ctor = dyn_cast<CXXConstructorDecl>(F))
    for (const CXXCtorInitializer *Init : Ctor->inits())
      if (Init->isMemberInitializer() && Init->getInit())
        assign(Init->getInit(), memberOf(std::nullopt, Init->getMember()),
               Init->getInit());
  forEachEvaluatedStmt(F, [this](const Stmt *S) { visit(S); });
  return std::move(Ev);
}

void Collector::visit(const Stmt *S) {
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

std::optional<Building> Collector::built(const Expr *Value) {
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
    if (!isModuleOrHolderType(Construct->getType()) || isEmptyHolder(Construct))
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

std::optional<Building> Collector::buildingAt(const Expr *At,
                                              std::string Through) {
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

std::optional<Building> Collector::fromFacts(const Expr *Call, BuiltModel Kind,
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

std::optional<Building> Collector::scopeFunctionValue(const CallExpr *Call) {
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

void Collector::assign(const Expr *S, const ModuleRef &Target,
                       const Expr *Value) {
  if (std::optional<Building> B = built(Value)) {
    Ev.Gens.push_back(Gen{S, Target, std::move(*B)});
    return;
  }
  Ev.Kills.push_back(Kill{S, Target, KillKind::NewValue});
  if (const CXXConstructExpr *Construct = objectConstruction(Value))
    applyMembers(S, Construct->getConstructor(), Target, /*Uses=*/false);
}

const CXXConstructExpr *Collector::objectConstruction(const Expr *Value) {
  const Expr *E = ignoreObjectPlumbing(Value);
  const auto *Construct = dyn_cast<CXXConstructExpr>(E);
  if (!Construct)
    if (const auto *Call = dyn_cast<CallExpr>(E))
      Construct = Ambient.owning().construction(Call);
  if (!Construct || isModuleOrHolderType(Construct->getType()))
    return nullptr;
  return Construct;
}

void Collector::declaration(const DeclStmt *DS) {
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

void Collector::assignment(const Expr *S, const Expr *Lhs, const Expr *Rhs,
                           bool Plain) {
  if (!Plain)
    return;
  if (std::optional<ModuleRef> Target = moduleRefOf(Lhs))
    assign(S, *Target, Rhs);
}

void Collector::returned(const ReturnStmt *Ret) {
  const Expr *Value = Ret->getRetValue();
  if (!Value || !returnsModel(F))
    return;
  Returned R;
  R.S = Ret;
  R.Built = built(Value);
  if (!R.Built)
    if (std::optional<ModuleRef> Ref = moduleRefOf(Value); Ref && Ref->isRoot())
      R.Ref = Ref;
  Ev.Returns.push_back(std::move(R));
}

llvm::ArrayRef<const Expr *> Collector::arguments(const Expr *Call) {
  if (const auto *CE = dyn_cast<CallExpr>(Call))
    return llvm::ArrayRef<const Expr *>(CE->getArgs(), CE->getNumArgs());
  if (const auto *Construct = dyn_cast<CXXConstructExpr>(Call))
    return llvm::ArrayRef<const Expr *>(Construct->getArgs(),
                                        Construct->getNumArgs());
  return {};
}

const EmptyModelFacts *Collector::factsOf(const FunctionDecl *FD) {
  if (!FD)
    return nullptr;
  const FunctionSummary *S = Table.lookup<EmptyModelFacts>(FD);
  return S ? &S->get<EmptyModelFacts>() : nullptr;
}

llvm::SmallVector<Collector::TargetFacts, 2>
Collector::targets(const Expr *Call) {
  llvm::SmallVector<TargetFacts, 2> Result;
  for (const FunctionDecl *Target : Table.callTargets(Call))
    if (const EmptyModelFacts *Facts = factsOf(Target))
      Result.push_back({displayName(Target), Facts});
  for (const FunctionSummary *S : Table.externalTargets(Call))
    Result.push_back({S->Name, &S->get<EmptyModelFacts>()});
  return Result;
}

Events collectEvents(const FunctionDecl *F, AmbientDevice::InFunction &Here,
                     SummaryTable &Table, const EventKinds &Kinds) {
  return Collector(Kinds, F, Here, Table).run();
}

} // namespace clang::tidy::metaguard::emptymodel
