//===--- FunctionBodies.cpp - metaguard-tidy -------------------*- C++ -*-===//

#include "FunctionBodies.h"
#include "ExprPlumbing.h"

#include "clang/AST/DeclCXX.h"
#include "clang/AST/ParentMapContext.h"
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

/// The lambda whose call operator FD is (reached through the operator when
/// the parent map records the body under the method), or nullptr.
const LambdaExpr *lambdaOfCallOperator(const FunctionDecl *FD,
                                       ASTContext &Context) {
  const auto *Method = dyn_cast<CXXMethodDecl>(FD);
  if (!Method || !Method->getParent()->isLambda())
    return nullptr;
  DynTypedNode Node = DynTypedNode::create(*Method);
  for (unsigned Steps = 0; Steps < 4; ++Steps) {
    DynTypedNodeList Parents = Context.getParents(Node);
    if (Parents.empty())
      return nullptr;
    for (const DynTypedNode &Parent : Parents)
      if (const auto *Lambda = Parent.get<LambdaExpr>())
        if (Lambda->getCallOperator() == Method)
          return Lambda;
    Node = Parents[0];
  }
  return nullptr;
}

} // namespace

EnclosingFunction enclosingFunction(const DynTypedNode &Node,
                                    ASTContext &Context) {
  DynTypedNode Current = Node;
  for (unsigned Steps = 0; Steps < 4096; ++Steps) {
    DynTypedNodeList Parents = Context.getParents(Current);
    if (Parents.empty())
      return {};
    // A lambda body can have two parents (the LambdaExpr and, in template
    // instantiations, its call operator): prefer the LambdaExpr.
    Current = Parents[0];
    for (const DynTypedNode &Parent : Parents)
      if (Parent.get<LambdaExpr>())
        Current = Parent;
    if (const auto *Lambda = Current.get<LambdaExpr>()) {
      // Only the body belongs to the lambda; captures belong to the parent.
      if (const FunctionDecl *Op = Lambda->getCallOperator())
        if (Node.getSourceRange().isValid() &&
            Lambda->getBody()->getSourceRange().fullyContains(
                Node.getSourceRange()))
          return {Op, Lambda};
      continue;
    }
    if (const auto *FD = Current.get<FunctionDecl>())
      return {FD, lambdaOfCallOperator(FD, Context)};
    if (Current.get<BlockDecl>() || Current.get<TranslationUnitDecl>() ||
        Current.get<RecordDecl>() || Current.get<NamespaceDecl>())
      return {};
  }
  return {};
}

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

} // namespace clang::tidy::metaguard
