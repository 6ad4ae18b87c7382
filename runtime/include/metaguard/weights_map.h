// Where the bytes of offloaded parameters come from. An offloading hook holds
// one of these and asks it for a parameter each time the parameter is needed.
#pragma once

#include <torch/types.h>

#include <string>
#include <vector>

namespace metaguard {

// A read-only, name-addressed source of tensors: an accelerate offload folder
// (OffloadFolder) or a safetensors checkpoint read in place. Implementations
// must be safe to call from several threads at once.
class WeightsMap {
public:
  virtual ~WeightsMap();
  virtual bool contains(const std::string &name) const = 0;
  // A CPU tensor with the stored dtype and shape. Throws OffloadError or
  // FormatError naming the file and the tensor when the data is unusable.
  virtual torch::Tensor load(const std::string &name) const = 0;
  virtual std::vector<std::string> names() const = 0;
};

} // namespace metaguard
