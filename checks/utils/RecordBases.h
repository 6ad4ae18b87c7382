//===--- RecordBases.h - metaguard-tidy ------------------------*- C++ -*-===//
//
// Whether a class, or one of its (transitive) bases, satisfies a predicate.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_RECORDBASES_H
#define METAGUARD_CHECKS_UTILS_RECORDBASES_H

#include "clang/AST/DeclCXX.h"

namespace clang::tidy::metaguard {

/// Whether RD is, or derives from, a class for which P holds. Bases are
/// followed through their definitions, at most 16 levels deep.
template <class Pred>
bool recordOrBase(const CXXRecordDecl *RD, Pred P, unsigned Depth = 0) {
  if (!RD || Depth > 16)
    return false;
  if (P(RD))
    return true;
  const CXXRecordDecl *Def = RD->getDefinition();
  if (!Def)
    return false;
  for (const CXXBaseSpecifier &Base : Def->bases())
    if (recordOrBase(Base.getType()->getAsCXXRecordDecl(), P, Depth + 1))
      return true;
  return false;
}

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_RECORDBASES_H
