// The small text encoder of the composite and empty-model examples: an
// embedding and a mixing layer, built from a config's vocab_size and
// hidden_size, so that a checkpoint for it is a few kilobytes.
#pragma once

#include <metaguard/metaguard.h>

#include <torch/torch.h>

#include <cstdint>

namespace models {

struct TextEncoderImpl : torch::nn::Module {
  explicit TextEncoderImpl(const metaguard::Config &config) {
    const auto vocab = config.at("vocab_size").get<std::int64_t>();
    const auto hidden = config.at("hidden_size").get<std::int64_t>();
    embed = register_module("embed", torch::nn::Embedding(vocab, hidden));
    mix = register_module("mix", torch::nn::Linear(hidden, hidden));
  }
  torch::Tensor forward(const torch::Tensor &tokens) {
    return torch::tanh(mix(embed(tokens)));
  }
  torch::nn::Embedding embed{nullptr};
  torch::nn::Linear mix{nullptr};
};
TORCH_MODULE(TextEncoder);

} // namespace models
