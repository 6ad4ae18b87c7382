#include <metaguard/weights_map.h>

namespace metaguard {

// Out of line so the vtable has one home.
WeightsMap::~WeightsMap() = default;

StorageLocation WeightsMap::location(const std::string &) const { return {}; }

} // namespace metaguard
