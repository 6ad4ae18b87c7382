// A base for models loaded with from_pretrained or dispatched with
// dispatch_model: like accelerate's dispatched models, it refuses to be moved
// while some parameters are offloaded.
#pragma once

#include <metaguard/config.h>
#include <metaguard/module.h>

#include <torch/nn/module.h>

#include <string>
#include <utility>

namespace metaguard {

// Its checkpoint declarations (base_model_prefix, tied_weights_keys, ...)
// come from metaguard::Module.
class PreTrainedModel : public Module {
public:
  using Module::Module;
  PreTrainedModel() = default;
  // transformers' PreTrainedModel.__init__(config): a model built as
  // Model(config) with `Model(const Config &c) : PreTrainedModel(c) {...}`
  // remembers its config, so save_pretrained writes config.json and the
  // folder reloads with from_pretrained<Model>(dir) alone.
  explicit PreTrainedModel(Config config) : config_(std::move(config)) {}
  // A module name, as torch::nn::Module(std::string) takes: without this
  // overload PreTrainedModel("name") would be ambiguous with the Config one.
  explicit PreTrainedModel(const char *name) : Module(std::string(name)) {}
  ~PreTrainedModel() override;

  // The overloads with a device throw OffloadError listing the offloaded
  // parameters when any parameter is offloaded (moving them would leave their
  // hooks behind); otherwise they are torch::nn::Module::to. The dtype-only
  // overload always converts: offloaded parameters keep living on disk and
  // are converted each time their hook loads them.
  void to(torch::Device device, torch::Dtype dtype, bool non_blocking = false) override;
  void to(torch::Dtype dtype, bool non_blocking = false) override;
  void to(torch::Device device, bool non_blocking = false) override;

  // The config the model was built from: given to the constructor, or set by
  // from_pretrained and from_config (null for a model constructed by hand
  // without one until set_config), and
  // written as config.json by save_pretrained, so a loaded model saves and
  // reloads without passing its config again.
  const Config &config() const { return config_; }
  void set_config(Config config) { config_ = std::move(config); }

private:
  void refuse_if_offloaded(const std::string &target) const;
  Config config_ = nullptr;
};

} // namespace metaguard
