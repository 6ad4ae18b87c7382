//===--- ModelProducers.h - metaguard-tidy ---------------------*- C++ -*-===//
//
// Functions and calls that produce a model object: what a factory returns,
// what a variable is initialised from. A dispatched model is only ever
// produced by one of these.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_DOMAIN_MODELPRODUCERS_H
#define METAGUARD_CHECKS_UTILS_DOMAIN_MODELPRODUCERS_H

#include "clang/AST/Decl.h"
#include "clang/AST/Expr.h"

namespace clang::tidy::metaguard {

/// Whether FD returns a model (a module, a holder, a pointer or smart
/// pointer to a module): only such functions can return a dispatched one.
bool returnsModel(const FunctionDecl *FD);

/// The call an initialiser evaluates to (`from_pretrained<M>(...)`,
/// `make_model(...)`), also through `.ptr()` / `.get()` on its result, or
/// nullptr.
const CallExpr *producingCall(const Expr *Init);

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_DOMAIN_MODELPRODUCERS_H
