//===--- ModelFacts.h - metaguard-tidy -------------------------*- C++ -*-===//
//
// The model facet's facts: what a function does to the models passed to it,
// and whether it returns a dispatched model. Keys in a facts file:
//   "returns_dispatched_model": false, "dispatched_at": {...},
//   "dispatch_chain": [ {"how": "factory", "with": "app::load_big",
//                        "at": {...}},
//                       {"how": "loader", "with": "from_pretrained",
//                        "at": {...}} ],
//   "args": [ {"index": 0, "moves": true, "mutates_parameters": false,
//              "removes_hooks": false, "at": {...},
//              "what": "to", "in": "app::to_gpu"} ]
// and, for a function that uses the hooks of its argument, in the same item:
//   "needs_hooks": true, "needs_removed_hooks": false,
//   "needs_at": {...}, "needs_what": "metaguard::save_pretrained",
//   "needs_in": "app::export_model"
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_DOMAIN_MODELFACTS_H
#define METAGUARD_CHECKS_UTILS_DOMAIN_MODELFACTS_H

#include "utils/summaries/FunctionSummary.h"

#include <map>

namespace clang::tidy::metaguard {

/// How the model a factory returns gets dispatched.
enum class DispatchKind {
  Call,    ///< A DispatchFunctions call (dispatch_model and kin).
  Loader,  ///< A loader call with a device map that may offload.
  Factory, ///< A call to another function that returns a dispatched model.
};

/// One call on the way from a factory to the call that dispatches the model
/// it returns: what a note points at when the factory is in another
/// translation unit, as it would when the factory's body is visible.
struct DispatchStep {
  DispatchKind How = DispatchKind::Call;
  SourceRef At;
  std::string With; ///< The function called at At, qualified.
  bool operator==(const DispatchStep &O) const {
    return How == O.How && At == O.At && With == O.With;
  }
};

/// What a function does to the model passed as one of its parameters.
/// Index 0 is the first declared parameter; the implicit object of a member
/// function is not counted.
struct ArgumentEffects {
  bool Moves = false;             ///< to()/cuda()/cpu() on it, transitively.
  bool MutatesParameters = false; ///< Writes into its parameters in place.
  bool RemovesHooks = false;      ///< remove_hook_from_module and kin.
  /// Uses the hooks it was given (a NeedsHooks call, a forward pass) before
  /// removing them or dispatching the model anew.
  bool NeedsHooks = false;
  /// Removes the hooks and then uses them: a mistake when the model it is
  /// given is dispatched.
  bool NeedsRemovedHooks = false;
  SourceRef At;
  /// What is done at At ("to", "set_data", "remove_hook_from_module"), and
  /// the function At is in (qualified name), for notes.
  std::string What;
  std::string In;
  /// Where the hooks are used (NeedsHooks, NeedsRemovedHooks), for notes.
  SourceRef NeedsAt;
  std::string NeedsWhat;
  std::string NeedsIn;
  bool any() const {
    return Moves || MutatesParameters || RemovesHooks || NeedsHooks ||
           NeedsRemovedHooks;
  }
  bool sameEffects(const ArgumentEffects &O) const {
    return Moves == O.Moves && MutatesParameters == O.MutatesParameters &&
           RemovesHooks == O.RemovesHooks && NeedsHooks == O.NeedsHooks &&
           NeedsRemovedHooks == O.NeedsRemovedHooks;
  }
  /// Adds O's effects; the places notes point at stay the first ones found.
  void add(const ArgumentEffects &O);
};

struct ModelFacts {
  static constexpr const char *Name = "model";

  bool ReturnsDispatchedModel = false;
  SourceRef DispatchedAt;
  /// From the factory's own call (at DispatchedAt) down to the dispatching
  /// call, each step in the function the previous one calls; cut at a
  /// depth the notes never exceed.
  std::vector<DispatchStep> DispatchChain;

  std::map<unsigned, ArgumentEffects> Args; ///< Only parameters with effects.

  bool empty() const { return !ReturnsDispatchedModel && Args.empty(); }
  bool same(const ModelFacts &O) const;
  void write(FactJson &J) const;
  void read(FactReader &R);
  static std::vector<MergeRule> mergeRules();
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_DOMAIN_MODELFACTS_H
