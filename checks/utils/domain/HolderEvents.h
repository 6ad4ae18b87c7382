//===--- HolderEvents.h - metaguard-tidy -----------------------*- C++ -*-===//
//
// What a statement does to a local variable that holds an object for part
// of its own life: a std::optional, a std::unique_ptr, a standard container
// of objects, or a raw pointer that `delete` ends. A device guard or an RAII
// session held there lives from the statement that engages the holder to
// the one that empties it (or to the holder's own end). The guard scopes and
// the default device's analysis both read the holder's events here, so that
// they agree on every shape (`holder = {}` empties it, as in C++).
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_DOMAIN_HOLDEREVENTS_H
#define METAGUARD_CHECKS_UTILS_DOMAIN_HOLDEREVENTS_H

#include "clang/AST/DeclTemplate.h"
#include "clang/AST/Expr.h"

#include <optional>

namespace clang::tidy::metaguard {

enum class HolderKind {
  None,
  Optional,   ///< std::optional<T>
  UniquePtr,  ///< std::unique_ptr<T>
  Container,  ///< std::vector, std::deque, std::list, std::forward_list
  RawPointer, ///< T *, owning what `new` gave it until `delete`
};

/// The kind of holder a variable of type T is.
HolderKind holderKind(QualType T);

/// Whether Spec is one of the standard sequence containers above.
bool isStdContainer(const ClassTemplateSpecializationDecl *Spec);

/// What one statement does to a holder.
struct HolderEvent {
  enum Kind {
    /// Puts an object in: emplace(), emplace_back()/push_back() (and the
    /// front ones), reset(p) with a pointer, an assignment of a value,
    /// `p = new T` for a raw pointer.
    Engages,
    /// Lets it go: reset(), `= std::nullopt`, `= nullptr`, `= {}`, a value
    /// built empty (`= std::optional<T>()`), pop_back()/pop_front(),
    /// clear(), erase(), `delete p`.
    Empties,
  };
  Kind What;
  /// A local variable (not a parameter) of a holder type.
  const VarDecl *Holder;
  /// What an engaging statement puts in: the assigned value, reset()'s or
  /// push_back()'s argument; nullptr for an emplace (its arguments build
  /// the object inside the holder: the call itself stands for it).
  const Expr *Value = nullptr;
};

/// What S does to a local holder, or std::nullopt when S is no such event
/// (a read, another method, a statement on something else).
std::optional<HolderEvent> holderEvent(const Stmt *S);

/// Whether E (the value given to a holder, or nullptr for none) leaves it
/// empty: std::nullopt, nullptr, `{}`, or a value of the holder's own type
/// built without arguments. HolderType is the holder's type.
bool isEmptyHolderValue(const Expr *E, QualType HolderType);

/// Whether the holder's initialiser engages it (std::in_place, a value,
/// std::make_unique, new).
bool engagedByInit(const VarDecl *VD);

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_DOMAIN_HOLDEREVENTS_H
