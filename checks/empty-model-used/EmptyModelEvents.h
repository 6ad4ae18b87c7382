//===--- EmptyModelEvents.h - metaguard-tidy -------------------*- C++ -*-===//
//
// What metaguard-empty-model-used sees in one function: the statements that
// build a model (empty, or with the caller's device), give a model weights
// (or a new value), and use a model in a way that needs its weights. The
// finder collects them, the reporter describes them; the flow questions
// asked about them (is a model still empty at a use, how does the function
// leave it) are here because they need nothing else.
//
// Every flow question follows the paths into catch handlers too: a load in
// a try block whose handler falls through does not count on the handler's
// path.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_EMPTY_MODEL_USED_EMPTYMODELEVENTS_H
#define METAGUARD_CHECKS_EMPTY_MODEL_USED_EMPTYMODELEVENTS_H

#include "utils/analysis/CfgReachability.h"
#include "utils/domain/AmbientDevice.h"
#include "utils/domain/EmptyModelFacts.h"
#include "utils/domain/ModuleExprs.h"
#include "utils/domain/TensorWrites.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>
#include <string>
#include <vector>

namespace clang::tidy::metaguard::emptymodel {

/// How a model came to be built, as one statement shows it.
struct Building {
  /// Empty, CallersDevice (built with the device the function's caller
  /// makes ambient: a fact for the function's summary only), or
  /// Uninitialised (given memory but no values: a MemoryGivers call, or a
  /// call whose facts say it leaves the model so).
  BuiltModel Kind = BuiltModel::Empty;
  /// The construction, or the call that gives the model.
  const Stmt *At = nullptr;
  /// Empty because of the meta device ambient at At, in this function.
  std::optional<AmbientDevice::Origin> Ambient;
  /// Through a call (a factory, a constructor or method that leaves a
  /// member model, a scope function running a callable): its name.
  std::string Through;
  /// The member the call leaves built, when it is one ("model_").
  std::string Member;
  /// Through a call whose facts say it builds the model empty itself:
  /// where, and what made it empty there.
  std::optional<BuiltOrigin> Inner;
  /// Uninitialised only if the model was empty before At (to_empty leaves
  /// a model with weights as it is).
  bool IfEmptyBefore = false;
};

/// A model (or part of one) built at S.
struct Gen {
  const Stmt *S = nullptr;
  ModuleRef Ref;
  Building How;
};

/// What a kill gives the model.
enum class KillKind {
  Weights,
  /// A new object in the variable rather than weights for the one in it.
  NewValue,
  /// Values for the memory to_empty gave: nothing for a model that is
  /// still empty (initialising a meta tensor writes nothing).
  Initialises,
};

/// Something that gives the model of Ref weights at S, a new value, or
/// initial values.
struct Kill {
  const Stmt *S = nullptr;
  ModuleRef Ref;
  KillKind Kind = KillKind::Weights;
};

/// The states of a model a use concerns.
enum class UseOf {
  Any,           ///< Empty or uninitialised: it needs values.
  Empty,         ///< Only an empty one (a helper initialises it first).
  Uninitialised, ///< Only an uninitialised one.
};

/// What a use does; indexes the warning's %select.
enum class UseKind {
  Forward,
  Move,
  NeedsWeights,
  ReadParameter,
  PrintParameter,
  OptimizerStep,
  /// A call whose callee uses the model (a helper given it, a method whose
  /// object keeps it): Via says where.
  Call,
};

/// A statement that needs the weights of the model of Ref.
struct Use {
  const Stmt *S = nullptr;
  ModuleRef Ref;
  UseKind Kind = UseKind::Forward;
  /// The function called or the tensor method, for messages.
  std::string Function;
  /// Call: what the callee does, and where (innermost), for notes.
  std::optional<ModelUse> Via;
  /// OptimizerStep: the optimizer variable, for the note at it.
  const VarDecl *Optimizer = nullptr;
  UseOf Of = UseOf::Any;
};

/// A returned value and how it was built, when it is built here.
struct Returned {
  const ReturnStmt *S = nullptr;
  std::optional<Building> Built; ///< Built by the return's own expression.
  std::optional<ModuleRef> Ref;  ///< Else the local variable it returns.
};

/// The events of one function, in the order its statements are evaluated.
struct Events {
  std::vector<Gen> Gens;
  std::vector<Kill> Kills;
  std::vector<Use> Uses;
  std::vector<Returned> Returns;
  /// Throws and calls that never return: no path through them returns.
  std::vector<const Stmt *> Exits;

