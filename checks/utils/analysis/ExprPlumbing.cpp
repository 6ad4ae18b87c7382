//===--- ExprPlumbing.cpp - metaguard-tidy ---------------------*- C++ -*-===//

#include "utils/analysis/ExprPlumbing.h"

#include "clang/AST/ExprCXX.h"

namespace clang::tidy::metaguard {

namespace {

bool isCopyOrMove(const CXXConstructExpr *C, ExprPlumbing::CopyMoves Copies) {
  switch (Copies) {
  case ExprPlumbing::CopyMoves::Keep:
    return false;
  case ExprPlumbing::CopyMoves::OneArgument:
    return C->getNumArgs() == 1 &&
           C->getConstructor()->isCopyOrMoveConstructor();
  case ExprPlumbing::CopyMoves::AnyArguments:
    return C->getNumArgs() >= 1 &&
           C->getConstructor()->isCopyOrMoveConstructor();
  }
  return false;
}

bool isFromInitializerList(const CXXConstructExpr *C) {
  return C->getNumArgs() == 1 &&
         isa<CXXStdInitializerListExpr>(C->getArg(0)->IgnoreImplicit());
}

/// The expression E wraps, or E itself when What says to stop at E.
const Expr *plumbingStep(const Expr *E, const ExprPlumbing &What) {
  // IgnoreParenImpCasts has already skipped full-expressions and
  // MaterializeTemporaryExpr.
  if (const auto *Bind = dyn_cast<CXXBindTemporaryExpr>(E))
    return Bind->getSubExpr();
  if (const auto *Cast = dyn_cast<CXXFunctionalCastExpr>(E)) {
    if (What.Casts == ExprPlumbing::FunctionalCasts::All ||
        (What.Casts == ExprPlumbing::FunctionalCasts::NoOpOnly &&
         Cast->getCastKind() == CK_NoOp))
      return Cast->getSubExpr();
    return E;
  }
  if (const auto *Construct = dyn_cast<CXXConstructExpr>(E)) {
    if (isCopyOrMove(Construct, What.Copies) ||
        (What.InitializerLists && isFromInitializerList(Construct)))
      return Construct->getArg(0);
    return E;
  }
  if (const auto *List = dyn_cast<CXXStdInitializerListExpr>(E))
    return What.InitializerLists ? List->getSubExpr() : E;
  if (const auto *Unary = dyn_cast<UnaryOperator>(E))
    return What.AddressOf && Unary->getOpcode() == UO_AddrOf
               ? Unary->getSubExpr()
               : E;
  return E;
}

} // namespace

const Expr *ignoreExprPlumbing(const Expr *E, const ExprPlumbing &What) {
  while (E) {
    E = E->IgnoreParenImpCasts();
    const Expr *Inner = plumbingStep(E, What);
    if (Inner == E)
      return E;
    E = Inner;
  }
  return E;
}

} // namespace clang::tidy::metaguard
