//===--- ModelCalls.cpp - metaguard-tidy -----------------------*- C++ -*-===//

#include "utils/domain/ModelCalls.h"
#include "utils/analysis/NameList.h"
#include "utils/domain/ModuleExprs.h"

namespace clang::tidy::metaguard {

const Expr *forwardedModel(const Expr *Call) {
  if (const auto *Member = dyn_cast<CXXMemberCallExpr>(Call)) {
    const CXXMethodDecl *Method = Member->getMethodDecl();
    return Method && isNamed(Method, "forward") &&
                   isModuleClass(Method->getParent())
               ? Member->getImplicitObjectArgument()
               : nullptr;
  }
  const auto *Op = dyn_cast<CXXOperatorCallExpr>(Call);
  if (!Op || Op->getOperator() != OO_Call || Op->getNumArgs() < 1 ||
      !isModuleOrHolderType(Op->getArg(0)->getType()))
    return nullptr;
  return Op->getArg(0);
}

bool passesDevice(const CXXMemberCallExpr *Call) {
  const FunctionDecl *Method = Call->getDirectCallee();
  if (!Method)
    return false;
  for (unsigned I = 0; I < Call->getNumArgs(); ++I) {
    if (isa<CXXDefaultArgExpr>(Call->getArg(I)))
      continue;
    if (I < Method->getNumParams() &&
        isDeviceType(Method->getParamDecl(I)->getType()))
      return true;
  }
  return false;
}

const Expr *movedModel(const CXXMemberCallExpr *Call) {
  const CXXMethodDecl *Method = Call->getMethodDecl();
  if (!Method || !isNamed(Method, "to") ||
      !isModuleClass(Method->getParent()) || !passesDevice(Call))
    return nullptr;
  return Call->getImplicitObjectArgument();
}

} // namespace clang::tidy::metaguard
