//===--- InvokedCallables.cpp - metaguard-tidy -----------------*- C++ -*-===//

#include "utils/analysis/InvokedCallables.h"
#include "utils/ClangCompat.h"
#include "utils/analysis/ExprPlumbing.h"
#include "utils/analysis/FunctionBodies.h"
#include "utils/analysis/NameList.h"

#include "clang/AST/DeclCXX.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/ExprCXX.h"
#include "llvm/ADT/STLExtras.h"

namespace clang::tidy::metaguard {

namespace {

/// Algorithms that call their function object on the elements of their
/// first range (and, for binary std::transform, of the second).
constexpr llvm::StringLiteral Algorithms[] = {"for_each", "for_each_n",
                                              "transform"};

/// How a call hands its arguments to the callable it runs.
enum class Shape {
  Algorithm, ///< Elements of ranges, before the call returns.
  Direct,    ///< The arguments after the callable (std::invoke).
  Thread,    ///< The arguments after the callable, on a new thread.
};

bool isThreadClass(const CXXRecordDecl *RD) {
  return isStdNamed(RD, "thread") || isStdNamed(RD, "jthread");
}

/// Whether RD is a standard container of threads.
bool holdsThreads(const CXXRecordDecl *RD) {
  const auto *Spec = dyn_cast_or_null<ClassTemplateSpecializationDecl>(RD);
  if (!Spec || !Spec->isInStdNamespace() ||
      Spec->getTemplateArgs().size() == 0 ||
      Spec->getTemplateArgs()[0].getKind() != TemplateArgument::Type)
    return false;
  return isThreadClass(
      Spec->getTemplateArgs()[0].getAsType()->getAsCXXRecordDecl());
}

/// Whether E is an execution policy (std::execution::par) or a launch
/// policy (std::launch::async): an argument before the ones that count.
bool isPolicy(const Expr *E) {
  QualType T = E->getType().getNonReferenceType();
  if (const auto *Enum = T->getAs<EnumType>())
    return isStdNamed(Enum->getDecl(), "launch");
  const CXXRecordDecl *RD = T->getAsCXXRecordDecl();
  return RD && RD->getIdentifier() &&
         compat::endsWith(RD->getName(), "_policy");
}

/// Whether E is exactly std::launch::deferred.
bool isDeferredPolicy(const Expr *E) {
  const auto *Ref = dyn_cast<DeclRefExpr>(E->IgnoreParenImpCasts());
  const auto *Value =
      Ref ? dyn_cast<EnumConstantDecl>(Ref->getDecl()) : nullptr;
  return Value && Value->getIdentifier() && Value->getName() == "deferred" &&
         isStdNamed(cast<EnumDecl>(Value->getDeclContext()), "launch");
}

/// What a function object given as an argument runs: the function, or the
/// call operator of the lambda (of a generic lambda, each instantiation);
/// for a std::function read from a variable, member or table, every one
/// stored there (the standard library copies it before running it, so the
/// call does not change it).
llvm::SmallVector<const FunctionDecl *, 1> functionsOf(const Expr *Arg,
                                                       CallableStores *Stores) {
  llvm::SmallVector<const FunctionDecl *, 1> Out;
  auto Add = [&](const FunctionDecl *FD) {
    if (const FunctionTemplateDecl *Template =
            FD->getDescribedFunctionTemplate()) {
      for (const FunctionDecl *Spec : Template->specializations())
        Out.push_back(Spec);
      return;
    }
    Out.push_back(FD);
  };
  if (const FunctionDecl *FD = functionOfCallableObject(Arg))
    Add(FD);
  else if (const FunctionDecl *Sole = CallableStores::soleTarget(Arg))
    Add(Sole);
  else if (Stores)
    for (const FunctionDecl *Stored : Stores->targets(Arg))
      Add(Stored);
  return Out;
}

/// `std::ref(x)` and `std::cref(x)` pass x itself.
const Expr *unwrapReference(const Expr *Arg) {
  const Expr *E = ignoreExprPlumbing(Arg, ExprPlumbing());
  if (const auto *Call = dyn_cast_or_null<CallExpr>(E))
    if (const FunctionDecl *Callee = Call->getDirectCallee())
      if ((isStdNamed(Callee, "ref") || isStdNamed(Callee, "cref")) &&
          Call->getNumArgs() == 1)
        return Call->getArg(0);
  return Arg;
}

/// The sources of an algorithm's function object's parameters, given the
/// position of the function object among Args.
llvm::SmallVector<CallableSource, 2>
elementSources(llvm::ArrayRef<const Expr *> Args, size_t Callable,
               bool Ranges) {
  llvm::SmallVector<CallableSource, 2> Params;
  // A projection after the function object gives it projected values.
  if (Ranges && Callable + 1 < Args.size())
    return Params;
  Params.push_back({Args[0], true});
  // The second range of a binary transform: (first1, last1, first2, out, op)
  // or (first1, last1, first2, last2, out, op), and for std::ranges
  // (r1, r2, out, op), told from (first, last, out, op) by its types.
  if (Callable == 4 || Callable == 5)
    Params.push_back({Args[2], true});
  else if (Ranges && Callable == 3 &&
           Args[0]->getType().getCanonicalType().getUnqualifiedType() !=
               Args[1]->getType().getCanonicalType().getUnqualifiedType())
    Params.push_back({Args[1], true});
  return Params;
}

/// The callee's shape and the arguments that count (after the callee object
/// of a std::ranges algorithm, and an emplace's position), if Call runs a
/// callable.
std::optional<Shape> shapeOf(const Expr *Call,
                             llvm::SmallVectorImpl<const Expr *> &Args,
                             bool &Ranges) {
  // Defaulted arguments (std::identity as the projection) are not given.
  auto Take = [&](auto Range, size_t Skip) {
    for (const Expr *Arg : Range)
      if (Skip > 0)
        --Skip;
      else if (!isa<CXXDefaultArgExpr>(Arg))
        Args.push_back(Arg);
  };
  if (const auto *Construct = dyn_cast<CXXConstructExpr>(Call)) {
    if (!isThreadClass(Construct->getConstructor()->getParent()))
      return std::nullopt;
    Take(Construct->arguments(), 0);
    return Shape::Thread;
  }
  if (const auto *Member = dyn_cast<CXXMemberCallExpr>(Call)) {
    // threads.emplace_back(f, args...), threads.emplace(pos, f, args...).
    const CXXMethodDecl *Method = Member->getMethodDecl();
    if (!Method || !Method->getIdentifier())
      return std::nullopt;
    llvm::StringRef Name = Method->getName();
    if ((Name != "emplace_back" && Name != "emplace_front" &&
         Name != "emplace") ||
        !holdsThreads(Method->getParent()))
      return std::nullopt;
    Take(Member->arguments(), Name == "emplace" ? 1 : 0);
    return Shape::Thread;
  }
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(Call)) {
    // std::ranges::for_each(r, f): a call of an algorithm object.
    if (Op->getOperator() != OO_Call || Op->getNumArgs() < 2)
      return std::nullopt;
    const auto *Ref =
        dyn_cast<DeclRefExpr>(Op->getArg(0)->IgnoreParenImpCasts());
    const auto *Object = Ref ? dyn_cast<VarDecl>(Ref->getDecl()) : nullptr;
    if (!Object || !Object->getIdentifier() ||
        !llvm::is_contained(Algorithms, Object->getName()) ||
        qualifiedNameOf(Object) != ("std::ranges::" + Object->getName()).str())
      return std::nullopt;
    Ranges = true;
    Take(Op->arguments(), 1);
    return Shape::Algorithm;
  }
  const auto *Plain = dyn_cast<CallExpr>(Call);
  const FunctionDecl *Callee = Plain ? Plain->getDirectCallee() : nullptr;
  if (!Callee || !Callee->getIdentifier() || !Callee->isInStdNamespace())
    return std::nullopt;
  llvm::StringRef Name = Callee->getName();
  std::optional<Shape> How;
  if (llvm::is_contained(Algorithms, Name))
    How = Shape::Algorithm;
  else if (Name == "invoke")
    How = Shape::Direct;
  else if (Name == "async")
    How = Shape::Thread;
  if (How)
    Take(Plain->arguments(), 0);
  return How;
}

} // namespace

