//===--- CallableStores.h - metaguard-tidy ---------------------*- C++ -*-===//
//
// What a call through a stored callable may run: the functions the
// translation unit stores into the variable, member or table the callee is
// read from. The slots are std::function variables and data members, tables
// of them (a std::map / std::unordered_map of std::function values, as
// factory registries are written), and, for the one-target question,
// function pointer variables. A store is an initialiser (of the variable,
// a constructor's member initialiser, a default member initialiser, a
// table's braced list), an assignment, or an element assigned, emplaced or
// inserted. A call through a slot runs any function stored there, as a
// virtual call runs any override; a slot that keeps its initialiser (a
// const variable, a local never changed) holds exactly that one.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_ANALYSIS_CALLABLESTORES_H
#define METAGUARD_CHECKS_UTILS_ANALYSIS_CALLABLESTORES_H

#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"
#include "clang/AST/Expr.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallVector.h"

namespace clang::tidy::metaguard {

/// Whether T is std::function (or a reference to one).
bool isStdFunctionType(QualType T);

/// The slot a callable expression reads: a std::function or function
/// pointer variable (not a parameter), a std::function member, or the table
/// whose element it is (`t[k]`, `t.at(k)`, `t.find(k)->second`,
/// `it->second` / `(*it).second` for a local iterator `it = t.find(k)`, the
/// value bound by `for (auto &[name, make] : t)` or `entry.second` in
/// `for (auto &entry : t)`). A table reached through a helper that returns
/// a reference to it (`registry().at(k)`), or the static local such a
/// helper returns, is keyed by the helper; a table parameter and an
/// iterator data member (`it_->second`) are slots of their own, holding
/// what the tables behind them hold (CallableStores::sourcesOf). nullptr
/// otherwise.
const ValueDecl *callableSlotOf(const Expr *E);

/// The slot a call through a std::function reads (`fn(x)`, `t.at(k)(x)`, as
/// callableSlotOf decides), when Call is such a call; nullptr otherwise.
const ValueDecl *callableSlotOfCall(const Expr *Call);

/// The index of the stores of one translation unit.
class CallableStores {
public:
  using StoreMap =
      llvm::DenseMap<const ValueDecl *,
                     llvm::SmallSetVector<const FunctionDecl *, 4>>;
  struct Pending;

  explicit CallableStores(ASTContext &Context) : Context(Context) {}

  /// The functions (lambda call operators included) that E, a std::function
  /// read from a slot (`loader_`, `factories.at(name)`, a local), may hold:
  /// every one stored into the slot. Empty when E reads none. The
  /// translation unit is indexed on first use, outside system headers.
  llvm::ArrayRef<const FunctionDecl *> targets(const Expr *E);

  /// The functions a call through a std::function slot may run, when Call
  /// is one (`loader_(dir)`, `factories.at(name)(dir)`); empty otherwise.
  llvm::ArrayRef<const FunctionDecl *> callTargets(const Expr *Call);

  /// The one function E holds when its slot is a variable that keeps its
  /// initialiser (const, or a local never assigned or changed) and the
  /// initialiser is a function, its address, a lambda or a std::function
  /// built from one: its only store, read from the declaration itself (no
  /// index needed). nullptr otherwise.
  static const FunctionDecl *soleTarget(const Expr *E);

  /// Calls Fn with every slot of the index and the functions stored into it
  /// (what another translation unit's calls through the slot may run).
  void
  forEachStore(llvm::function_ref<void(const ValueDecl *,
                                       llvm::ArrayRef<const FunctionDecl *>)>
                   Fn);

  /// The tables whose stores Slot holds: for a table parameter, the tables
  /// every call site passes; for an iterator member, the tables it is set
  /// from; Slot itself for other slots. What other translation units'
  /// stores are looked up by.
  llvm::SmallVector<const ValueDecl *, 2> sourcesOf(const ValueDecl *Slot);

private:
  void index();
  /// Stores given through a parameter: what its call sites pass.
  void resolveParameterStores(Pending &Work);
  /// Table parameters: what the tables their call sites pass hold, when
  /// every call site passes a known one.
  void resolveTableParameters(Pending &Work);
  /// Iterator members: what the tables they are set from hold.
  void resolveIteratorMembers(Pending &Work);
  /// Adds what From holds to To.
  void addStores(const ValueDecl *To, const ValueDecl *From);

  ASTContext &Context;
  bool Indexed = false;
  /// By slot: the functions stored into it.
  StoreMap Stored;
  /// By table parameter and iterator member: the tables behind it.
  llvm::DenseMap<const ValueDecl *, llvm::SmallVector<const ValueDecl *, 2>>
      Sources;
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_ANALYSIS_CALLABLESTORES_H
