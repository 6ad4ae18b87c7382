// A base for models loaded with from_pretrained or dispatched with
// dispatch_model: like accelerate's dispatched models, it refuses to be moved
// while some parameters are offloaded.
#pragma once

#include <torch/nn/module.h>

#include <string>

namespace metaguard {

class PreTrainedModel : public torch::nn::Module {
public:
  using torch::nn::Module::Module;
  ~PreTrainedModel() override;

  // The overloads with a device throw OffloadError listing the offloaded
  // parameters when any parameter is offloaded (moving them would leave their
  // hooks behind); otherwise they are torch::nn::Module::to. The dtype-only
  // overload always converts: offloaded parameters keep living on disk and
  // are converted each time their hook loads them.
  void to(torch::Device device, torch::Dtype dtype, bool non_blocking = false) override;
  void to(torch::Dtype dtype, bool non_blocking = false) override;
  void to(torch::Device device, bool non_blocking = false) override;

private:
  void refuse_if_offloaded(const std::string &target) const;
};

} // namespace metaguard
