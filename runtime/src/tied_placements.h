// Tied parameters hold one tensor, which has one place: a device map that
// places the sides of a tie differently would load or dispatch a second copy
// on the other device (the tie silently broken) or leave one side on meta
// behind the other side's offload hook.
#pragma once

#include <metaguard/device_map.h>

#include "declarations.h"

namespace metaguard::detail {

// Throws Error naming the first of the model's ties (tied_groups) whose
// parameters `map` places differently, and both placements.
void check_tied_placements(const TieGroups &ties, const DeviceMap &map);

} // namespace metaguard::detail
