//===--- StmtParents.cpp - metaguard-tidy ----------------------*- C++ -*-===//

#include "utils/analysis/StmtParents.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/SourceManager.h"
#include "llvm/ADT/SmallVector.h"

namespace clang::tidy::metaguard {

void StmtParents::index(const Stmt *Root) {
  if (!Root || !Parents.try_emplace(Root, nullptr).second)
    return;
  // Iterative: generated code can nest deeply.
  llvm::SmallVector<const Stmt *, 64> Work{Root};
  while (!Work.empty()) {
    const Stmt *S = Work.pop_back_val();
    for (const Stmt *Child : S->children())
      if (Child && Parents.try_emplace(Child, S).second)
        Work.push_back(Child);
  }
}

void StmtParents::indexFunction(const FunctionDecl *F) {
  if (!F)
    return;
  if (const auto *Ctor = dyn_cast<CXXConstructorDecl>(F))
    for (const CXXCtorInitializer *Init : Ctor->inits())
      index(Init->getInit());
  index(F->getBody());
}

namespace {

/// Visits the function definitions written outside system headers.
class UserFunctionVisitor : public RecursiveASTVisitor<UserFunctionVisitor> {
public:
  UserFunctionVisitor(const SourceManager &SM,
                      llvm::function_ref<void(const FunctionDecl *)> OnFunction,
                      llvm::function_ref<void(const LambdaExpr *)> OnLambda)
      : SM(SM), OnFunction(OnFunction), OnLambda(OnLambda) {}

  bool shouldVisitTemplateInstantiations() const { return true; }

  bool TraverseDecl(Decl *D) {
    if (!D)
      return true;
    if (!isa<TranslationUnitDecl>(D) && D->getLocation().isValid() &&
        SM.isInSystemHeader(D->getLocation()))
      return true;
    return RecursiveASTVisitor::TraverseDecl(D);
  }

  bool VisitFunctionDecl(FunctionDecl *FD) {
    if (FD->doesThisDeclarationHaveABody() && FD->getBody())
      OnFunction(FD);
    return true;
  }

  bool VisitLambdaExpr(LambdaExpr *Lambda) {
    OnLambda(Lambda);
    return true;
  }

private:
  const SourceManager &SM;
  llvm::function_ref<void(const FunctionDecl *)> OnFunction;
  llvm::function_ref<void(const LambdaExpr *)> OnLambda;
};

} // namespace

void FunctionIndex::build(ASTContext &Context) {
  Built = true;
  llvm::SmallVector<const FunctionDecl *, 64> Functions;
  // Named: function_ref does not keep temporaries alive.
  auto OnFunction = [&](const FunctionDecl *FD) { Functions.push_back(FD); };
  auto OnLambda = [&](const LambdaExpr *L) {
    Lambdas.try_emplace(L->getLambdaClass(), L);
  };
  UserFunctionVisitor Visitor(Context.getSourceManager(), OnFunction, OnLambda);
  Visitor.TraverseDecl(Context.getTranslationUnitDecl());
  // Enclosing functions first, so that a lambda's body is indexed inside the
  // function that creates it (its parent is then the LambdaExpr).
  for (const FunctionDecl *FD : Functions) {
    if (const auto *Method = dyn_cast<CXXMethodDecl>(FD);
        Method && Method->getParent()->isLambda())
      continue;
    if (const auto *Ctor = dyn_cast<CXXConstructorDecl>(FD))
      for (const CXXCtorInitializer *Init : Ctor->inits())
        if (const Expr *E = Init->getInit()) {
          Parents.index(E);
          RootFunction.try_emplace(E, FD);
        }
    Parents.index(FD->getBody());
    RootFunction.try_emplace(FD->getBody(), FD);
  }
  // Lambdas outside any function (in default member initialisers, global
  // variables) are roots of their own.
  for (const FunctionDecl *FD : Functions)
    if (const auto *Method = dyn_cast<CXXMethodDecl>(FD);
        Method && Method->getParent()->isLambda() &&
        !Parents.isIndexed(FD->getBody())) {
      Parents.index(FD->getBody());
      RootFunction.try_emplace(FD->getBody(), FD);
    }
}

EnclosingFunction FunctionIndex::enclosing(const Stmt *S, ASTContext &Context) {
  if (!S)
    return {};
  if (!Built)
    build(Context);
  const Stmt *Child = S;
  for (const Stmt *Parent = Parents.parent(S); Parent;
       Child = Parent, Parent = Parents.parent(Parent))
    if (const auto *Lambda = dyn_cast<LambdaExpr>(Parent))
      // Only the body belongs to the lambda; captures belong to the parent.
      if (Child == Lambda->getBody())
        return {Lambda->getCallOperator(), Lambda};
  auto It = RootFunction.find(Child);
  if (It == RootFunction.end())
    return {};
  const FunctionDecl *FD = It->second;
  const LambdaExpr *Lambda = nullptr;
  if (const auto *Method = dyn_cast<CXXMethodDecl>(FD);
      Method && Method->getParent()->isLambda())
    Lambda = Lambdas.lookup(Method->getParent());
  return {FD, Lambda};
}

EnclosingFunction FunctionIndex::enclosing(const VarDecl *Var,
                                           ASTContext &Context) {
  const auto *FD = dyn_cast_or_null<FunctionDecl>(
      Var ? Var->getParentFunctionOrMethod() : nullptr);
  if (!FD)
    return {};
  const auto *Method = dyn_cast<CXXMethodDecl>(FD);
  if (!Method || !Method->getParent()->isLambda())
    return {FD, nullptr};
  if (!Built)
    build(Context);
  return {FD, Lambdas.lookup(Method->getParent())};
}

void FunctionIndex::clear() {
  Built = false;
  Parents.clear();
  RootFunction.clear();
  Lambdas.clear();
}

} // namespace clang::tidy::metaguard
