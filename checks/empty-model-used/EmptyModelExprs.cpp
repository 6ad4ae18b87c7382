//===--- EmptyModelExprs.cpp - metaguard-tidy ------------------*- C++ -*-===//

#include "EmptyModelExprs.h"
#include "utils/analysis/FunctionBodies.h"
#include "utils/analysis/NameList.h"
#include "utils/domain/LibraryCode.h"
#include "utils/domain/MemberModels.h"
#include "utils/domain/ModelCalls.h"
#include "utils/domain/ModelProducers.h"
#include "utils/domain/OptimizerParameters.h"
#include "utils/domain/TensorReads.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/ExprCXX.h"
#include "llvm/ADT/STLExtras.h"

namespace clang::tidy::metaguard::emptymodel {

/// A library function that builds a model with the ambient device and
/// returns it: metaguard::from_config, std::make_shared / make_unique /
/// allocate_shared of a module.
bool isModelBuilder(const FunctionDecl *FD) {
  if (!FD->getIdentifier() || !returnsModel(FD) ||
      FD->getReturnType()->isReferenceType())
    return false;
  llvm::StringRef Name = FD->getName();
  if (FD->isInStdNamespace())
    return Name == "make_shared" || Name == "make_unique" ||
           Name == "allocate_shared";
  return qualifiedNameOf(FD) == "metaguard::from_config";
}

/// `Encoder e{nullptr}`: a holder that holds nothing yet.
bool isEmptyHolder(const CXXConstructExpr *Construct) {
  return Construct->getNumArgs() == 1 &&
         Construct->getArg(0)->getType()->isNullPtrType();
}

/// Whether E denotes a model: a module, a holder, a smart pointer or a
/// pointer to one (a path or a tensor that moduleRefOf also names is not).
bool isModelExpr(const Expr *E) {
  QualType T = E->getType().getNonReferenceType();
  if (T->isPointerType())
    T = T->getPointeeType();
  return isModelValueType(T);
}

/// Whether E denotes a model or an object of the user's that keeps some
/// (a class with member models).
bool keepsModels(const Expr *E) {
  if (isModelExpr(E))
    return true;
  QualType T = E->getType().getNonReferenceType();
  if (T->isPointerType())
    T = T->getPointeeType();
  return hasMemberModels(T->getAsCXXRecordDecl());
}

/// Whether a parameter of this type lets the callee change the model it is
/// given: anything but a reference or pointer to const.
bool mayChangeArgument(QualType T) {
  if (T->isReferenceType() || T->isPointerType())
    return !T->getPointeeType().isConstQualified();
  return true; // A holder or shared_ptr copy shares the module.
}

/// Whether S is `this` (written or implicit), through parentheses and casts.
bool isThis(const Expr *E) {
  return isa<CXXThisExpr>(E->IgnoreParenImpCasts());
}

/// Ref with Field appended; the object being `this` (no Object), Field
/// itself.
ModuleRef memberOf(const std::optional<ModuleRef> &Object,
                   const FieldDecl *Field) {
  ModuleRef Ref;
  if (!Object) {
    Ref.Root = Field;
    return Ref;
  }
  Ref = *Object;
  Ref.Path.push_back(Field);
  return Ref;
}

} // namespace clang::tidy::metaguard::emptymodel
