// Tied parameters hold one tensor, which has one place: a device map that
// places the sides of a tie differently would load or dispatch a second copy
// on the other device (the tie silently broken) or leave one side on meta
// behind the other side's offload hook.
#pragma once

#include <metaguard/device_map.h>

#include "loading/declarations.h"

#include <string>
#include <vector>

namespace metaguard::detail {

// Throws Error naming the first of the model's ties (tied_groups) whose
// parameters `map` places differently, and both placements.
void check_tied_placements(const TieGroups &ties, const DeviceMap &map);

// A load's answer to a map that splits a tie between "disk" and one device
// (lm_head on the CPU, the embeddings it is tied to on disk): transformers'
// loaders warn and load it, each side computing with the same values. The
// tie is one tensor here (LibTorch modules hold their parameters by member
// variables, so a side cannot be given a tensor of its own), and the side on
// the device needs its values in memory anyway, so the tensor stays in memory
// on that device for both names, which costs no memory a copy on each side
// would not. Returns `map` with an entry per name of each such tie, and
// appends to `warnings` one message per tie naming it and both placements.
// Ties split between two devices are left as they are (check_tied_placements
// refuses them).
DeviceMap keep_split_ties_in_memory(const TieGroups &ties, const DeviceMap &map,
                                    std::vector<std::string> &warnings);

} // namespace metaguard::detail
