//===--- StmtParents.h - metaguard-tidy ------------------------*- C++ -*-===//
//
// Parents of statements, indexed only for the function bodies the checks
// look at. ASTContext::getParents would build a parent map over the whole
// translation unit (LibTorch's headers included) the first time it is asked,
// which costs more memory than parsing them: the checks never call it.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_ANALYSIS_STMTPARENTS_H
#define METAGUARD_CHECKS_UTILS_ANALYSIS_STMTPARENTS_H

#include "clang/AST/Decl.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/Stmt.h"
#include "llvm/ADT/DenseMap.h"

namespace clang::tidy::metaguard {

/// Statement -> parent statement, for the trees that were indexed. A lambda's
/// body has its LambdaExpr as parent; bodies of local classes are not part
/// of the tree they are declared in.
class StmtParents {
public:
  /// Indexes the tree under Root, unless it already is (as a root or inside
  /// another indexed tree). Cost: linear in the size of the tree.
  void index(const Stmt *Root);
  /// Indexes F's body and constructor initialisers.
  void indexFunction(const FunctionDecl *F);
  /// The parent of S, or nullptr for a root or a statement never indexed.
  const Stmt *parent(const Stmt *S) const {
    auto It = Parents.find(S);
    return It == Parents.end() ? nullptr : It->second;
  }
  bool isIndexed(const Stmt *S) const { return Parents.count(S) != 0; }
  /// Whether S is Outer or lies under it.
  bool isInside(const Stmt *S, const Stmt *Outer) const {
    for (unsigned Steps = 0; S && Steps < 256; ++Steps, S = parent(S))
      if (S == Outer)
        return true;
    return false;
  }
  void clear() { Parents.clear(); }

private:
  /// Roots map to nullptr.
  llvm::DenseMap<const Stmt *, const Stmt *> Parents;
};

/// The function whose own code contains a node: a function, method,
/// constructor, or the call operator of a lambda (Lambda is then set).
struct EnclosingFunction {
  const FunctionDecl *Function = nullptr;
  const LambdaExpr *Lambda = nullptr;
};

/// Finds the function enclosing a statement of user code without a
/// translation-unit parent map: the first query indexes the function bodies
/// of the translation unit that are not in system headers (and instantiations
/// of templates written there).
class FunctionIndex {
public:
  /// The innermost function (or lambda) whose own code contains S; empty if S
  /// is in a system header or outside any function.
  EnclosingFunction enclosing(const Stmt *S, ASTContext &Context);
  /// The function a local variable belongs to (its DeclContext), with the
  /// lambda when that is a lambda's call operator.
  EnclosingFunction enclosing(const VarDecl *Var, ASTContext &Context);
  /// The parents of everything indexed so far (also used for bodies the
  /// checks enter elsewhere, through StmtParents::index).
  StmtParents &parents() { return Parents; }
  void clear();

private:
  void build(ASTContext &Context);

  bool Built = false;
  StmtParents Parents;
  /// Root statement (a body, a constructor initialiser) -> its function.
  llvm::DenseMap<const Stmt *, const FunctionDecl *> RootFunction;
  /// Closure class -> the lambda expression that creates it.
  llvm::DenseMap<const CXXRecordDecl *, const LambdaExpr *> Lambdas;
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_ANALYSIS_STMTPARENTS_H
