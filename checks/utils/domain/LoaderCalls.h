//===--- LoaderCalls.h - metaguard-tidy ------------------------*- C++ -*-===//
//
// Recognises calls that load pretrained weights: functions named in the
// LoaderFunctions option, and functions annotated
// [[clang::annotate("metaguard::loads_weights")]] (METAGUARD_LOADS_WEIGHTS).
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_DOMAIN_LOADERCALLS_H
#define METAGUARD_CHECKS_UTILS_DOMAIN_LOADERCALLS_H

#include "utils/analysis/NameList.h"

#include "clang/AST/Expr.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace clang::tidy::metaguard {

/// The annotation that METAGUARD_LOADS_WEIGHTS expands to.
inline constexpr llvm::StringLiteral LoadsWeightsAnnotation =
    "metaguard::loads_weights";

/// Whether FD, one of its redeclarations, or the template it was
/// instantiated from carries the loads_weights annotation.
bool hasLoadsWeightsAnnotation(const FunctionDecl *FD);

/// The function that a call-like statement calls: the direct callee of a
/// CallExpr (including member and operator calls), or the constructor of a
/// CXXConstructExpr / CXXInheritedCtorInitExpr; for a call through a
/// function pointer or a std::function variable that is set once (const, or
/// a local never assigned again), the function it holds. nullptr otherwise
/// (other indirect calls, unresolved calls in templates).
const FunctionDecl *calledFunction(const Stmt *S);

/// The name of an unresolved (dependent) call's callee in a template, e.g.
/// "from_pretrained" for `M::from_pretrained(p)` or `from_pretrained<T>(p)`;
/// empty when S is not such a call.
llvm::StringRef unresolvedCalleeName(const Stmt *S);

/// Decides which calls load weights.
class LoaderMatcher {
public:
  LoaderMatcher() = default;
  /// Names is the value of the LoaderFunctions option.
  explicit LoaderMatcher(llvm::StringRef Names) : Names(Names) {}

  /// Whether calling FD loads weights (listed name or annotation).
  bool isLoader(const FunctionDecl *FD) const;

  /// If S is a loader call, the loader's unqualified name (for messages);
  /// std::nullopt otherwise. Unresolved calls in templates match by name.
  std::optional<std::string> loaderCallName(const Stmt *S) const;

  const NameList &names() const { return Names; }

private:
  NameList Names;
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_DOMAIN_LOADERCALLS_H
