#include "loading/tied_placements.h"

#include <metaguard/errors.h>

#include <map>
#include <optional>

namespace metaguard::detail {
namespace {

// Each name of `group` that `map` places, with its placement.
std::map<std::string, Placement> placements_of(const std::vector<std::string> &group, const DeviceMap &map) {
  std::map<std::string, Placement> placed;
  for (const auto &name : group)
    if (const auto placement = map.placement_for(name))
      placed.emplace(name, *placement);
  return placed;
}

// The one device of a tie split between it and "disk", or nullopt when the
// tie is not split that way (one placement, or two devices).
std::optional<Placement> memory_side(const std::map<std::string, Placement> &placed) {
  std::optional<Placement> device;
  bool disk = false;
  for (const auto &[name, placement] : placed) {
    if (placement.is_disk())
      disk = true;
    else if (!device)
      device = placement;
    else if (*device != placement)
      return std::nullopt;
  }
  return disk ? device : std::nullopt;
}

std::string split_warning(const std::map<std::string, Placement> &placed, const Placement &kept) {
  std::string sides;
  for (const auto &[name, placement] : placed)
    sides += (sides.empty() ? "'" : " and '") + name + "' on " + placement.str();
  return "the device map puts tied parameters " + sides +
         "; they are one tensor, so it stays in memory on " + kept.str() +
         " for all of them (the side on " + kept.str() +
         " needs its values there anyway) and is not offloaded. As in accelerate and transformers, "
         "both sides compute with the same values. To offload it, put every module holding it on "
         "disk; to silence this, give them one placement (the automatic strategies keep ties "
         "together)";
}

} // namespace

void check_tied_placements(const TieGroups &ties, const DeviceMap &map) {
  for (const auto &group : ties) {
    std::optional<std::pair<std::string, Placement>> first;
    for (const auto &name : group) {
      const auto placement = map.placement_for(name);
      if (!placement)
        continue;
      if (!first) {
        first.emplace(name, *placement);
      } else if (*placement != first->second) {
        throw Error("the device map puts tied parameters '" + first->first + "' on " +
                    first->second.str() + " and '" + name + "' on " + placement->str() +
                    "; they are one tensor and need one placement: put the modules holding "
                    "them on the same device (the automatic strategies keep ties together)");
      }
    }
  }
}

DeviceMap keep_split_ties_in_memory(const TieGroups &ties, const DeviceMap &map,
                                    std::vector<std::string> &warnings) {
  if (!map.is_explicit())
    return map; // strategies place ties together
  DeviceMap kept = map;
  for (const auto &group : ties) {
    const auto placed = placements_of(group, map);
    const auto device = memory_side(placed);
    if (!device)
      continue;
    for (const auto &[name, placement] : placed)
      kept.set(name, *device);
    warnings.push_back(split_warning(placed, *device));
  }
  return kept;
}

} // namespace metaguard::detail
