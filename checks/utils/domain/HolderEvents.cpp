//===--- HolderEvents.cpp - metaguard-tidy ---------------------*- C++ -*-===//

#include "utils/domain/HolderEvents.h"
#include "utils/analysis/ExprPlumbing.h"
#include "utils/analysis/NameList.h"

#include "clang/AST/DeclCXX.h"
#include "clang/AST/ExprCXX.h"

namespace clang::tidy::metaguard {

namespace {

/// The local variable (not a parameter) E names, or nullptr.
const VarDecl *localNamedBy(const Expr *E) {
  const auto *Ref =
      dyn_cast_or_null<DeclRefExpr>(E ? E->IgnoreParenImpCasts() : nullptr);
  const auto *Var = Ref ? dyn_cast<VarDecl>(Ref->getDecl()) : nullptr;
  return Var && Var->hasLocalStorage() && !isa<ParmVarDecl>(Var) ? Var
                                                                 : nullptr;
}

/// Whether E's type is the class Name (std::nullopt_t, std::in_place_t).
bool hasClassNamed(const Expr *E, llvm::StringRef Name) {
  const CXXRecordDecl *RD = E->getType()->getAsCXXRecordDecl();
  return RD && RD->getIdentifier() && RD->getName() == Name;
}

/// A member call's event on a holder of kind Kind.
std::optional<HolderEvent::Kind> memberEvent(const CXXMemberCallExpr *Call,
                                             HolderKind Kind,
                                             const Expr *&Value) {
  const CXXMethodDecl *Method = Call->getMethodDecl();
  if (!Method || !Method->getIdentifier())
    return std::nullopt;
  llvm::StringRef Name = Method->getName();
  const Expr *First =
      Call->getNumArgs() > 0 && !isa<CXXDefaultArgExpr>(Call->getArg(0))
          ? Call->getArg(0)
          : nullptr;
  if (Name == "emplace" || Name == "emplace_back" || Name == "emplace_front")
    return HolderEvent::Engages;
  if (Name == "push_back" || Name == "push_front") {
    Value = First;
    return HolderEvent::Engages;
  }
  // A container's newest object is the innermost; one taken out leaves the
  // others unknown, counted as none.
  if (Kind == HolderKind::Container &&
      (Name == "pop_back" || Name == "pop_front" || Name == "clear" ||
       Name == "erase"))
    return HolderEvent::Empties;
  if (Name == "reset" &&
      (Kind == HolderKind::Optional || Kind == HolderKind::UniquePtr)) {
    if (!First ||
        isEmptyHolderValue(First, Call->getImplicitObjectArgument()->getType()))
      return HolderEvent::Empties;
    Value = First;
    return HolderEvent::Engages;
  }
  return std::nullopt;
}

} // namespace

bool isStdContainer(const ClassTemplateSpecializationDecl *Spec) {
  return isStdNamed(Spec, "vector") || isStdNamed(Spec, "deque") ||
         isStdNamed(Spec, "list") || isStdNamed(Spec, "forward_list");
}

HolderKind holderKind(QualType T) {
  T = T.getNonReferenceType();
  if (T->isPointerType())
    return T->getPointeeType()->getAsCXXRecordDecl() ? HolderKind::RawPointer
                                                     : HolderKind::None;
  const auto *Spec = dyn_cast_or_null<ClassTemplateSpecializationDecl>(
      T->getAsCXXRecordDecl());
  if (!Spec)
    return HolderKind::None;
  if (isStdNamed(Spec, "optional"))
    return HolderKind::Optional;
  if (isStdNamed(Spec, "unique_ptr"))
    return HolderKind::UniquePtr;
  return isStdContainer(Spec) ? HolderKind::Container : HolderKind::None;
}

bool isEmptyHolderValue(const Expr *E, QualType HolderType) {
  if (!E)
    return true;
  const Expr *Bare = E->IgnoreParenImpCasts();
  if (Bare->getType()->isNullPtrType() || hasClassNamed(Bare, "nullopt_t"))
    return true;
  ExprPlumbing UpToConstruction;
  UpToConstruction.Copies = ExprPlumbing::CopyMoves::Keep;
  const Expr *Value = ignoreExprPlumbing(E, UpToConstruction);
  if (const auto *List = dyn_cast_or_null<InitListExpr>(Value))
    return List->getNumInits() == 0;
  // `containers = {}`: an empty std::initializer_list.
  if (const auto *Init = dyn_cast_or_null<CXXStdInitializerListExpr>(Value))
    if (const auto *List = dyn_cast_or_null<InitListExpr>(
            Init->getSubExpr()->IgnoreImplicit()))
      return List->getNumInits() == 0;
  // `= {}` or `= std::optional<T>()`: a holder of the same type built
  // empty. A value of the held type built without arguments (`= T{}`)
  // engages it.
  const auto *Construct = dyn_cast_or_null<CXXConstructExpr>(Value);
  if (!Construct || (Construct->getNumArgs() > 0 &&
                     !isa<CXXDefaultArgExpr>(Construct->getArg(0))))
    return false;
  const CXXRecordDecl *Built = Construct->getConstructor()->getParent();
  const CXXRecordDecl *Held =
      HolderType.getNonReferenceType()->getAsCXXRecordDecl();
  return Held && Built->getCanonicalDecl() == Held->getCanonicalDecl();
}

std::optional<HolderEvent> holderEvent(const Stmt *S) {
  if (const auto *Call = dyn_cast<CXXMemberCallExpr>(S)) {
    const VarDecl *Var = localNamedBy(Call->getImplicitObjectArgument());
    HolderKind Kind = Var ? holderKind(Var->getType()) : HolderKind::None;
    if (Kind == HolderKind::None || Kind == HolderKind::RawPointer)
      return std::nullopt;
    const Expr *Value = nullptr;
    if (std::optional<HolderEvent::Kind> What = memberEvent(Call, Kind, Value))
      return HolderEvent{*What, Var, Value};
    return std::nullopt;
  }
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(S)) {
    if (Op->getOperator() != OO_Equal || Op->getNumArgs() != 2)
      return std::nullopt;
    const VarDecl *Var = localNamedBy(Op->getArg(0));
    if (!Var || holderKind(Var->getType()) == HolderKind::None)
      return std::nullopt;
    if (isEmptyHolderValue(Op->getArg(1), Var->getType()))
      return HolderEvent{HolderEvent::Empties, Var, nullptr};
    return HolderEvent{HolderEvent::Engages, Var, Op->getArg(1)};
  }
  if (const auto *Delete = dyn_cast<CXXDeleteExpr>(S)) {
    const VarDecl *Var = localNamedBy(Delete->getArgument());
    if (Var && holderKind(Var->getType()) == HolderKind::RawPointer)
      return HolderEvent{HolderEvent::Empties, Var, nullptr};
    return std::nullopt;
  }
  // `p = new T(...)` for a raw pointer (another pointer value is not known
  // to own anything).
  if (const auto *Assign = dyn_cast<BinaryOperator>(S);
      Assign && Assign->getOpcode() == BO_Assign) {
    const VarDecl *Var = localNamedBy(Assign->getLHS());
    if (Var && holderKind(Var->getType()) == HolderKind::RawPointer &&
        isa<CXXNewExpr>(Assign->getRHS()->IgnoreParenImpCasts()))
      return HolderEvent{HolderEvent::Engages, Var, Assign->getRHS()};
  }
  return std::nullopt;
}

bool engagedByInit(const VarDecl *VD) {
  const Expr *Init = VD->getInit();
  if (!Init)
    return false;
  ExprPlumbing UpToConstruction;
  UpToConstruction.Copies = ExprPlumbing::CopyMoves::Keep;
  const Expr *E = ignoreExprPlumbing(Init, UpToConstruction);
  if (const auto *Construct = dyn_cast_or_null<CXXConstructExpr>(E);
      Construct && holderKind(Construct->getType()) != HolderKind::None) {
    if (Construct->getNumArgs() == 0 ||
        isa<CXXDefaultArgExpr>(Construct->getArg(0)))
      return false;
    return !isEmptyHolderValue(Construct->getArg(0), VD->getType());
  }
  return !isEmptyHolderValue(E, VD->getType()); // make_unique, new, a value.
}

} // namespace clang::tidy::metaguard
