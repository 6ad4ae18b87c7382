//===--- StoredCallables.h - metaguard-tidy --------------------*- C++ -*-===//
//
// The functions a std::function that lives longer than one call may hold: a
// std::function data member, or a table of them (a std::map /
// std::unordered_map of std::function values, as factory registries are
// written). Whatever the translation unit stores into one — an assignment,
// a constructor's member initialiser, a default member initialiser, an
// element assigned, emplaced or inserted, the table's initialiser — is a
// function a call through it may run. A call through one runs any of them,
// as a virtual call runs any override.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_STOREDCALLABLES_H
#define METAGUARD_CHECKS_UTILS_STOREDCALLABLES_H

#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"
#include "clang/AST/Expr.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallVector.h"

namespace clang::tidy::metaguard {

class StoredCallables {
public:
  /// The functions (lambda call operators included) that a call through a
  /// std::function member or an element of a table of them may run, when
  /// Call is one (`loader_(dir)`, `factories.at(name)(dir)`,
  /// `factories[name](dir)`); empty
  /// otherwise. The translation unit is indexed on first use, outside system
  /// headers.
  llvm::ArrayRef<const FunctionDecl *> targets(const Expr *Call,
                                               ASTContext &Context);

  void clear() {
    Indexed = false;
    Stored.clear();
  }

private:
  void index(ASTContext &Context);

  bool Indexed = false;
  /// By member or table variable: the functions stored into it.
  llvm::DenseMap<const ValueDecl *, llvm::SmallSetVector<const FunctionDecl *, 4>>
      Stored;
};

/// Whether T is std::function (or a reference to one).
bool isStdFunctionType(QualType T);

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_STOREDCALLABLES_H
