//===--- LocalVariables.h - metaguard-tidy ---------------------*- C++ -*-===//
//
// What a function does to one of its local variables: every value it is
// assigned, and whether anything else may change it. Used to treat a local
// that only ever holds one kind of value (a device, a function) as that
// value.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_ANALYSIS_LOCALVARIABLES_H
#define METAGUARD_CHECKS_UTILS_ANALYSIS_LOCALVARIABLES_H

#include "clang/AST/Decl.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/Expr.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace clang::tidy::metaguard {

/// Calls Fn with the value of each plain assignment `VD = value` in the
/// function VD is local to. Returns false when VD is not a local variable
/// (or is a reference), when something other than a plain assignment may
/// change it (++, a compound assignment, a non-const method, binding to a
/// non-const reference, taking its address, a capture by reference), or
/// when Fn returns false. Its initialiser is not visited.
bool forEachAssignment(const VarDecl *VD,
                       llvm::function_ref<bool(const Expr *)> Fn);

/// Whether VD keeps the value of its initialiser for its whole life: a
/// const (or constexpr) variable, or a local never assigned or changed.
bool keepsItsInitialiser(const VarDecl *VD);

/// Whether the parameter P holds the argument of the call for the whole
/// call: a const parameter or a reference to const, or one the function
/// never assigns or changes (as keepsItsInitialiser).
bool keepsItsArgument(const ParmVarDecl *P);

/// Whether the body of the constructor Ctor leaves its data member Field
/// as its initialiser made it: no assignment or change of it (as
/// forEachAssignment), no lambda that captures `this`, and no non-const
/// method of the class called on `this` (which might change it).
bool constructorKeepsMember(const CXXConstructorDecl *Ctor,
                            const FieldDecl *Field);

/// The variable a name denotes: D itself when it is a variable, and for a
/// structured binding (`for (auto &[name, net] : models)`) the hidden
/// variable it decomposes (the element), which every binding of the
/// declaration names a part of. nullptr otherwise.
const VarDecl *variableOfName(const ValueDecl *D);

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_ANALYSIS_LOCALVARIABLES_H
