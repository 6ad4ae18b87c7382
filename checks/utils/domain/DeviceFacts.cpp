//===--- DeviceFacts.cpp - metaguard-tidy ----------------------*- C++ -*-===//

#include "utils/domain/DeviceFacts.h"
#include "utils/summaries/FactJson.h"

#include "llvm/ADT/StringRef.h"

#include <string>

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
  J["default_device_param"] = DefaultDeviceParam == NoParam
                                  ? std::string()
                                  : std::to_string(DefaultDeviceParam);
  if (DefaultDeviceParamAt.valid())
    J["default_device_param_at"] = refToJson(DefaultDeviceParamAt);
}

void DeviceFacts::read(FactReader &R) {
  R.enumeration("default_device", DefaultDevice, DeviceNames);
  R.ref("default_device_at", DefaultDeviceAt);
  R.boolean("opens_meta_scope", OpensMetaScope);
  R.ref("opens_meta_scope_at", OpensMetaScopeAt);
  std::string Param;
  R.string("default_device_param", Param);
  unsigned Index = NoParam;
  if (!Param.empty() && !llvm::StringRef(Param).getAsInteger(10, Index))
    DefaultDeviceParam = Index;
  R.ref("default_device_param_at", DefaultDeviceParamAt);
}

std::vector<MergeRule> DeviceFacts::mergeRules() {
  MergeRule Scope;
  Scope.Key = "opens_meta_scope";
  Scope.Details = {"opens_meta_scope_at"};
  return {MergeRule::agree("default_device", "unchanged", "unknown",
                           {"default_device_at"}),
          Scope,
          MergeRule::agree("default_device_param", "", "",
                           {"default_device_param_at"})};
}

} // namespace clang::tidy::metaguard
