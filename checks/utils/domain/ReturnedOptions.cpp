//===--- ReturnedOptions.cpp - metaguard-tidy ------------------*- C++ -*-===//

#include "utils/domain/ReturnedOptions.h"
#include "utils/analysis/ExprPlumbing.h"
#include "utils/analysis/FunctionBodies.h"
#include "utils/domain/DeviceExpr.h"
#include "utils/domain/ExplicitOptions.h"

#include "clang/AST/ExprCXX.h"
#include "clang/Basic/SourceManager.h"

#include <optional>

namespace clang::tidy::metaguard {

namespace {

/// Whether T (references and cv-qualifiers ignored) is a class named
/// LoadOptions.
bool isLoadOptions(QualType T) {
  const CXXRecordDecl *RD = T.getNonReferenceType()->getAsCXXRecordDecl();
  return RD && RD->getIdentifier() && RD->getName() == "LoadOptions";
}

const Expr *strip(const Expr *E) {
  return ignoreExprPlumbing(E, ExprPlumbing());
}

/// Whether the subtree of E names the "disk" placement: a "disk" string or
/// Placement::disk().
bool mentionsDisk(const Stmt *S, unsigned Depth) {
  if (!S || Depth > 32)
    return false;
  if (const auto *Literal = dyn_cast<StringLiteral>(S))
    return Literal->getString() == "disk";
  if (const auto *Call = dyn_cast<CallExpr>(S))
    if (const FunctionDecl *Callee = Call->getDirectCallee();
        Callee && Callee->getIdentifier() && Callee->getName() == "disk")
      return true;
  for (const Stmt *Child : S->children())
    if (mentionsDisk(Child, Depth + 1))
      return true;
  return false;
}

/// The map kind of a helper call's result, if it is a helper's.
std::optional<DeviceMapKind> fromHelperCall(const Expr *E,
                                            SummaryTable &Table) {
  const auto *Call = dyn_cast_or_null<CallExpr>(strip(E));
  if (!Call || !Call->getDirectCallee() ||
      !isLoadOptions(Call->getDirectCallee()->getReturnType()))
    return std::nullopt;
  const FunctionSummary *S =
      Table.lookup<OptionsFacts>(Call->getDirectCallee());
  if (!S)
    return DeviceMapKind::Unknown; // Not followed: its result is not visible.
  return S->get<OptionsFacts>().ReturnedDeviceMap;
}

} // namespace

DeviceMapKind classifyDeviceMapValue(const Expr *Value) {
  if (!Value)
    return DeviceMapKind::Unknown;
  if (isInMemoryDeviceMap(Value))
    return DeviceMapKind::SingleDevice;
  if (mentionsDisk(Value, 0))
    return DeviceMapKind::Offloading;
  return DeviceMapKind::Unknown;
}

bool ReturnedOptionsFacet::follows(const FunctionDecl *FD) const {
  return !FD->isDependentContext() && isLoadOptions(FD->getReturnType()) &&
         !FD->getASTContext().getSourceManager().isInSystemHeader(
             FD->getLocation());
}

void ReturnedOptionsFacet::summarise(const FunctionDecl *F,
                                     FunctionSummary &Out,
                                     SummaryTable &Table) {
  ASTContext &Context = Table.context();
  std::optional<DeviceMapKind> Result;
  auto Merge = [&](DeviceMapKind K) {
    Result = Result && *Result != K ? DeviceMapKind::Unknown : K;
  };
  forEachEvaluatedStmt(F, [&](const Stmt *S) {
    const auto *Ret = dyn_cast<ReturnStmt>(S);
    if (!Ret)
      return;
    const Expr *Value = Ret->getRetValue();
    if (std::optional<DeviceMapKind> K = fromHelperCall(Value, Table)) {
      Merge(*K);
      return;
    }
    const Expr *E = strip(Value);
    const auto *Ref = dyn_cast_or_null<DeclRefExpr>(E);
    const auto *Var = Ref ? dyn_cast<VarDecl>(Ref->getDecl()) : nullptr;
    if (!isa_and_nonnull<InitListExpr>(E) &&
        !(Var && Var->hasLocalStorage() && !isa<ParmVarDecl>(Var))) {
      Merge(DeviceMapKind::Unknown); // A parameter, a member, a call...
      return;
    }
    // `return {.device_map = ...};` or `return options;`: the member as the
    // loader-call logic sees it, with the return as the use.
    const Expr *Found = findExplicitOptionMemberOf(
        Value, Ret, {DeviceMapMember}, F, Context, Cfgs);
    if (Found) {
      Merge(
          classifyDeviceMapValue(explicitOptionValue(Found, F, Context, Cfgs)));
      return;
    }
    if (Var && Var->getInit())
      if (std::optional<DeviceMapKind> K =
              fromHelperCall(Var->getInit(), Table)) {
        Merge(*K);
        return;
      }
    Merge(DeviceMapKind::None);
  });
  Out.edit<OptionsFacts>().ReturnedDeviceMap =
      Result ? *Result : DeviceMapKind::None;
}

DeviceMapKind deviceMapFromHelpers(const Expr *LoaderCall,
                                   SummaryTable &Table) {
  const auto *Call = dyn_cast<CallExpr>(LoaderCall);
  if (!Call || !Table.hasFacet<OptionsFacts>())
    return DeviceMapKind::None;
  for (const Expr *Arg : Call->arguments()) {
    if (!Arg || isa<CXXDefaultArgExpr>(Arg))
      continue;
    if (std::optional<DeviceMapKind> K = fromHelperCall(Arg, Table))
      return *K;
    const auto *Ref = dyn_cast_or_null<DeclRefExpr>(strip(Arg));
    const auto *Var = Ref ? dyn_cast<VarDecl>(Ref->getDecl()) : nullptr;
    if (Var && Var->hasLocalStorage() && !isa<ParmVarDecl>(Var) &&
        Var->getInit())
      if (std::optional<DeviceMapKind> K =
              fromHelperCall(Var->getInit(), Table))
        return *K;
  }
  return DeviceMapKind::None;
}

} // namespace clang::tidy::metaguard
