//===--- ModelProducers.cpp - metaguard-tidy -------------------*- C++ -*-===//

#include "utils/domain/ModelProducers.h"
#include "utils/analysis/NameList.h"
#include "utils/domain/ModuleExprs.h"

#include "clang/AST/DeclTemplate.h"
#include "clang/AST/ExprCXX.h"

namespace clang::tidy::metaguard {

bool returnsModel(const FunctionDecl *FD) {
  QualType T = FD->getReturnType();
  if (T.isNull() || T->isVoidType())
    return false;
  T = T.getNonReferenceType();
  if (T->isPointerType())
    T = T->getPointeeType();
  if (isModuleOrHolderType(T))
    return true;
  // std::shared_ptr<Impl>, std::unique_ptr<Impl>.
  if (const auto *Spec = dyn_cast_or_null<ClassTemplateSpecializationDecl>(
          T->getAsCXXRecordDecl()))
    if (Spec->getTemplateArgs().size() > 0 &&
        Spec->getTemplateArgs()[0].getKind() == TemplateArgument::Type)
      return isModuleOrHolderType(Spec->getTemplateArgs()[0].getAsType());
  return false;
}

const CallExpr *producingCall(const Expr *Init) {
  for (unsigned Steps = 0; Init && Steps < 8; ++Steps) {
    Init = ignoreObjectPlumbing(Init);
    const auto *Member = dyn_cast<CXXMemberCallExpr>(Init);
    if (!Member)
      return dyn_cast<CallExpr>(Init);
    if (Member->getNumArgs() != 0 ||
        !(isNamed(Member->getMethodDecl(), "ptr") ||
          isNamed(Member->getMethodDecl(), "get")))
      return Member;
    Init = Member->getImplicitObjectArgument();
  }
  return nullptr;
}

} // namespace clang::tidy::metaguard
