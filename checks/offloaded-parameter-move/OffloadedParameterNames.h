//===--- OffloadedParameterNames.h - metaguard-tidy ------------*- C++ -*-===//
//
// Small helpers that the finder's files share: how functions are named in
// messages, and which container methods put a model in.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_OFFLOADED_PARAMETER_MOVE_OFFLOADEDPARAMETERNAMES_H
#define METAGUARD_CHECKS_OFFLOADED_PARAMETER_MOVE_OFFLOADEDPARAMETERNAMES_H

#include "OffloadedParameterEvents.h"
#include "utils/analysis/NameList.h"

#include "clang/AST/DeclCXX.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace clang::tidy::metaguard::offload {

/// The callee's name for messages.
inline std::string calleeName(const FunctionDecl *FD) {
  return FD ? qualifiedNameOf(FD) : std::string("<call>");
}

/// How a called function is named in messages.
inline std::string helperName(const FunctionDecl *FD) {
  if (const auto *Method = dyn_cast<CXXMethodDecl>(FD))
    if (Method->getParent()->isLambda())
      return "lambda";
  return qualifiedNameOf(FD);
}

/// Methods of standard containers that put an element in.
inline constexpr llvm::StringLiteral ContainerInserters[] = {
    "push_back", "emplace_back", "push_front",       "emplace_front",
    "insert",    "emplace",      "insert_or_assign", "try_emplace"};

/// The first of Members whose dispatch applies to Ref.
inline const offload::Dispatch *
memberDispatch(llvm::ArrayRef<const offload::Dispatch *> Members,
               const ModuleRef &Ref, bool AncestorsToo) {
  for (const offload::Dispatch *D : Members)
    if (refCovers(D->Ref, Ref, AncestorsToo))
      return D;
  return nullptr;
}

} // namespace clang::tidy::metaguard::offload

#endif // METAGUARD_CHECKS_OFFLOADED_PARAMETER_MOVE_OFFLOADEDPARAMETERNAMES_H
