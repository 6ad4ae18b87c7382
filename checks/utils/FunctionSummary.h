//===--- FunctionSummary.h - metaguard-tidy --------------------*- C++ -*-===//
//
// Facts about one function that the checks use at its call sites instead of
// looking into its body: what it leaves the default device as, whether it
// loads weights, what it does to the models passed to it. Facts, never
// findings: a finding is reported where the mistake is written.
//
// Summaries are computed bottom-up inside a translation unit (issue 10) and
// can be exported to, and read back from, a facts file so that a call into
// another translation unit uses them too (whole-program mode, issue 11).
// They are keyed by the function's USR, which is the same in every TU.
//
// Facts file (JSON), one object per function:
//   { "usr": "c:@N@app@F@make_model#", "name": "app::make_model",
//     "default_device": "unchanged" | "meta" | "restored" | "unknown",
//     "default_device_at": {"file": "/abs/a.cpp", "line": 12, "column": 3},
//     "loads_weights": true, "loads_at": {...}, "loader": "from_pretrained",
//     "loads_in": "app::load_encoder", "loads_depth": 0,
//     "loads_only_after_setting_device": false,
//     "opens_meta_scope": false, "opens_meta_scope_at": {...},
//     "returns_dispatched_model": false, "dispatched_at": {...},
//     "dispatch_chain": [ {"how": "factory", "with": "app::load_big",
//                          "at": {...}},
//                         {"how": "loader", "with": "from_pretrained",
//                          "at": {...}} ],
//     "args": [ {"index": 0, "moves": true, "mutates_parameters": false,
//                "removes_hooks": false, "at": {...},
//                "what": "to", "in": "app::to_gpu"} ],
//     "returned_device_map": "none" | "single-device" | "offloading" |
//                            "unknown" }
// Absent keys take the defaults below, so older files stay readable.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_FUNCTIONSUMMARY_H
#define METAGUARD_CHECKS_UTILS_FUNCTIONSUMMARY_H

#include <map>
#include <string>
#include <vector>

namespace clang::tidy::metaguard {

/// Where a fact comes from: the line a note points at. A file path rather
/// than a SourceLocation, so that it survives the translation unit.
struct SourceRef {
  std::string File;
  unsigned Line = 0;
  unsigned Column = 0;
  bool valid() const { return !File.empty() && Line != 0; }
  bool operator==(const SourceRef &O) const {
    return Line == O.Line && Column == O.Column && File == O.File;
  }
  bool operator!=(const SourceRef &O) const { return !(*this == O); }
};

/// The process-wide default device when the function returns, relative to
/// when it was called.
enum class DeviceAtReturn {
  Unchanged, ///< The function does not set the default device.
  /// On some path it returns with the default device meta, set by itself
  /// (or a callee) and not reset after: a may-fact, like the check's
  /// flow-sensitive analysis inside one function.
  Meta,
  /// On every path it sets a known non-meta device (or resets it) after any
  /// meta setting: it ends a meta default device.
  Restored,
  /// Sets it to something not known, or resets it only on some paths.
  /// Callers treat this as ending the meta state (no guesses, no noise).
  Unknown,
};

/// The device map carried by a LoadOptions the function returns.
enum class DeviceMapKind {
  None,         ///< No device map: loads in place.
  SingleDevice, ///< A map with no "disk" entry: offloads nothing.
  Offloading,   ///< A map that sends something to "disk".
  Unknown,
};

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
  SourceRef At;
  /// What is done at At ("to", "set_data", "remove_hook_from_module"), and
  /// the function At is in (qualified name), for notes.
  std::string What;
  std::string In;
  bool any() const { return Moves || MutatesParameters || RemovesHooks; }
};

struct FunctionSummary {
  std::string USR;
  std::string Name; ///< Qualified name, for messages.

  DeviceAtReturn DefaultDevice = DeviceAtReturn::Unchanged;
  SourceRef DefaultDeviceAt; ///< The setter call that decides it.

  bool LoadsWeights = false; ///< Transitively, at any depth.
  SourceRef LoadsAt;         ///< The loader call (possibly in a callee).
  std::string Loader;        ///< The loader's name, e.g. "from_pretrained".
  std::string LoadsIn;       ///< The function the loader call is in.
  /// Calls of user code between this function and the loader call (0: it
  /// calls the loader itself); calls through the standard library, LibTorch
  /// and module holders do not count. Compared with the CallDepth option.
  unsigned LoadsDepth = 0;
  /// Every load runs after the function set the default device itself, so
  /// a meta default device of the caller does not reach them (a meta scope
  /// of the caller still does: a scope wins over the default device).
  bool LoadsOnlyAfterSettingDevice = false;

  /// A constructor that opens a meta scope held by the object (RAII class).
  bool OpensMetaScope = false;
  SourceRef OpensMetaScopeAt;

  bool ReturnsDispatchedModel = false;
  SourceRef DispatchedAt;
  /// From the factory's own call (at DispatchedAt) down to the dispatching
  /// call, each step in the function the previous one calls; cut at a
  /// depth the notes never exceed.
  std::vector<DispatchStep> DispatchChain;

  std::map<unsigned, ArgumentEffects> Args; ///< Only parameters with effects.

  DeviceMapKind ReturnedDeviceMap = DeviceMapKind::None;

  /// Whether the summary says nothing a call site could use.
  bool empty() const {
    return DefaultDevice == DeviceAtReturn::Unchanged && !LoadsWeights &&
           !OpensMetaScope && !ReturnsDispatchedModel && Args.empty() &&
           ReturnedDeviceMap == DeviceMapKind::None;
  }
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_FUNCTIONSUMMARY_H