  bool buildsEmpty() const;
  /// The gen of an empty model that reaches U on a path with no weights for
  /// the part of the model U needs (and no new value) in between, or else
  /// the gen of an uninitialised one that reaches it with no values in
  /// between; nullptr when none does. An uninitialised model counts when a
  /// call's facts say so, or when an empty model reaches its to_empty
  /// (EntryMayBeEmpty: or the function's entry does, for a parameter or a
  /// member).
  const Gen *emptyAt(const Use &U, const CfgReachability &Cfg,
                     bool EntryMayBeEmpty = false) const;
  /// The gen of an empty model that reaches G (an uninitialised one given
  /// memory by a call here) with no weights in between.
  const Gen *emptyBefore(const Gen &G, const CfgReachability &Cfg) const;
  /// How the model of Ref (or a part of it) may be left when the function
  /// returns: the gen that reaches a return with no weights after it (an
  /// empty one first); nullptr when none does.
  const Gen *leftAtReturn(const ModuleRef &Ref,
                          const CfgReachability &Cfg) const;
  /// The gen whose model S reaches with no weights since, of the variable
  /// of Ref.
  const Gen *reachingGen(const Stmt *S, const ModuleRef &Ref,
                         const CfgReachability &Cfg) const;
  /// Whether every path that returns gives the model of Ref weights, given
  /// an empty one (NewValues: a new object in the variable counts, for a
  /// parameter passed by reference); to_empty and initialisation count.
  bool givesWeights(const ModuleRef &Ref, bool NewValues,
                    const CfgReachability &Cfg) const;
  /// Whether every path that returns gives the model of Ref values, given
  /// an uninitialised one.
  bool initialises(const ModuleRef &Ref, const CfgReachability &Cfg) const;
  /// The first use (in source order) of a model Concerns accepts that runs,
  /// on some path, before anything gives that model weights, when the
  /// function is given it empty (Of: Empty) or uninitialised.
  const Use *
  useBeforeWeights(llvm::function_ref<bool(const ModuleRef &)> Concerns,
                   UseOf Of, const CfgReachability &Cfg) const;

private:
  /// The kills that give Part weights (values too, for an uninitialised
  /// G) or replace it, and the other gens that replace the model of G.
  llvm::SmallVector<const Stmt *, 8>
  killsOf(const ModuleRef &Part, const Gen *G, bool Values = false) const;
  /// Whether the uninitialised gen G was empty before: by a call's facts,
  /// or an empty gen (or, EntryMayBeEmpty, the entry) reaching it.
  bool wasEmpty(const Gen &G, const CfgReachability &Cfg,
                bool EntryMayBeEmpty) const;
};

/// What decides the events, from the check's options.
struct EventKinds {
  AmbientDevice &Ambient;
  const NameList &WeightGivers;
  const NameList &NeedsWeights;
  const NameList &MemoryGivers;
  const NameList &Initializers;
  const TensorWrites &Writes;
};

/// The events of F (EmptyModelCollector.cpp): Here says where the meta
/// device is ambient in F, Table has the summaries of what F calls.
Events collectEvents(const FunctionDecl *F, AmbientDevice::InFunction &Here,
                     SummaryTable &Table, const EventKinds &Kinds);

} // namespace clang::tidy::metaguard::emptymodel

#endif // METAGUARD_CHECKS_EMPTY_MODEL_USED_EMPTYMODELEVENTS_H
