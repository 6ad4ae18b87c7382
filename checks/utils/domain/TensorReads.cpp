//===--- TensorReads.cpp - metaguard-tidy ----------------------*- C++ -*-===//

#include "utils/domain/TensorReads.h"
#include "utils/analysis/NameList.h"
#include "utils/domain/ModelCalls.h"
#include "utils/domain/ModuleExprs.h"

#include "clang/AST/ExprCXX.h"
#include "llvm/ADT/STLExtras.h"

namespace clang::tidy::metaguard {

namespace {

/// Tensor methods that read values or storage.
constexpr llvm::StringLiteral DataReadingMethods[] = {
    "item", "data_ptr", "const_data_ptr", "mutable_data_ptr", "accessor",
    "cpu",  "cuda"};

/// How many out-of-place operations computedFrom looks through.
constexpr unsigned MaxOperations = 16;

bool isTensorMethod(const CXXMethodDecl *Method) {
  return Method && Method->getIdentifier() &&
         isTensorClass(Method->getParent());
}

} // namespace

std::optional<TensorRead> tensorRead(const Expr *Call) {
  if (const auto *Member = dyn_cast<CXXMemberCallExpr>(Call)) {
    const CXXMethodDecl *Method = Member->getMethodDecl();
    if (!isTensorMethod(Method))
      return std::nullopt;
    llvm::StringRef Name = Method->getName();
    if (llvm::is_contained(DataReadingMethods, Name) ||
        (Name == "to" && passesDevice(Member)))
      return TensorRead{Member->getImplicitObjectArgument(), Name.str(), false};
    if (Name == "copy_" && Member->getNumArgs() > 0)
      return TensorRead{Member->getArg(0), Name.str(), false};
    return std::nullopt;
  }
  const auto *Op = dyn_cast<CXXOperatorCallExpr>(Call);
  if (!Op || Op->getOperator() != OO_LessLess || Op->getNumArgs() != 2 ||
      isTensorType(Op->getArg(0)->getType()) ||
      !isTensorType(Op->getArg(1)->getType()))
    return std::nullopt;
  return TensorRead{Op->getArg(1), "<<", true};
}

const Expr *computedFrom(const Expr *E) {
  for (unsigned Steps = 0; E && Steps < MaxOperations; ++Steps) {
    const auto *Member = dyn_cast<CXXMemberCallExpr>(ignoreObjectPlumbing(E));
    if (!Member || !isTensorMethod(Member->getMethodDecl()) ||
        !isTensorType(Member->getType()))
      return E;
    E = Member->getImplicitObjectArgument();
  }
  return E;
}

} // namespace clang::tidy::metaguard
