//===--- ThrowingExprs.h - metaguard-tidy ----------------------*- C++ -*-===//
//
// Where an exception may start: the expressions that may throw by
// themselves, judged by the types of what they call (a noexcept callee
// cannot throw, whatever its body does), not by their operands (those are
// expressions of their own).
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_ANALYSIS_THROWINGEXPRS_H
#define METAGUARD_CHECKS_UTILS_ANALYSIS_THROWINGEXPRS_H

#include "clang/AST/Stmt.h"

namespace clang::tidy::metaguard {

/// Whether evaluating S itself may throw: a call (of a function, a
/// constructor, an operator) whose callee is not noexcept by its type, a
/// throw-expression, a new-expression whose allocation may throw, or a
/// dynamic_cast to a reference. Destructors, builtins and calls of noexcept
/// functions cannot.
bool mayThrow(const Stmt *S);

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_ANALYSIS_THROWINGEXPRS_H
