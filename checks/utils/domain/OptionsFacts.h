//===--- OptionsFacts.h - metaguard-tidy -----------------------*- C++ -*-===//
//
// The options facet's facts: the device map carried by the LoadOptions a
// function returns (ReturnedOptions.h computes them). Key in a facts file:
//   "returned_device_map": "none" | "single-device" | "offloading" |
//                          "unknown"
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_DOMAIN_OPTIONSFACTS_H
#define METAGUARD_CHECKS_UTILS_DOMAIN_OPTIONSFACTS_H

#include "utils/summaries/FunctionSummary.h"

namespace clang::tidy::metaguard {

/// The device map carried by a LoadOptions.
enum class DeviceMapKind {
  None,         ///< No device map: loads in place.
  SingleDevice, ///< A map with no "disk" entry: offloads nothing.
  Offloading,   ///< A map that sends something to "disk".
  Unknown,
};

struct OptionsFacts {
  static constexpr const char *Name = "options";

  DeviceMapKind ReturnedDeviceMap = DeviceMapKind::None;

  bool empty() const { return ReturnedDeviceMap == DeviceMapKind::None; }
  bool same(const OptionsFacts &O) const {
    return ReturnedDeviceMap == O.ReturnedDeviceMap;
  }
  void write(FactJson &J) const;
  void read(FactReader &R);
  static std::vector<MergeRule> mergeRules();
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_DOMAIN_OPTIONSFACTS_H
