// A small model built from a Config, for the tests of empty models: an
// embedding, residual blocks of stock torch::nn layers, a head, and a buffer
// computed in the constructor and never saved (as rotary frequencies are).
// Its forward has no OnloadGuard: offloaded parameters load themselves.
#pragma once

#include <metaguard/metaguard.h>

#include <torch/torch.h>

namespace empty_test {

inline metaguard::Config net_config(int blocks = 3, int d = 16) {
  return {{"vocab", 30}, {"d", d}, {"blocks", blocks}};
}

struct BlockImpl : torch::nn::Module {
  explicit BlockImpl(std::int64_t d)
      : norm(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})))),
        fc(register_module("fc", torch::nn::Linear(d, d))) {}
  torch::Tensor forward(const torch::Tensor &x) { return x + torch::gelu(fc(norm(x))); }
  torch::nn::LayerNorm norm;
  torch::nn::Linear fc;
};
TORCH_MODULE(Block);

struct NetImpl : metaguard::PreTrainedModel {
  explicit NetImpl(const metaguard::Config &config)
      : metaguard::PreTrainedModel(config),
        embed(register_module("embed", torch::nn::Embedding(config.at("vocab").get<std::int64_t>(),
                                                            config.at("d").get<std::int64_t>()))),
        blocks(register_module("blocks", torch::nn::ModuleList())),
        head(register_module("head", torch::nn::Linear(config.at("d").get<std::int64_t>(),
                                                       config.at("vocab").get<std::int64_t>()))) {
    const std::int64_t d = config.at("d").get<std::int64_t>();
    for (int i = 0; i < config.at("blocks").get<int>(); ++i)
      blocks->push_back(Block(d));
    scale = register_buffer("scale", torch::linspace(0.5, 1.5, d), /*persistent=*/false);
  }
  torch::Tensor forward(const torch::Tensor &ids) {
    auto h = embed(ids) * scale;
    for (const auto &block : *blocks)
      h = block->as<BlockImpl>()->forward(h);
    return head(h);
  }
  torch::nn::Embedding embed;
  torch::nn::ModuleList blocks;
  torch::nn::Linear head;
  torch::Tensor scale;
};
TORCH_MODULE(Net);

// The same layers in a plain torch::nn::Module (no metaguard base).
struct PlainNetImpl : torch::nn::Module {
  explicit PlainNetImpl(const metaguard::Config &config)
      : fc(register_module("fc", torch::nn::Linear(config.at("d").get<std::int64_t>(),
                                                   config.at("d").get<std::int64_t>()))) {}
  torch::Tensor forward(const torch::Tensor &x) { return fc(x); }
  torch::nn::Linear fc;
};
TORCH_MODULE(PlainNet);

inline torch::Tensor net_ids() { return torch::tensor({{1, 5, 29}, {0, 7, 7}}); }

// An empty Net, as accelerate's users build one: from_config under
// init_empty_weights() (parameters on meta, the buffer real).
inline Net empty_net(const metaguard::Config &config = net_config()) {
  auto scope = metaguard::init_empty_weights();
  return metaguard::from_config<Net>(config);
}

// Saves a Net with random weights (and its config) to `dir`; returns it.
inline Net saved_net(const std::filesystem::path &dir, const metaguard::Config &config = net_config(),
                     metaguard::Size max_shard_size = "5GB") {
  Net net(config);
  metaguard::SaveOptions options;
  options.max_shard_size = max_shard_size;
  metaguard::save_pretrained(*net, dir, options);
  return net;
}

inline torch::Tensor forward(Net &net, const torch::Tensor &ids = net_ids()) {
  torch::NoGradGuard no_grad;
  return net->forward(ids);
}

} // namespace empty_test
