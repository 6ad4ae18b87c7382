//===--- InvokedCallables.h - metaguard-tidy -------------------*- C++ -*-===//
//
// The callables that a call of the standard library runs on behalf of the
// code that makes it: the function object given to an algorithm
// (std::for_each, std::for_each_n, std::transform, their std::ranges forms),
// to std::invoke, and the body of a thread (std::thread, std::jthread, a
// vector of threads' emplace_back, std::async), and the deferred task that
// a get() or wait() runs. Their bodies are in the
// user's code, but the calls of them are in system headers: an analysis
// that follows calls sees them only through this. What the callable does
// belongs at the call, with each of its parameters bound to what the call
// passes it: an argument, or the elements of a range.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_ANALYSIS_INVOKEDCALLABLES_H
#define METAGUARD_CHECKS_UTILS_ANALYSIS_INVOKEDCALLABLES_H

#include "utils/analysis/CallableStores.h"

#include "clang/AST/Decl.h"
#include "clang/AST/Expr.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace clang::tidy::metaguard {

/// What a parameter of an invoked callable is given.
struct CallableSource {
  /// The call's argument; nullptr when the call gives nothing the caller
  /// wrote (a std::stop_token, a projected element).
  const Expr *Arg = nullptr;
  /// The parameter gets the elements of Arg (a range, or the first iterator
  /// of one), not Arg itself.
  bool Elements = false;
};

/// A callable that a call runs, and what its parameters are given.
struct InvokedCallable {
  /// The argument that gives the callable (a lambda, a function, a local
  /// variable holding a lambda).
  const Expr *Callable = nullptr;
  /// What it runs: the function, or the lambda's call operator (each
  /// instantiation of a generic lambda's).
  llvm::SmallVector<const FunctionDecl *, 1> Functions;
  /// By parameter of the callable, in order; shorter when the call passes
  /// fewer.
  llvm::SmallVector<CallableSource, 2> Params;
  /// The callable runs on a thread the call starts (std::thread,
  /// std::jthread, std::async), not before the call returns.
  bool OnAnotherThread = false;
  /// std::async(std::launch::deferred, ...): the callable runs later, on
  /// the thread that calls get() or wait() on the future
  /// (deferredCallableRunBy).
  bool Deferred = false;
};

/// The callable Call runs, if Call (a CallExpr, a call of a std::ranges
/// algorithm object, a CXXConstructExpr of a thread, or an emplace into a
/// container of threads) is one of the standard library's calls that run
/// one; std::nullopt otherwise, and when the callable is not a function or
/// lambda visible here (a std::function or function pointer passed in).
/// With Stores, a std::function read from a variable, member or table runs
/// any function the translation unit stores there.
std::optional<InvokedCallable>
invokedCallable(const Expr *Call, CallableStores *Stores = nullptr);

/// The deferred task that Call runs on the calling thread, when Call is a
/// get() or wait() on a local std::future / std::shared_future initialised by
/// std::async(std::launch::deferred, ...); std::nullopt otherwise. A
/// std::async whose policy also allows std::launch::async runs on a thread
/// of its own (as libstdc++ and libc++ choose), not here.
std::optional<InvokedCallable>
deferredCallableRunBy(const Expr *Call, CallableStores *Stores = nullptr);

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_ANALYSIS_INVOKEDCALLABLES_H
