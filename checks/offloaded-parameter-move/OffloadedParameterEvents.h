//===--- OffloadedParameterEvents.h - metaguard-tidy -----------*- C++ -*-===//
//
// What metaguard-offloaded-parameter-move sees in one function: the
// statements that dispatch a model, give it a new value, move it, write its
// parameters, remove its hooks or need them. The finder collects them, the
// reporter describes them; the flow questions asked about them (which
// dispatch reaches a statement) are here because they need nothing else.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_OFFLOADED_PARAMETER_MOVE_OFFLOADEDPARAMETEREVENTS_H
#define METAGUARD_CHECKS_OFFLOADED_PARAMETER_MOVE_OFFLOADEDPARAMETEREVENTS_H

#include "utils/analysis/CfgReachability.h"
#include "utils/domain/ModelFacts.h"
#include "utils/domain/ModuleExprs.h"
#include "utils/summaries/FunctionSummaries.h"

#include "clang/AST/Decl.h"
#include "clang/AST/Stmt.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>
#include <vector>

namespace clang::tidy::metaguard::offload {

/// How many factories returning factories' results the notes name (the
/// dispatch itself is followed at any depth).
constexpr unsigned MaxFactoryDepth = 4;

/// A statement that makes a model (or a submodule) dispatched.
struct Dispatch {
  const Stmt *S = nullptr;
  ModuleRef Ref;
  DispatchKind Source = DispatchKind::Call;
  std::string Function;
  /// Factory: the dispatch inside the factory (owned by the finder's memo).
  const Dispatch *Inner = nullptr;
  /// Factory in another translation unit: the steps its summary records.
  std::vector<DispatchStep> ExternalChain;
};

/// A statement about a model: a move, a hook removal, a use of hooks, or a
/// replacement of the model object.
struct ModelEvent {
  const Stmt *S = nullptr;
  ModuleRef Ref;
  std::string Function;
  /// The event happens inside a function called at S (a helper the model is
  /// passed to, a lambda that captures it): what the callee does there.
  std::optional<ArgumentEffects> Via;
};

/// How parameters are written: a tensor method or initialiser, an
/// assignment, a new registration, an optimizer's step(), a checkpoint
/// loaded into the model. The first three index the warning's %select.
enum class MutationKind { Call, Assign, Register, Optimizer, Load };

struct Mutation {
  const Stmt *S = nullptr;
  /// The module whose parameter is changed.
  ModuleRef Owner;
  MutationKind Kind = MutationKind::Call;
  std::string Function;
  std::optional<ArgumentEffects> Via;
  /// Optimizer: the optimizer variable, for the note at its construction.
  const VarDecl *Optimizer = nullptr;
  /// Every parameter of Owner is written, so a dispatched submodule of it
  /// counts (as for moves).
  bool WholeModel = false;
};

/// The events of one function, in the order its statements are evaluated.
struct Events {
  std::vector<Dispatch> Dispatches;
  std::vector<ModelEvent> Reassigns;
  /// DispatchFunctions calls with an in-memory map: nothing offloaded, no
  /// hooks, the model may move again.
  std::vector<ModelEvent> Undispatches;
  std::vector<ModelEvent> Moves;
  std::vector<Mutation> Mutations;
  std::vector<ModelEvent> Removals;
  std::vector<ModelEvent> Needs;
  /// Calls of helpers that remove the hooks of the model they are given and
  /// then use them.
  std::vector<ModelEvent> NeedsOfRemoved;

  /// The dispatch that reaches Target (on some path with no reassignment of
  /// the model in between) and applies to Ref. AncestorsToo: a dispatched
  /// submodule counts for Ref (moving a model moves its submodules).
  const Dispatch *reachingDispatch(const Stmt *Target, const ModuleRef &Ref,
                                   bool AncestorsToo,
                                   const CfgReachability &Cfg) const;
  /// Whether Removal strips hooks that Need uses (of the same module, of one
  /// containing it or of one inside it) and reaches Need on some path that
  /// gives them no new hooks: no dispatch of the stripped module or of a
  /// model containing it, no new object in the variable.
  bool removalReaches(const ModelEvent &Removal, const ModelEvent &Need,
                      const CfgReachability &Cfg) const;
  /// Whether the function can return with the model of D still dispatched
  /// (no new value or in-memory dispatch after D on some path to the exit).
  bool reachesExit(const Dispatch &D, const CfgReachability &Cfg) const;
  /// Whether S is reached from the function's entry with the model of Ref
  /// as it was there: no new value and no dispatch of it in between.
  /// RemovalsToo: nor a removal of its hooks (or of a module's containing
  /// it).
  bool reachedFromEntry(const Stmt *S, const ModuleRef &Ref,
                        const CfgReachability &Cfg,
                        bool RemovalsToo = false) const;
};

/// The steps of D down to its dispatching call, for the summary of the
/// factory that returns the model.
std::vector<DispatchStep> dispatchChain(const Dispatch &D,
                                        const SummaryTable &Table);

} // namespace clang::tidy::metaguard::offload

#endif // METAGUARD_CHECKS_OFFLOADED_PARAMETER_MOVE_OFFLOADEDPARAMETEREVENTS_H
