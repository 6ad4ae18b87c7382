//===--- EmptyModelFacts.h - metaguard-tidy --------------------*- C++ -*-===//
//
// The empty-model facet's facts: whether a function returns a model built
// empty (on the meta device, without weights), or built with whatever device
// its caller makes ambient; what it does to the models passed to it (gives
// them weights on every path, or uses them before any weights on some path);
// and the same for the member models of its object (a method or a
// constructor: which members it leaves built, gives weights to, uses). A
// model given memory by to_empty has no values yet: the facts say where a
// function leaves a model so, initialises one, or uses one before that. The
// keys of those facts are written only when they hold, and "returns_model"
// / "left" may be "uninitialised".
// Keys in a facts file:
//   "returns_model": "none" | "empty" | "callers_device" | "unknown",
//   "returned_built_at": {...}, "returned_built_in": "app::make_skeleton",
//   "returned_scope": "guard" | "scope_function" | "default_device",
//   "returned_scope_at": {...}, "returned_scope_name": "guard",
//   "model_args": [ {"index": 0, "gives_weights": true, "uses": false,
//                    "use_at": {...}, "use_what": "forward",
//                    "use_in": "app::run", "initialises": true,
//                    "uses_uninitialised": true, "left": "uninitialised",
//                    "memory_at": {...}, "memory_in": "app::materialise"} ],
//   "member_models": [ {"field": 0, "member": "model_", "left": "empty",
//                       "built_at": {...}, "built_in": "...", "scope": ...,
//                       "scope_at": {...}, "scope_name": "...",
//                       "gives_weights": false, "uses": true,
//                       "use_at": {...}, "use_what": "...", "use_in": "..."} ]
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_DOMAIN_EMPTYMODELFACTS_H
#define METAGUARD_CHECKS_UTILS_DOMAIN_EMPTYMODELFACTS_H

#include "utils/summaries/FunctionSummary.h"

#include <map>

namespace clang::tidy::metaguard {

/// How a function leaves a model it builds (the one it returns, or a member
/// model of its object) when it returns, on some path.
enum class BuiltModel {
  None, ///< It builds none, or gives it weights on every path first.
  /// Built while the function's own meta device was ambient: empty,
  /// whoever calls.
  Empty,
  /// Built with the device its caller makes ambient: empty when the caller
  /// calls it while the meta device is ambient.
  CallersDevice,
  /// Versions of the function disagree (a merged summary): nothing known.
  Unknown,
  /// Built empty and given memory (to_empty) but no values: uninitialised
  /// until something initialises or loads it.
  Uninitialised,
};

/// What made the meta device ambient where a model was built empty, as an
/// AmbientDevice::Origin says it, kept beyond the translation unit.
enum class EmptyScope { Guard, ScopeFunction, DefaultDevice };

/// Where a model was built and, when empty, what made it so: what notes
/// point at.
struct BuiltOrigin {
  SourceRef BuiltAt;
  std::string BuiltIn; ///< The function it was built in (qualified).
  EmptyScope Scope = EmptyScope::Guard;
  SourceRef ScopeAt;     ///< The guard, setter or scope function's call.
  std::string ScopeName; ///< The guard's or the scope function's name.
  /// Uninitialised models: where they were given memory, and in what.
  SourceRef MemoryAt;
  std::string MemoryIn;
};

/// The first use of a model inside a function (at any depth), for notes.
struct ModelUse {
  SourceRef At;
  std::string What; ///< "forward", "to", "metaguard::save_pretrained", ...
  std::string In;   ///< The function it is in (qualified).
};

/// What a function does to one model it is given: an argument, or a member
/// model of its object.
struct ModelSlotFacts {
  /// Gives it weights on every path that returns (a must-fact: callers
  /// treat it as loaded after the call).
  bool GivesWeights = false;
  /// Given it with memory but no values (after to_empty), initialises it
  /// on every path that returns (a must-fact).
  bool Initialises = false;
  /// Uses it on some path before anything gives it weights (a may-fact).
  bool Uses = false;
  /// Given it with memory but no values, uses it on some path before
  /// anything initialises or loads it (a may-fact).
  bool UsesUninitialised = false;
  ModelUse Use;
  /// The model as the function leaves it: for a member, how it is built;
  /// for an argument, only Uninitialised (given memory and no values).
  BuiltModel Left = BuiltModel::None;
  BuiltOrigin Origin;
  std::string Member; ///< Members only: its name, for messages.

  bool any() const {
    return GivesWeights || Initialises || Uses || UsesUninitialised ||
           Left != BuiltModel::None;
  }
  bool sameFacts(const ModelSlotFacts &O) const {
    return GivesWeights == O.GivesWeights && Initialises == O.Initialises &&
           Uses == O.Uses && UsesUninitialised == O.UsesUninitialised &&
           Left == O.Left;
  }
};

struct EmptyModelFacts {
  static constexpr const char *Name = "empty_model";

  BuiltModel Returns = BuiltModel::None;
  BuiltOrigin ReturnsOrigin;
  /// By parameter index (0 is the first declared parameter; the implicit
  /// object of a method is not counted); only those with facts.
  std::map<unsigned, ModelSlotFacts> Args;
  /// By field index in the class of the method's object.
  std::map<unsigned, ModelSlotFacts> Members;

  bool empty() const {
    return Returns == BuiltModel::None && Args.empty() && Members.empty();
  }
  bool same(const EmptyModelFacts &O) const;
  void write(FactJson &J) const;
  void read(FactReader &R);
  static std::vector<MergeRule> mergeRules();
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_DOMAIN_EMPTYMODELFACTS_H
