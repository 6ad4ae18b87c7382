//===--- FunctionBodies.h - metaguard-tidy ---------------------*- C++ -*-===//
//
// What a function evaluates itself: its statements, its constructor
// initialisers, without the bodies of nested lambdas and local classes (they
// are functions of their own).
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_ANALYSIS_FUNCTIONBODIES_H
#define METAGUARD_CHECKS_UTILS_ANALYSIS_FUNCTIONBODIES_H

#include "utils/analysis/StmtParents.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"
#include "clang/AST/ExprCXX.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <vector>

namespace clang::tidy::metaguard {

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

/// Like functionOfCallable, also through the std::function (or other
/// callable wrapper) the argument is converted to: what `m->apply(fn)` runs.
const FunctionDecl *functionOfCallableObject(const Expr *Arg);

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_ANALYSIS_FUNCTIONBODIES_H
