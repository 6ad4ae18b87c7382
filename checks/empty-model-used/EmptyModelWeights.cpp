//===--- EmptyModelWeights.cpp - metaguard-tidy ----------------*- C++ -*-===//
//
// The events of one function for metaguard-empty-model-used that concern a
// model's values (see EmptyModelCollector.h): uses, weights, memory without
// values (to_empty) and initialisation, at calls and through the facts of
// the functions called.
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

} // namespace

void Collector::use(const Stmt *S, const Expr *Model, UseKind Kind,
                    llvm::StringRef Function) {
  if (std::optional<ModuleRef> Ref = moduleRefOf(Model))
    Ev.Uses.push_back(Use{S, *Ref, Kind, Function.str(), {}, nullptr});
}

void Collector::giveWeights(const Stmt *S, const Expr *Model, KillKind Kind) {
  if (std::optional<ModuleRef> Ref = moduleRefOf(Model))
    Ev.Kills.push_back(Kill{S, *Ref, Kind});
}

void Collector::giveMemory(const CallExpr *Call, const FunctionDecl *Callee) {
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

void Collector::initialisedBy(const Stmt *S, const Expr *Tensor) {
  std::optional<ModuleRef> Owner = Kinds.Writes.parameterOwner(Tensor);
  if (!Owner)
    return;
  if (const Stmt *Loop = loopOver(S, *Owner))
    return Ev.Kills.push_back(Kill{Loop, *Owner, KillKind::Initialises});
  ModuleRef Whole;
  Whole.Root = Owner->Root;
  Ev.Kills.push_back(Kill{S, Whole, KillKind::Initialises});
}

const Stmt *Collector::loopOver(const Stmt *S, const ModuleRef &Owner) {
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

bool Collector::initialiserMethod(const CXXMemberCallExpr *Call,
                                  const CXXMethodDecl *Method) {
  const bool Applies = isNamed(Method, "apply") && Call->getNumArgs() > 0 &&
                       isModuleClass(Method->getParent());
  if (!Applies && !Kinds.Initializers.matches(Method))
    return false;
  std::optional<ModuleRef> Ref = moduleRefOf(Call->getImplicitObjectArgument());
  if (!Ref)
    return false;
  Ev.Kills.push_back(Kill{Call, *Ref, KillKind::Initialises});
  return true;
}

bool Collector::isFillMethod(const CXXMethodDecl *Method) {
  return llvm::any_of(FillMethods, [Method](llvm::StringRef Name) {
    return isNamed(Method, Name);
  });
}

bool Collector::parameterRead(const Expr *Call) {
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

void Collector::memberCall(const CXXMemberCallExpr *Call) {
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

void Collector::operatorCall(const CXXOperatorCallExpr *Op) {
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

void Collector::call(const CallExpr *Call) {
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

void Collector::construction(const CXXConstructExpr *Construct) {
  const CXXConstructorDecl *Ctor = Construct->getConstructor();
  if (!isModuleOrHolderType(Construct->getType()) &&
      !Ctor->isCopyOrMoveConstructor())
    callArguments(Construct, Ctor, 0);
}

void Collector::callArguments(const Expr *Call, const FunctionDecl *Callee,
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

void Collector::slotEvents(const Expr *Call, const ModuleRef &Ref,
                           const ModelSlotFacts &Slot,
                           const std::string &Name) {
  if (std::optional<UseOf> Of = useOf(Slot)) {
    Use U{Call, Ref, UseKind::Call, Name, Slot.Use, nullptr};
    U.Of = *Of;
    Ev.Uses.push_back(std::move(U));
  }
}

bool Collector::applyMembers(const Expr *Call, const CXXMethodDecl *Method,
                             const std::optional<ModuleRef> &ObjectRef,
                             bool Uses) {
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

} // namespace clang::tidy::metaguard::emptymodel
