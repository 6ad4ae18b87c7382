// A small transformer block built from torch::nn layers, constructed from a
// Config as from_config / from_pretrained require, for the loading and
// saving tests.
#pragma once

#include <metaguard/metaguard.h>

#include <torch/torch.h>

namespace metaguard_test {

inline metaguard::Config tiny_config() {
  return {{"vocab_size", 50}, {"hidden_size", 16}, {"num_heads", 4}, {"max_positions", 12}};
}

struct TinyTransformerImpl : torch::nn::Module {
  explicit TinyTransformerImpl(const metaguard::Config &config)
      : TinyTransformerImpl(config.at("vocab_size").get<int64_t>(),
                            config.at("hidden_size").get<int64_t>(),
                            config.at("num_heads").get<int64_t>(),
                            config.at("max_positions").get<int64_t>()) {}

  TinyTransformerImpl(int64_t vocab, int64_t d, int64_t heads, int64_t positions)
      : embed(register_module("embed", torch::nn::Embedding(vocab, d))),
        positions(register_module("positions", torch::nn::Embedding(positions, d))),
        norm1(register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})))),
        attn(register_module("attn", torch::nn::MultiheadAttention(d, heads))),
        norm2(register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})))),
        fc1(register_module("fc1", torch::nn::Linear(d, 4 * d))),
        fc2(register_module("fc2", torch::nn::Linear(4 * d, d))),
        head(register_module("head", torch::nn::Linear(d, vocab))) {
    position_ids = register_buffer("position_ids", torch::arange(positions));
  }

  // ids: [sequence, batch] token ids.
  torch::Tensor forward(const torch::Tensor &ids) {
    const auto pos = position_ids.narrow(0, 0, ids.size(0)).unsqueeze(1);
    auto x = embed(ids) + positions(pos);
    auto h = norm1(x);
    x = x + std::get<0>(attn(h, h, h));
    x = x + fc2(torch::gelu(fc1(norm2(x))));
    return head(x);
  }

  torch::nn::Embedding embed, positions;
  torch::nn::LayerNorm norm1;
  torch::nn::MultiheadAttention attn;
  torch::nn::LayerNorm norm2;
  torch::nn::Linear fc1, fc2, head;
  torch::Tensor position_ids;
};
TORCH_MODULE(TinyTransformer);

inline torch::Tensor sample_ids() {
  return torch::tensor({{1, 7}, {3, 49}, {0, 12}, {25, 25}, {8, 2}}, torch::kInt64);
}

// Parameters allocated through metaguard::tensor_options(): under a meta
// scope they never get storage, whatever their size.
struct AmbientLinearImpl : torch::nn::Module {
  explicit AmbientLinearImpl(const metaguard::Config &config) {
    const int64_t in = config.at("in").get<int64_t>(), out = config.at("out").get<int64_t>();
    weight = register_parameter("weight", torch::empty({out, in}, metaguard::tensor_options()));
    bias = register_parameter("bias", torch::empty({out}, metaguard::tensor_options()));
  }
  torch::Tensor forward(const torch::Tensor &x) { return torch::nn::functional::linear(x, weight, bias); }
  torch::Tensor weight, bias;
};
TORCH_MODULE(AmbientLinear);

} // namespace metaguard_test
