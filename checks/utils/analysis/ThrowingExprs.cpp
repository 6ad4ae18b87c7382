//===--- ThrowingExprs.cpp - metaguard-tidy --------------------*- C++ -*-===//

#include "utils/analysis/ThrowingExprs.h"

#include "clang/AST/DeclCXX.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/Type.h"

namespace clang::tidy::metaguard {

namespace {

/// Whether a function of type T may throw, by its exception specification.
/// One Sema has not resolved (never used where it counts) may.
bool typeMayThrow(QualType T) {
  const auto *Proto = T.isNull() ? nullptr : T->getAs<FunctionProtoType>();
  if (!Proto)
    return true;
  if (isUnresolvedExceptionSpec(Proto->getExceptionSpecType()))
    return true;
  return !Proto->isNothrow();
}

bool calleeMayThrow(const FunctionDecl *FD) {
  // Destructors are noexcept unless declared otherwise; an implicit one's
  // specification may be left unresolved.
  if (isa<CXXDestructorDecl>(FD)) {
    const auto *Proto = FD->getType()->getAs<FunctionProtoType>();
    return Proto && !isUnresolvedExceptionSpec(Proto->getExceptionSpecType()) &&
           !Proto->isNothrow();
  }
  if (FD->getBuiltinID())
    return false;
  return typeMayThrow(FD->getType());
}

} // namespace

bool mayThrow(const Stmt *S) {
  if (!S)
    return false;
  if (isa<CXXThrowExpr>(S))
    return true;
  if (const auto *Call = dyn_cast<CallExpr>(S)) {
    if (const FunctionDecl *FD = Call->getDirectCallee())
      return calleeMayThrow(FD);
    // Through a pointer to a function or member function.
    QualType T = Call->getCallee()->IgnoreParens()->getType();
    if (const auto *Pointer = T->getAs<PointerType>())
      T = Pointer->getPointeeType();
    else if (const auto *Member = T->getAs<MemberPointerType>())
      T = Member->getPointeeType();
    return typeMayThrow(T);
  }
  if (const auto *Construct = dyn_cast<CXXConstructExpr>(S))
    return calleeMayThrow(Construct->getConstructor());
  if (const auto *New = dyn_cast<CXXNewExpr>(S)) {
    const FunctionDecl *Allocate = New->getOperatorNew();
    return !Allocate || calleeMayThrow(Allocate);
  }
  if (const auto *Cast = dyn_cast<CXXDynamicCastExpr>(S))
    return Cast->getTypeAsWritten()->isReferenceType();
  return false;
}

} // namespace clang::tidy::metaguard
