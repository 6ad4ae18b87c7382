//===--- FunctionBodies.cpp - metaguard-tidy -------------------*- C++ -*-===//

#include "utils/analysis/FunctionBodies.h"
#include "utils/analysis/ExprPlumbing.h"
#include "utils/domain/ModuleExprs.h"

#include "clang/AST/DeclCXX.h"
#include "clang/AST/RecursiveASTVisitor.h"

namespace clang::tidy::metaguard {

namespace {

class EvaluatedStmtVisitor : public RecursiveASTVisitor<EvaluatedStmtVisitor> {
  using Base = RecursiveASTVisitor<EvaluatedStmtVisitor>;

public:
  explicit EvaluatedStmtVisitor(llvm::function_ref<void(const Stmt *)> Fn)
      : Fn(Fn) {}

  bool shouldVisitTemplateInstantiations() const { return true; }

  bool VisitStmt(Stmt *S) {
    Fn(S);
    return true;
  }

  bool TraverseLambdaExpr(LambdaExpr *Lambda) {
    Fn(Lambda);
    for (Expr *Init : Lambda->capture_inits())
      if (Init)
        TraverseStmt(Init);
    return true;
  }

  bool TraverseBlockExpr(BlockExpr *) { return true; }

  bool TraverseCXXDefaultInitExpr(CXXDefaultInitExpr *E) {
    Fn(E);
    if (Expr *Init = E->getExpr())
      TraverseStmt(Init);
    return true;
  }

  bool TraverseDecl(Decl *D) {
    if (!D || isa<FunctionDecl, RecordDecl, FunctionTemplateDecl,
                  ClassTemplateDecl, BlockDecl>(D))
      return true;
    return Base::TraverseDecl(D);
  }

private:
  llvm::function_ref<void(const Stmt *)> Fn;
};

/// A callable argument: a lambda, a copy of one, or a pointer to a function.
const Expr *stripCallable(const Expr *E) {
  ExprPlumbing Callable;
  Callable.Casts = ExprPlumbing::FunctionalCasts::Keep;
  Callable.AddressOf = true;
  return ignoreExprPlumbing(E, Callable);
}

} // namespace

void forEachEvaluatedStmt(const FunctionDecl *F,
                          llvm::function_ref<void(const Stmt *)> Fn) {
  if (!F)
    return;
  EvaluatedStmtVisitor Visitor(Fn);
  if (const auto *Ctor = dyn_cast<CXXConstructorDecl>(F))
    for (const CXXCtorInitializer *Init : Ctor->inits())
      if (Expr *E = Init->getInit())
        Visitor.TraverseStmt(E);
  if (Stmt *Body = F->getBody())
    Visitor.TraverseStmt(Body);
}

std::vector<const Expr *> collectCalls(const FunctionDecl *F) {
  std::vector<const Expr *> Calls;
  forEachEvaluatedStmt(F, [&](const Stmt *S) {
    if (isa<CallExpr, CXXConstructExpr, CXXInheritedCtorInitExpr>(S))
      Calls.push_back(cast<Expr>(S));
  });
  return Calls;
}

const FunctionDecl *definitionWithBody(const FunctionDecl *F) {
  if (!F)
    return nullptr;
  const FunctionDecl *Def = nullptr;
  if (F->hasBody(Def) && Def && Def->getBody())
    return Def;
  return nullptr;
}

const LambdaExpr *lambdaOfCallable(const Expr *Arg) {
  const Expr *E = stripCallable(Arg);
  if (const auto *Lambda = dyn_cast_or_null<LambdaExpr>(E))
    return Lambda;
  if (const auto *Ref = dyn_cast_or_null<DeclRefExpr>(E))
    if (const auto *VD = dyn_cast<VarDecl>(Ref->getDecl()))
      if (VD->hasLocalStorage() && VD->getInit())
        return dyn_cast_or_null<LambdaExpr>(stripCallable(VD->getInit()));
  return nullptr;
}

const FunctionDecl *functionOfCallable(const Expr *Arg) {
  if (const LambdaExpr *Lambda = lambdaOfCallable(Arg))
    return Lambda->getCallOperator();
  const Expr *E = stripCallable(Arg);
  if (const auto *Ref = dyn_cast_or_null<DeclRefExpr>(E))
    return dyn_cast<FunctionDecl>(Ref->getDecl());
  return nullptr;
}

const FunctionDecl *functionOfCallableObject(const Expr *Arg) {
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

} // namespace clang::tidy::metaguard
