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
//     "opens_meta_scope": false, "opens_meta_scope_at": {...},
//     "returns_dispatched_model": false, "dispatched_at": {...},
//     "args": [ {"index": 0, "moves": true, "mutates_parameters": false,
//                "removes_hooks": false, "at": {...}} ],
//     "returned_device_map": "none" | "single-device" | "offloading" |
//                            "unknown" }
// Absent keys take the defaults below, so older files stay readable.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_FUNCTIONSUMMARY_H
#define METAGUARD_CHECKS_UTILS_FUNCTIONSUMMARY_H

#include <map>
#include <string>

namespace clang::tidy::metaguard {

/// Where a fact comes from: the line a note points at. A file path rather
/// than a SourceLocation, so that it survives the translation unit.
struct SourceRef {
  std::string File;
  unsigned Line = 0;
  unsigned Column = 0;
  bool valid() const { return !File.empty() && Line != 0; }
};

/// The process-wide default device when the function returns, relative to
/// when it was called.
enum class DeviceAtReturn {
  Unchanged, ///< The function does not set the default device.
  Meta,      ///< On every path it returns with the default device meta.
  Restored,  ///< It ends a meta default device (sets a non-meta device).
  Unknown,   ///< Sets it to something not known, or only on some paths.
};

/// The device map carried by a LoadOptions the function returns.
enum class DeviceMapKind {
  None,         ///< No device map: loads in place.
  SingleDevice, ///< A map with no "disk" entry: offloads nothing.
  Offloading,   ///< A map that sends something to "disk".
  Unknown,
};

/// What a function does to the model passed as one of its parameters.
/// Index 0 is the first declared parameter; the implicit object of a member
/// function is not counted.
struct ArgumentEffects {
  bool Moves = false;             ///< to()/cuda()/cpu() on it, transitively.
  bool MutatesParameters = false; ///< Writes into its parameters in place.
  bool RemovesHooks = false;      ///< remove_hook_from_module and kin.
  SourceRef At;
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

  /// A constructor that opens a meta scope held by the object (RAII class).
  bool OpensMetaScope = false;
  SourceRef OpensMetaScopeAt;

  bool ReturnsDispatchedModel = false;
  SourceRef DispatchedAt;

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
