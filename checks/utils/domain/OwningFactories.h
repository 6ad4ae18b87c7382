//===--- OwningFactories.h - metaguard-tidy --------------------*- C++ -*-===//
//
// Calls of the standard library that build one object of the user's on the
// heap for a smart pointer (std::make_unique, std::make_shared,
// std::allocate_shared), or in a std::optional (emplace, std::in_place): the
// construction
// happens inside a system header,
// where the checks do not look, but it runs the user's constructor all the
// same, and the smart pointer runs the user's destructor.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_DOMAIN_OWNINGFACTORIES_H
#define METAGUARD_CHECKS_UTILS_DOMAIN_OWNINGFACTORIES_H

#include "clang/AST/DeclCXX.h"
#include "clang/AST/Expr.h"
#include "clang/AST/ExprCXX.h"
#include "llvm/ADT/DenseMap.h"

namespace clang::tidy::metaguard {

class OwningFactories {
public:
  /// Whether FD is std::make_unique, std::make_shared or
  /// std::allocate_shared.
  static bool isOwningFactory(const FunctionDecl *FD);

  /// Whether FD is std::optional<T>::emplace, which builds a T in the
  /// optional (destroyed by its reset(), its next emplace, or its end).
  static bool isOptionalEmplace(const FunctionDecl *FD);

  /// Whether Construct builds a std::optional<T> with its T inside
  /// (`std::optional<T> v{std::in_place, args...}`).
  static bool isOptionalInPlace(const CXXConstructExpr *Construct);

  /// The class of the user's (declared outside system headers) that Call
  /// builds, when Call is one of the factories above, an emplace into a
  /// std::optional or an optional's std::in_place construction; otherwise
  /// nullptr.
  static const CXXRecordDecl *builtRecord(const Expr *Call);

  /// The argument of Call (one of the calls above) that the factory passes
  /// on to the constructor's parameter Index, or nullptr when the call
  /// leaves it out (the constructor's default argument then decides).
  static const Expr *forwardedArgument(const Expr *Call, unsigned Index);

  /// The construction of builtRecord(Call) inside the factory's
  /// instantiation (the constructor it runs), or nullptr when it cannot be
  /// found within a few calls.
  const CXXConstructExpr *construction(const Expr *Call);

  void clear() { Found.clear(); }

private:
  llvm::DenseMap<const FunctionDecl *, const CXXConstructExpr *> Found;
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_DOMAIN_OWNINGFACTORIES_H
