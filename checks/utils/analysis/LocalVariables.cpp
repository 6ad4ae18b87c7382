//===--- LocalVariables.cpp - metaguard-tidy -------------------*- C++ -*-===//

#include "utils/analysis/LocalVariables.h"

#include "clang/AST/DeclCXX.h"
#include "clang/AST/ExprCXX.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

namespace clang::tidy::metaguard {

namespace {

/// Whether a use of a variable (the DeclRefExpr at Uses.back(), with its
/// ancestors before it) may change it other than by a plain assignment.
/// Assignments `var = value` are returned in Assigned.
bool mayModify(llvm::ArrayRef<const Stmt *> Uses, const Expr *&Assigned) {
  Assigned = nullptr;
  const Stmt *Child = Uses.back();
  for (size_t I = Uses.size() - 1; I-- > 0;) {
    const Stmt *Parent = Uses[I];
    if (isa<ParenExpr, MaterializeTemporaryExpr, ExprWithCleanups,
            CXXBindTemporaryExpr>(Parent)) {
      Child = Parent;
      continue;
    }
    if (const auto *Cast = dyn_cast<ImplicitCastExpr>(Parent)) {
      if (Cast->getCastKind() == CK_NoOp &&
          !Cast->getType().isConstQualified()) {
        Child = Parent;
        continue;
      }
      return false; // Reads the value, or only as const.
    }
    if (const auto *B = dyn_cast<BinaryOperator>(Parent)) {
      if (B->getOpcode() == BO_Assign && B->getLHS() == Child) {
        Assigned = B->getRHS();
        return false;
      }
      return B->isAssignmentOp() && B->getLHS() == Child;
    }
    if (const auto *U = dyn_cast<UnaryOperator>(Parent))
      return U->isIncrementDecrementOp() || U->getOpcode() == UO_AddrOf;
    if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(Parent)) {
      if (Op->getOperator() == OO_Equal && Op->getNumArgs() == 2 &&
          Op->getArg(0) == Child) {
        Assigned = Op->getArg(1);
        return false;
      }
      if (Op->getNumArgs() > 0 && Op->getArg(0) == Child)
        if (const auto *Method =
                dyn_cast_or_null<CXXMethodDecl>(Op->getDirectCallee()))
          return !Method->isConst();
    }
    if (const auto *Member = dyn_cast<MemberExpr>(Parent)) {
      // var.method(): only const methods leave it as it is.
      const auto *Method = dyn_cast<CXXMethodDecl>(Member->getMemberDecl());
      return !Method || !Method->isConst();
    }
    // Bound to a reference that may change it: a non-const reference
    // parameter or variable.
    QualType Bound;
    if (const auto *Call = dyn_cast<CallExpr>(Parent)) {
      const FunctionDecl *Callee = Call->getDirectCallee();
      if (!Callee)
        return true;
      unsigned Offset =
          isa<CXXOperatorCallExpr>(Call) && isa<CXXMethodDecl>(Callee) ? 1 : 0;
      for (unsigned A = 0; A < Call->getNumArgs(); ++A)
        if (Call->getArg(A) == Child && A >= Offset &&
            A - Offset < Callee->getNumParams())
          Bound = Callee->getParamDecl(A - Offset)->getType();
    } else if (const auto *Construct = dyn_cast<CXXConstructExpr>(Parent)) {
      const CXXConstructorDecl *Ctor = Construct->getConstructor();
      for (unsigned A = 0; A < Construct->getNumArgs(); ++A)
        if (Construct->getArg(A) == Child && A < Ctor->getNumParams())
          Bound = Ctor->getParamDecl(A)->getType();
    } else if (const auto *Decl = dyn_cast<DeclStmt>(Parent)) {
      for (const clang::Decl *D : Decl->decls())
        if (const auto *Var = dyn_cast<VarDecl>(D);
            Var && Var->getInit() == Child)
          Bound = Var->getType();
    } else if (isa<LambdaExpr>(Parent)) {
      return true; // Captured: the lambda may change it.
    } else {
      // `return var;` copies it; any other expression around it may not.
      return !isa<ReturnStmt>(Parent);
    }
    return !Bound.isNull() && Bound->isReferenceType() &&
           !Bound->getPointeeType().isConstQualified();
  }
  return false;
}

/// Finds every use of VD inside Root, with its ancestors.
void forEachUse(const Stmt *Root, const VarDecl *VD,
                llvm::SmallVectorImpl<const Stmt *> &Path,
                llvm::function_ref<bool(llvm::ArrayRef<const Stmt *>)> Fn,
                bool &Stop) {
  if (!Root || Stop)
    return;
  Path.push_back(Root);
  if (const auto *Ref = dyn_cast<DeclRefExpr>(Root);
      Ref && Ref->getDecl() == VD && !Fn(Path))
    Stop = true;
  if (const auto *Lambda = dyn_cast<LambdaExpr>(Root)) {
    // Captures refer to VD in the lambda's body; the capture list decides.
    for (const LambdaCapture &Capture : Lambda->captures())
      if (Capture.capturesVariable() && Capture.getCapturedVar() == VD &&
          Capture.getCaptureKind() == LCK_ByRef)
        Stop = true;
  } else {
    for (const Stmt *Child : Root->children())
      forEachUse(Child, VD, Path, Fn, Stop);
  }
  Path.pop_back();
}

} // namespace

