//===--- DeviceFacts.cpp - metaguard-tidy ----------------------*- C++ -*-===//

#include "utils/domain/DeviceFacts.h"
#include "utils/summaries/FactJson.h"

namespace clang::tidy::metaguard {

namespace {

constexpr std::pair<DeviceAtReturn, const char *> DeviceNames[] = {
    {DeviceAtReturn::Unchanged, "unchanged"},
    {DeviceAtReturn::Meta, "meta"},
    {DeviceAtReturn::Restored, "restored"},
    {DeviceAtReturn::Unknown, "unknown"},
};

} // namespace

METAGUARD_REGISTER_FACET(DeviceFacts);

void DeviceFacts::write(FactJson &J) const {
  J["default_device"] = enumName(DefaultDevice, DeviceNames).str();
  if (DefaultDeviceAt.valid())
    J["default_device_at"] = refToJson(DefaultDeviceAt);
  J["opens_meta_scope"] = OpensMetaScope;
  if (OpensMetaScopeAt.valid())
    J["opens_meta_scope_at"] = refToJson(OpensMetaScopeAt);
}

void DeviceFacts::read(FactReader &R) {
  R.enumeration("default_device", DefaultDevice, DeviceNames);
  R.ref("default_device_at", DefaultDeviceAt);
  R.boolean("opens_meta_scope", OpensMetaScope);
  R.ref("opens_meta_scope_at", OpensMetaScopeAt);
}

std::vector<MergeRule> DeviceFacts::mergeRules() {
  MergeRule Device;
  Device.Key = "default_device";
  Device.How = MergeRule::Kind::Agree;
  Device.Default = "unchanged";
  Device.Disputed = "unknown";
  Device.Details = {"default_device_at"};
  MergeRule Scope;
  Scope.Key = "opens_meta_scope";
  Scope.Details = {"opens_meta_scope_at"};
  return {Device, Scope};
}

} // namespace clang::tidy::metaguard
