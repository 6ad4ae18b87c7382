// Where each parameter of a model lives: accelerate's device_map and
// max_memory.
#pragma once

#include <metaguard/size.h>

#include <torch/types.h>

#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace metaguard {

// One placement: a torch::Device, or "disk" (offloaded; the parameter lives as
// a meta tensor and a hook knows where its bytes are).
class Placement {
public:
  Placement(torch::Device device);   // NOLINT(google-explicit-constructor)
  Placement(c10::DeviceType type);   // NOLINT(google-explicit-constructor)
  Placement(std::string_view name);  // NOLINT(google-explicit-constructor)
  Placement(const char *name);       // NOLINT(google-explicit-constructor)
  Placement(const std::string &name); // NOLINT(google-explicit-constructor)
  static Placement disk();

  bool is_disk() const { return disk_; }
  // The device; throws Error for a disk placement.
  torch::Device device() const;
  std::string str() const;
  friend bool operator==(const Placement &a, const Placement &b);
  friend bool operator!=(const Placement &a, const Placement &b) {
    return !(a == b);
  }

private:
  Placement(bool disk, torch::Device device) : disk_(disk), device_(device) {}
  bool disk_ = false;
  torch::Device device_{torch::kCPU};
};

// A device map: module/parameter-name prefix -> placement, or a strategy
// ("auto", "balanced", "balanced_low_0", "sequential") resolved against the
// model and MaxMemory when the model is dispatched. An empty map means "no
// device map".
class DeviceMap {
public:
  enum class Strategy { Explicit, Auto, Balanced, BalancedLow0, Sequential };

  DeviceMap() = default;
  DeviceMap(std::initializer_list<std::pair<const std::string, Placement>> entries);

  static DeviceMap automatic();
  static DeviceMap balanced();
  static DeviceMap balanced_low_0();
  static DeviceMap sequential();
  // Everything on one placement: {"": placement}.
  static DeviceMap on(Placement placement);

  // True when this is neither a strategy nor has any entry.
  bool empty() const;
  Strategy strategy() const { return strategy_; }
  bool is_explicit() const { return strategy_ == Strategy::Explicit; }
  void set(std::string prefix, Placement placement);
  const std::map<std::string, Placement> &entries() const { return entries_; }

  // The placement of the longest prefix that covers `name` ("" covers
  // everything; "layers.1" covers "layers.1" and "layers.1.weight" but not
  // "layers.10.weight"); nullopt when none does. Explicit maps only.
  std::optional<Placement> placement_for(std::string_view name) const;
  // True if any entry is "disk".
  bool has_disk() const;

private:
  static DeviceMap with_strategy(Strategy strategy);
  Strategy strategy_ = Strategy::Explicit;
  std::map<std::string, Placement> entries_;
};

// Memory budget per device ("cpu", "cuda:0", ... , plus "disk" is implied)
// for the automatic device-map strategies.
class MaxMemory {
public:
  MaxMemory() = default;
  MaxMemory(std::initializer_list<std::pair<const std::string, Size>> entries);
  bool empty() const { return budgets_.empty(); }
  void set(const std::string &device, Size size);
  std::optional<std::int64_t> budget(const std::string &device) const;
  const std::map<std::string, std::int64_t> &budgets() const { return budgets_; }

private:
  std::map<std::string, std::int64_t> budgets_;
};

} // namespace metaguard
