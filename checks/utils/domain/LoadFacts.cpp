//===--- LoadFacts.cpp - metaguard-tidy ------------------------*- C++ -*-===//

#include "utils/domain/LoadFacts.h"
#include "utils/summaries/FactJson.h"

namespace clang::tidy::metaguard {

METAGUARD_REGISTER_FACET(LoadFacts);

void LoadFacts::write(FactJson &J) const {
  J["loads_weights"] = LoadsWeights;
  if (LoadsAt.valid())
    J["loads_at"] = refToJson(LoadsAt);
  if (!Loader.empty())
    J["loader"] = Loader;
  if (!LoadsIn.empty())
    J["loads_in"] = LoadsIn;
  if (LoadsDepth)
    J["loads_depth"] = LoadsDepth;
  if (LoadsOnlyAfterSettingDevice)
    J["loads_only_after_setting_device"] = true;
  if (LoadsOnlyOnOtherThreads)
    J["loads_only_on_other_threads"] = true;
}

void LoadFacts::read(FactReader &R) {
  R.boolean("loads_weights", LoadsWeights);
  R.ref("loads_at", LoadsAt);
  R.string("loader", Loader);
  R.string("loads_in", LoadsIn);
  R.unsignedNumber("loads_depth", LoadsDepth);
  R.boolean("loads_only_after_setting_device", LoadsOnlyAfterSettingDevice);
  R.boolean("loads_only_on_other_threads", LoadsOnlyOnOtherThreads);
}

std::vector<MergeRule> LoadFacts::mergeRules() {
  MergeRule Loads;
  Loads.Key = "loads_weights";
  Loads.Details = {"loads_at",
                   "loader",
                   "loads_in",
                   "loads_depth",
                   "loads_only_after_setting_device",
                   "loads_only_on_other_threads"};
  return {Loads};
}

} // namespace clang::tidy::metaguard
