//===--- ExprPlumbing.h - metaguard-tidy -----------------------*- C++ -*-===//
//
// Looking through the nodes Clang wraps around a value (parentheses,
// implicit casts, temporaries, copies) to the expression that was written.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_ANALYSIS_EXPRPLUMBING_H
#define METAGUARD_CHECKS_UTILS_ANALYSIS_EXPRPLUMBING_H

#include "clang/AST/Expr.h"

namespace clang::tidy::metaguard {

/// What ignoreExprPlumbing looks through besides what it always skips.
struct ExprPlumbing {
  enum class FunctionalCasts {
    /// Stop at `T(x)` / `T{x}`.
    Keep,
    /// Look through functional casts that do not convert (CK_NoOp).
    NoOpOnly,
    /// Look through every functional cast.
    All,
  };
  enum class CopyMoves {
    /// Stop at copy and move constructions.
    Keep,
    /// Look through a copy or move construction with exactly one argument.
    OneArgument,
    /// Also when a copy or move constructor gets further (defaulted)
    /// arguments.
    AnyArguments,
  };

  FunctionalCasts Casts = FunctionalCasts::All;
  CopyMoves Copies = CopyMoves::OneArgument;
  /// Look through a std::initializer_list (CXXStdInitializerListExpr) to its
  /// array, and through a one-argument construction from one.
  bool InitializerLists = false;
  /// Look through `&x`.
  bool AddressOf = false;
};

/// Repeatedly skips parentheses, implicit casts, full-expressions,
/// temporaries being materialised or bound, and what What enables, until
/// none applies. nullptr stays nullptr.
const Expr *ignoreExprPlumbing(const Expr *E, const ExprPlumbing &What);

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_ANALYSIS_EXPRPLUMBING_H
