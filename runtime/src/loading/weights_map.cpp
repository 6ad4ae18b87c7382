#include <metaguard/weights_map.h>

namespace metaguard {

// Out of line so the vtable has one home.
WeightsMap::~WeightsMap() = default;

StorageLocation WeightsMap::location(const std::string &) const { return {}; }

torch::Tensor WeightsMap::load_direct(const std::string &) const { return {}; }

std::vector<torch::Tensor> WeightsMap::load_together(const std::vector<std::string> &names) const {
  std::vector<torch::Tensor> tensors;
  tensors.reserve(names.size());
  for (const auto &name : names)
    tensors.push_back(load(name));
  return tensors;
}

} // namespace metaguard