/// forEachAssignment for a variable or a parameter of a function.
static bool forEachAssignmentIn(const VarDecl *VD,
                                llvm::function_ref<bool(const Expr *)> Fn) {
  const auto *F = dyn_cast_or_null<FunctionDecl>(VD->getDeclContext());
  if (!F || !F->getBody())
    return false;
  llvm::SmallVector<const Stmt *, 16> Path;
  bool Stop = false;
  forEachUse(
      F->getBody(), VD, Path,
      [&](llvm::ArrayRef<const Stmt *> Uses) {
        const Expr *Assigned = nullptr;
        if (mayModify(Uses, Assigned))
          return false;
        return !Assigned || Fn(Assigned);
      },
      Stop);
  // Stopped: a use that may change it, a capture by reference, or Fn.
  return !Stop;
}

bool forEachAssignment(const VarDecl *VD,
                       llvm::function_ref<bool(const Expr *)> Fn) {
  if (!VD || !VD->hasLocalStorage() || isa<ParmVarDecl>(VD) ||
      VD->getType()->isReferenceType())
    return false;
  return forEachAssignmentIn(VD, Fn);
}

bool keepsItsArgument(const ParmVarDecl *P) {
  if (!P)
    return false;
  QualType T = P->getType();
  if (T->isReferenceType())
    return T->getPointeeType().isConstQualified();
  if (T.isConstQualified())
    return true;
  return forEachAssignmentIn(P, [](const Expr *) { return false; });
}

bool keepsItsInitialiser(const VarDecl *VD) {
  if (!VD || !VD->getAnyInitializer())
    return false;
  QualType T = VD->getType();
  if (VD->isConstexpr() || T.isConstQualified())
    return true;
  return forEachAssignment(VD, [](const Expr *) { return false; });
}

/// Walks Root for the uses of Field on `this` (with their ancestors) and
/// for what else may change it; Stop when one may.
static void checkMemberUses(const Stmt *Root, const FieldDecl *Field,
                            llvm::SmallVectorImpl<const Stmt *> &Path,
                            bool &Stop) {
  if (!Root || Stop)
    return;
  Path.push_back(Root);
  if (const auto *Member = dyn_cast<MemberExpr>(Root);
      Member && Member->getMemberDecl() == Field &&
      isa<CXXThisExpr>(Member->getBase()->IgnoreParenImpCasts())) {
    const Expr *Assigned = nullptr;
    if (mayModify(Path, Assigned) || Assigned)
      Stop = true;
  } else if (const auto *Call = dyn_cast<CXXMemberCallExpr>(Root)) {
    const CXXMethodDecl *Method = Call->getMethodDecl();
    const Expr *Object = Call->getImplicitObjectArgument();
    if (Object && isa<CXXThisExpr>(Object->IgnoreParenImpCasts()) &&
        (!Method || !Method->isConst()))
      Stop = true;
  }
  if (const auto *Lambda = dyn_cast<LambdaExpr>(Root)) {
    if (llvm::any_of(Lambda->captures(),
                     [](const LambdaCapture &C) { return C.capturesThis(); }))
      Stop = true;
  } else {
    for (const Stmt *Child : Root->children())
      checkMemberUses(Child, Field, Path, Stop);
  }
  Path.pop_back();
}

bool constructorKeepsMember(const CXXConstructorDecl *Ctor,
                            const FieldDecl *Field) {
  const Stmt *Body = Ctor ? Ctor->getBody() : nullptr;
  if (!Body || !Field)
    return false;
  llvm::SmallVector<const Stmt *, 16> Path;
  bool Stop = false;
  checkMemberUses(Body, Field, Path, Stop);
  return !Stop;
}

const VarDecl *variableOfName(const ValueDecl *D) {
  if (const auto *Binding = dyn_cast_or_null<BindingDecl>(D))
    return dyn_cast_or_null<VarDecl>(Binding->getDecomposedDecl());
  return dyn_cast_or_null<VarDecl>(D);
}

} // namespace clang::tidy::metaguard
