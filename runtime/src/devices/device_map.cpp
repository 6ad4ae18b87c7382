#include <metaguard/device.h>
#include <metaguard/device_map.h>

namespace metaguard {

Placement::Placement(torch::Device device) : device_(device) {}
Placement::Placement(c10::DeviceType type) : device_(type) {}
Placement::Placement(std::string_view name)
    : disk_(name == "disk"),
      device_(disk_ ? torch::Device(torch::kCPU) : parse_device(name)) {}
Placement::Placement(const char *name)
    : Placement(std::string_view(name ? name : "")) {}
Placement::Placement(const std::string &name)
    : Placement(std::string_view(name)) {}

Placement Placement::disk() { return Placement(true, torch::Device(torch::kCPU)); }

torch::Device Placement::device() const {
  if (disk_)
    throw Error("the placement is \"disk\", which is not a device: offloaded "
                "parameters are loaded through their hook");
  return device_;
}

std::string Placement::str() const { return disk_ ? "disk" : device_.str(); }

bool operator==(const Placement &a, const Placement &b) {
  return a.disk_ == b.disk_ && (a.disk_ || a.device_ == b.device_);
}

DeviceMap::DeviceMap(
    std::initializer_list<std::pair<const std::string, Placement>> entries)
    : entries_(entries) {}

DeviceMap DeviceMap::with_strategy(Strategy strategy) {
  // Strategies are resolved against the model at dispatch time.
  DeviceMap map;
  map.strategy_ = strategy;
  return map;
}

DeviceMap DeviceMap::automatic() { return with_strategy(Strategy::Auto); }
DeviceMap DeviceMap::balanced() { return with_strategy(Strategy::Balanced); }
DeviceMap DeviceMap::balanced_low_0() {
  return with_strategy(Strategy::BalancedLow0);
}
DeviceMap DeviceMap::sequential() { return with_strategy(Strategy::Sequential); }

DeviceMap DeviceMap::on(Placement placement) {
  DeviceMap map;
  map.set("", placement);
  return map;
}

bool DeviceMap::empty() const {
  return strategy_ == Strategy::Explicit && entries_.empty();
}

void DeviceMap::set(std::string prefix, Placement placement) {
  entries_.insert_or_assign(std::move(prefix), placement);
}

std::optional<Placement> DeviceMap::placement_for(std::string_view name) const {
  // Walk from the full name up through its dotted ancestors to "": the first
  // hit is the longest covering prefix.
  std::string_view prefix = name;
  while (true) {
    auto it = entries_.find(std::string(prefix));
    if (it != entries_.end())
      return it->second;
    if (prefix.empty())
      return std::nullopt;
    const auto dot = prefix.rfind('.');
    prefix = dot == std::string_view::npos ? std::string_view()
                                           : prefix.substr(0, dot);
  }
}

bool DeviceMap::has_disk() const {
  for (const auto &[prefix, placement] : entries_)
    if (placement.is_disk())
      return true;
  return false;
}

MaxMemory::MaxMemory(std::initializer_list<std::pair<const std::string, Size>> entries) {
  for (const auto &[device, size] : entries)
    set(device, size);
}

void MaxMemory::set(const std::string &device, Size size) {
  budgets_.insert_or_assign(device, size.bytes());
}

std::optional<std::int64_t> MaxMemory::budget(const std::string &device) const {
  auto it = budgets_.find(device);
  if (it == budgets_.end())
    return std::nullopt;
  return it->second;
}

} // namespace metaguard
