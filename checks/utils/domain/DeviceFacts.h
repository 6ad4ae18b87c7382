//===--- DeviceFacts.h - metaguard-tidy ------------------------*- C++ -*-===//
//
// The default-device facet's facts: what a function leaves the process-wide
// default device as, and whether a constructor opens a meta scope that its
// object holds (an RAII session). Keys in a facts file:
//   "default_device": "unchanged" | "meta" | "restored" | "unknown",
//   "default_device_at": {"file", "line", "column"},
//   "opens_meta_scope": false, "opens_meta_scope_at": {...},
//   "default_device_param": "" | "0" | "1" | ...,
//   "default_device_param_at": {...}
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_DOMAIN_DEVICEFACTS_H
#define METAGUARD_CHECKS_UTILS_DOMAIN_DEVICEFACTS_H

#include "utils/summaries/FunctionSummary.h"

namespace clang::tidy::metaguard {

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

struct DeviceFacts {
  static constexpr const char *Name = "default_device";

  DeviceAtReturn DefaultDevice = DeviceAtReturn::Unchanged;
  SourceRef DefaultDeviceAt; ///< The setter call that decides it.
  /// A constructor that opens a meta scope held by the object (RAII class).
  bool OpensMetaScope = false;
  SourceRef OpensMetaScopeAt;
  /// On some path it returns with the default device set to what one of
  /// its parameters gives (its index; NoParam when none): a call that
  /// passes a meta device there, or leaves a default argument that is
  /// meta, returns with it meta. DefaultDevice says what it does otherwise.
  /// (A string in the facts file, "" for none, so that versions that
  /// disagree merge to none.)
  static constexpr unsigned NoParam = ~0U;
  unsigned DefaultDeviceParam = NoParam;
  SourceRef DefaultDeviceParamAt; ///< The setter that uses it.

  bool empty() const {
    return DefaultDevice == DeviceAtReturn::Unchanged && !OpensMetaScope &&
           DefaultDeviceParam == NoParam;
  }
  bool same(const DeviceFacts &O) const {
    return DefaultDevice == O.DefaultDevice &&
           DefaultDeviceAt == O.DefaultDeviceAt &&
           OpensMetaScope == O.OpensMetaScope &&
           DefaultDeviceParam == O.DefaultDeviceParam &&
           DefaultDeviceParamAt == O.DefaultDeviceParamAt;
  }
  void write(FactJson &J) const;
  void read(FactReader &R);
  static std::vector<MergeRule> mergeRules();
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_DOMAIN_DEVICEFACTS_H
