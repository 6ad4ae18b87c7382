//===--- MemberModels.h - metaguard-tidy -----------------------*- C++ -*-===//
//
// Models kept by an object across its methods: a class whose method
// dispatches `model_` (a data member) leaves it dispatched for every method
// called later on the same object. Which methods those are, and which
// models are members.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_DOMAIN_MEMBERMODELS_H
#define METAGUARD_CHECKS_UTILS_DOMAIN_MEMBERMODELS_H

#include "utils/domain/ModuleExprs.h"

#include "clang/AST/DeclCXX.h"
#include "llvm/ADT/SmallVector.h"

namespace clang::tidy::metaguard {

/// Whether Ref is (inside) a data member of the object Method runs on: a
/// model the object keeps between calls.
bool isMemberModel(const ModuleRef &Ref, const CXXMethodDecl *Method);

/// Whether objects of RD keep models: a data member (of RD itself) that is
/// a model (ModuleExprs' isModelValueType) or a standard container of them.
bool hasMemberModels(const CXXRecordDecl *RD);

/// The data member of RD with field index Index (FieldDecl::getFieldIndex,
/// the same in every translation unit), or nullptr.
const FieldDecl *fieldAt(const CXXRecordDecl *RD, unsigned Index);

/// The methods of Method's class that may run on the same object after
/// Method: the other non-static methods whose definitions this translation
/// unit has outside system headers, except constructors and destructors
/// (they run first and last), and templates (checked in their
/// instantiations only). At most MaxLaterMethods, in declaration order.
llvm::SmallVector<const CXXMethodDecl *, 8>
laterMethods(const CXXMethodDecl *Method);

/// Bounds the methods looked at per dispatching method: the work is one
/// event scan of each.
constexpr unsigned MaxLaterMethods = 64;

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_DOMAIN_MEMBERMODELS_H
