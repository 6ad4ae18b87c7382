//===--- FunctionBodies.h - metaguard-tidy ---------------------*- C++ -*-===//
//
// What a function evaluates itself: its statements, its constructor
// initialisers, without the bodies of nested lambdas and local classes (they
// are functions of their own), and which function encloses a node.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_FUNCTIONBODIES_H
#define METAGUARD_CHECKS_UTILS_FUNCTIONBODIES_H

#include "clang/AST/ASTContext.h"
#include "clang/AST/ASTTypeTraits.h"
#include "clang/AST/Decl.h"
#include "clang/AST/ExprCXX.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <vector>

namespace clang::tidy::metaguard {

/// The function whose own code contains a node: a function, method,
/// constructor, or the call operator of a lambda (Lambda is then set).
struct EnclosingFunction {
  const FunctionDecl *Function = nullptr;
  const LambdaExpr *Lambda = nullptr;
};

/// The innermost function (or lambda) whose body contains Node; an empty
/// result at namespace or class scope.
EnclosingFunction enclosingFunction(const DynTypedNode &Node,
                                    ASTContext &Context);

/// Calls Fn for every statement that F evaluates itself, in source order:
/// its body, its constructor initialisers (written or implicit), the in-class
/// default member initialisers they use, and the init-captures of lambdas it
/// creates. Bodies of nested lambdas, blocks and local classes are skipped.
void forEachEvaluatedStmt(const FunctionDecl *F,
                          llvm::function_ref<void(const Stmt *)> Fn);

/// The call-like expressions F evaluates itself (CallExpr, including member
/// and operator calls, CXXConstructExpr, CXXInheritedCtorInitExpr).
std::vector<const Expr *> collectCalls(const FunctionDecl *F);

/// Whether F has a body to look into (its definition, or the instantiation).
const FunctionDecl *definitionWithBody(const FunctionDecl *F);

/// The lambda a callable argument denotes: a lambda expression, or a local
/// variable initialised with one. nullptr otherwise.
const LambdaExpr *lambdaOfCallable(const Expr *Arg);

/// The function a callable argument denotes: a function name or its address,
/// or the call operator of the lambda it denotes. nullptr otherwise.
const FunctionDecl *functionOfCallable(const Expr *Arg);

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_FUNCTIONBODIES_H
