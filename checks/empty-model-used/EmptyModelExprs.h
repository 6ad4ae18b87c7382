//===--- EmptyModelExprs.h - metaguard-tidy --------------------*- C++ -*-===//
//
// What metaguard-empty-model-used counts as a model, a builder of one and a
// change to one, for the collector of a function's events.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_EMPTY_MODEL_USED_EMPTYMODELEXPRS_H
#define METAGUARD_CHECKS_EMPTY_MODEL_USED_EMPTYMODELEXPRS_H

#include "utils/domain/ModuleExprs.h"

#include "clang/AST/DeclCXX.h"
#include "clang/AST/ExprCXX.h"

#include <optional>

namespace clang::tidy::metaguard::emptymodel {

/// A library function that builds a model with the ambient device and
/// returns it: metaguard::from_config, std::make_shared / make_unique /
/// allocate_shared of a module.
bool isModelBuilder(const FunctionDecl *FD);

/// `Encoder e{nullptr}`: a holder that holds nothing yet.
bool isEmptyHolder(const CXXConstructExpr *Construct);

/// Whether E denotes a model: a module, a holder, a smart pointer or a
/// pointer to one (a path or a tensor that moduleRefOf also names is not).
bool isModelExpr(const Expr *E);

/// Whether E denotes a model or an object of the user's that keeps some
/// (a class with member models).
bool keepsModels(const Expr *E);

/// Whether a parameter of this type lets the callee change the model it is
/// given: anything but a reference or pointer to const.
bool mayChangeArgument(QualType T);

/// Whether S is `this` (written or implicit), through parentheses and casts.
bool isThis(const Expr *E);

/// Ref with Field appended; the object being `this` (no Object), Field
/// itself.
ModuleRef memberOf(const std::optional<ModuleRef> &Object,
                   const FieldDecl *Field);

} // namespace clang::tidy::metaguard::emptymodel

#endif // METAGUARD_CHECKS_EMPTY_MODEL_USED_EMPTYMODELEXPRS_H