std::optional<InvokedCallable> invokedCallable(const Expr *Call,
                                               CallableStores *Stores) {
  llvm::SmallVector<const Expr *, 6> Args;
  bool Ranges = false;
  std::optional<Shape> How = shapeOf(Call, Args, Ranges);
  if (!How)
    return std::nullopt;
  bool Deferred = false;
  if (!Args.empty() && isPolicy(Args.front())) {
    Deferred = isDeferredPolicy(Args.front());
    Args.erase(Args.begin());
  }
  if (Args.empty())
    return std::nullopt;
  InvokedCallable Result;
  Result.OnAnotherThread = *How == Shape::Thread && !Deferred;
  Result.Deferred = *How == Shape::Thread && Deferred;
  if (*How != Shape::Algorithm) {
    Result.Callable = Args[0];
    Result.Functions = functionsOf(Args[0], Stores);
    for (const Expr *Arg : llvm::drop_begin(Args))
      Result.Params.push_back({unwrapReference(Arg), false});
  } else {
    for (size_t I = 1; I < Args.size() && !Result.Callable; ++I) {
      Result.Functions = functionsOf(Args[I], Stores);
      if (!Result.Functions.empty()) {
        Result.Callable = Args[I];
        Result.Params = elementSources(Args, I, Ranges);
      }
    }
  }
  if (Result.Functions.empty())
    return std::nullopt;
  // std::jthread gives a body that takes one a std::stop_token first.
  const FunctionDecl *First = Result.Functions.front();
  if (*How == Shape::Thread && First->getNumParams() > 0)
    if (const CXXRecordDecl *RD = First->getParamDecl(0)
                                      ->getType()
                                      .getNonReferenceType()
                                      ->getAsCXXRecordDecl();
        isStdNamed(RD, "stop_token"))
      Result.Params.insert(Result.Params.begin(), CallableSource());
  return Result;
}

