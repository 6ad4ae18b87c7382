// Kept for code written against the first release, when only safetensors
// were read: a CheckpointWeightsMap over a SafetensorsCheckpoint, whose
// checkpoint() is that SafetensorsCheckpoint. New code uses
// CheckpointWeightsMap, which reads every checkpoint format.
#pragma once

#include <metaguard/checkpoint.h>
#include <metaguard/checkpoint_weights_map.h>

#include <torch/types.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>

namespace metaguard {

class [[deprecated("use CheckpointWeightsMap")]] SafetensorsWeightsMap : public CheckpointWeightsMap {
public:
  explicit SafetensorsWeightsMap(std::shared_ptr<const SafetensorsCheckpoint> checkpoint,
                                 std::map<std::string, torch::Dtype> dtypes = {})
      : CheckpointWeightsMap(checkpoint, std::move(dtypes)), safetensors_(std::move(checkpoint)) {}
  explicit SafetensorsWeightsMap(const std::filesystem::path &location,
                                 const SafetensorsOptions &options = {})
      : SafetensorsWeightsMap(std::make_shared<const SafetensorsCheckpoint>(location, options)) {}

  const SafetensorsCheckpoint &checkpoint() const { return *safetensors_; }

private:
  std::shared_ptr<const SafetensorsCheckpoint> safetensors_;
};

} // namespace metaguard
