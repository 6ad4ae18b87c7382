//===--- RecordBases.h - metaguard-tidy ------------------------*- C++ -*-===//
//
// Whether a class, or one of its (transitive) bases, satisfies a predicate.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_ANALYSIS_RECORDBASES_H
#define METAGUARD_CHECKS_UTILS_ANALYSIS_RECORDBASES_H

#include "clang/AST/DeclCXX.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"

namespace clang::tidy::metaguard {

/// Whether RD is, or derives from, a class for which P holds. Bases are
/// followed through their definitions, each class once (diamond lattices
/// share bases), at most 16 levels deep.
template <class Pred> bool recordOrBase(const CXXRecordDecl *RD, Pred P) {
  llvm::SmallPtrSet<const CXXRecordDecl *, 16> Visited;
  llvm::SmallVector<std::pair<const CXXRecordDecl *, unsigned>, 16> Work;
  Work.push_back({RD, 0});
  while (!Work.empty()) {
    auto [R, Depth] = Work.pop_back_val();
    if (!R || Depth > 16 || !Visited.insert(R->getCanonicalDecl()).second)
      continue;
    if (P(R))
      return true;
    const CXXRecordDecl *Def = R->getDefinition();
    if (!Def)
      continue;
    for (const CXXBaseSpecifier &Base : Def->bases())
      Work.push_back({Base.getType()->getAsCXXRecordDecl(), Depth + 1});
  }
  return false;
}

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_ANALYSIS_RECORDBASES_H