std::optional<InvokedCallable> deferredCallableRunBy(const Expr *Call,
                                                     CallableStores *Stores) {
  const auto *Member = dyn_cast<CXXMemberCallExpr>(Call);
  const CXXMethodDecl *Method = Member ? Member->getMethodDecl() : nullptr;
  if (!Method || !Method->getIdentifier() ||
      (Method->getName() != "get" && Method->getName() != "wait") ||
      !(isStdNamed(Method->getParent(), "future") ||
        isStdNamed(Method->getParent(), "shared_future")))
    return std::nullopt;
  // The future a local variable holds since std::async made it (moving it
  // into a shared_future keeps the task: `std::shared_future s = async(...)`).
  const auto *Ref = dyn_cast<DeclRefExpr>(
      Member->getImplicitObjectArgument()->IgnoreParenImpCasts());
  const auto *Var = Ref ? dyn_cast<VarDecl>(Ref->getDecl()) : nullptr;
  if (!Var || !Var->hasLocalStorage() || isa<ParmVarDecl>(Var) ||
      !Var->getInit())
    return std::nullopt;
  const Expr *Init = ignoreExprPlumbing(Var->getInit(), ExprPlumbing());
  for (unsigned Steps = 0; Init && Steps < 4; ++Steps) {
    const auto *Construct = dyn_cast<CXXConstructExpr>(Init);
    if (!Construct || Construct->getNumArgs() != 1)
      break;
    Init = ignoreExprPlumbing(Construct->getArg(0), ExprPlumbing());
  }
  const auto *Async = dyn_cast_or_null<CallExpr>(Init);
  if (!Async)
    return std::nullopt;
  std::optional<InvokedCallable> Task = invokedCallable(Async, Stores);
  if (!Task || !Task->Deferred)
    return std::nullopt;
  return Task;
}

} // namespace clang::tidy::metaguard
