#include "tied_placements.h"

#include <metaguard/errors.h>

#include <optional>

namespace metaguard::detail {

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

} // namespace metaguard::detail
