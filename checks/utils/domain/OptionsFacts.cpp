//===--- OptionsFacts.cpp - metaguard-tidy ---------------------*- C++ -*-===//

#include "utils/domain/OptionsFacts.h"
#include "utils/summaries/FactJson.h"

namespace clang::tidy::metaguard {

namespace {

constexpr std::pair<DeviceMapKind, const char *> MapNames[] = {
    {DeviceMapKind::None, "none"},
    {DeviceMapKind::SingleDevice, "single-device"},
    {DeviceMapKind::Offloading, "offloading"},
    {DeviceMapKind::Unknown, "unknown"},
};

} // namespace

METAGUARD_REGISTER_FACET(OptionsFacts);

void OptionsFacts::write(FactJson &J) const {
  J["returned_device_map"] = enumName(ReturnedDeviceMap, MapNames).str();
}

void OptionsFacts::read(FactReader &R) {
  R.enumeration("returned_device_map", ReturnedDeviceMap, MapNames);
}

std::vector<MergeRule> OptionsFacts::mergeRules() {
  return {MergeRule::agree("returned_device_map", "none", "unknown")};
}

} // namespace clang::tidy::metaguard
