//===--- ReturnedOptions.h - metaguard-tidy --------------------*- C++ -*-===//
//
// Helpers that build LoadOptions: the device map carried by the options a
// function returns (OptionsFacts), and the device map
// a loader call gets from such a helper.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_DOMAIN_RETURNEDOPTIONS_H
#define METAGUARD_CHECKS_UTILS_DOMAIN_RETURNEDOPTIONS_H

#include "utils/analysis/CfgReachability.h"
#include "utils/domain/OptionsFacts.h"
#include "utils/summaries/FunctionSummaries.h"

#include "clang/AST/Expr.h"

namespace clang::tidy::metaguard {

/// The Options facet: what device map the LoadOptions a function returns
/// carries, from its return statements (a braced initialiser, a local options
/// variable and the writes to its device_map reaching the return, another
/// helper's result). Both checks register one; the first is used.
class ReturnedOptionsFacet : public SummaryFacetFor<OptionsFacts> {
public:
  bool follows(const FunctionDecl *FD) const override;
  void summarise(const FunctionDecl *F, FunctionSummary &Out,
                 SummaryTable &Table) override;
  void clear() { Cfgs.clear(); }

private:
  CfgCache Cfgs;
};

/// The device map a loader call (in function Fn) gets from a helper that
/// builds its options: an argument that is a call to such a helper, or a
/// local options variable initialised from one. None when no argument comes
/// from a helper that sets a map.
DeviceMapKind deviceMapFromHelpers(const Expr *LoaderCall, SummaryTable &Table);

/// How a visible device-map value places weights: SingleDevice when it
/// visibly keeps everything in memory, Offloading when it names "disk",
/// Unknown otherwise.
DeviceMapKind classifyDeviceMapValue(const Expr *Value);

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_DOMAIN_RETURNEDOPTIONS_H
