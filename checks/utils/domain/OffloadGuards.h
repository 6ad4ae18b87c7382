//===--- OffloadGuards.h - metaguard-tidy ----------------------*- C++ -*-===//
//
// Where code has checked that a model has no offloaded parameters: inside
// `if (!has_offloaded_parameters(m))`, or after
// `if (has_offloaded_parameters(m)) return;`. A move or write there cannot
// reach an offloaded parameter.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_DOMAIN_OFFLOADGUARDS_H
#define METAGUARD_CHECKS_UTILS_DOMAIN_OFFLOADGUARDS_H

#include "utils/analysis/StmtParents.h"
#include "utils/domain/ModuleExprs.h"

#include "clang/AST/Stmt.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

namespace clang::tidy::metaguard {

/// Finds `has_offloaded_parameters` guards around statements, lexically, in
/// the function that contains them. Keeps the early exits of each block it
/// has looked at for the translation unit.
class NoOffloadGuards {
public:
  /// Whether S (a statement of F, indexed in Parents) only runs when the
  /// model of Ref, or a module containing it, has no offloaded parameters.
  bool guarded(const Stmt *S, const ModuleRef &Ref, const FunctionDecl *F,
               StmtParents &Parents);
  void clear() { EarlyExits.clear(); }

private:
  /// Per block: its early exits `if (...) return;`.
  llvm::DenseMap<const CompoundStmt *, llvm::SmallVector<const IfStmt *, 1>>
      EarlyExits;
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_DOMAIN_OFFLOADGUARDS_H
