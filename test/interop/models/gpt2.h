// GPT-2 in LibTorch with the names of transformers' GPT2LMHeadModel: the LM
// head is tied to the token embeddings (tie_word_embeddings), so its
// checkpoints hold transformer.wte.weight and no lm_head.weight.
#pragma once

#include "models/layers.h"

namespace models {

struct GPT2Settings {
  explicit GPT2Settings(const metaguard::Config &c)
      : vocab_size(c.at("vocab_size")), n_positions(c.at("n_positions")),
        n_embd(c.at("n_embd")), n_layer(c.at("n_layer")),
        n_head(c.at("n_head")), n_inner(config_int(c, "n_inner", 4 * n_embd)),
        layer_norm_epsilon(c.value("layer_norm_epsilon", 1e-5)),
        activation_function(
            c.value("activation_function", std::string("gelu_new"))),
        tie_word_embeddings(c.value("tie_word_embeddings", true)) {}
  int64_t vocab_size, n_positions, n_embd, n_layer, n_head, n_inner;
  double layer_norm_epsilon;
  std::string activation_function;
  bool tie_word_embeddings;
};

// transformers' Conv1D: a linear layer whose weight is stored [in, out].
struct Conv1DImpl : torch::nn::Module {
  Conv1DImpl(int64_t in, int64_t out) {
    weight = register_parameter("weight", torch::randn({in, out}) * 0.02);
    bias = register_parameter("bias", torch::zeros({out}));
  }
  torch::Tensor forward(const torch::Tensor &x) {
    return torch::matmul(x, weight) + bias;
  }
  torch::Tensor weight, bias;
};
TORCH_MODULE(Conv1D);

inline torch::nn::LayerNorm gpt2_layer_norm(const GPT2Settings &s) {
  return torch::nn::LayerNorm(
      torch::nn::LayerNormOptions({s.n_embd}).eps(s.layer_norm_epsilon));
}

struct GPT2AttentionImpl : torch::nn::Module {
  explicit GPT2AttentionImpl(const GPT2Settings &s) : heads(s.n_head) {
    c_attn = register_module("c_attn", Conv1D(s.n_embd, 3 * s.n_embd));
    c_proj = register_module("c_proj", Conv1D(s.n_embd, s.n_embd));
  }
  torch::Tensor forward(const torch::Tensor &x, const torch::Tensor &bias) {
    auto qkv = c_attn(x).chunk(3, -1);
    return c_proj(merge_heads(attend(split_heads(qkv[0], heads),
                                     split_heads(qkv[1], heads),
                                     split_heads(qkv[2], heads), bias)));
  }
  int64_t heads;
  Conv1D c_attn{nullptr}, c_proj{nullptr};
};
TORCH_MODULE(GPT2Attention);

struct GPT2MLPImpl : torch::nn::Module {
  explicit GPT2MLPImpl(const GPT2Settings &s) : act(s.activation_function) {
    c_fc = register_module("c_fc", Conv1D(s.n_embd, s.n_inner));
    c_proj = register_module("c_proj", Conv1D(s.n_inner, s.n_embd));
  }
  torch::Tensor forward(const torch::Tensor &x) {
    return c_proj(activation(act, c_fc(x)));
  }
  std::string act;
  Conv1D c_fc{nullptr}, c_proj{nullptr};
};
TORCH_MODULE(GPT2MLP);

struct GPT2BlockImpl : torch::nn::Module {
  explicit GPT2BlockImpl(const GPT2Settings &s) {
    ln_1 = register_module("ln_1", gpt2_layer_norm(s));
    attn = register_module("attn", GPT2Attention(s));
    ln_2 = register_module("ln_2", gpt2_layer_norm(s));
    mlp = register_module("mlp", GPT2MLP(s));
  }
  torch::Tensor forward(torch::Tensor x, const torch::Tensor &bias) {
    x = x + attn(ln_1(x), bias);
    return x + mlp(ln_2(x));
  }
  torch::nn::LayerNorm ln_1{nullptr}, ln_2{nullptr};
  GPT2Attention attn{nullptr};
  GPT2MLP mlp{nullptr};
};
TORCH_MODULE(GPT2Block);

struct GPT2ModelImpl : metaguard::PreTrainedModel {
  explicit GPT2ModelImpl(const GPT2Settings &s) {
    wte = register_module("wte", torch::nn::Embedding(s.vocab_size, s.n_embd));
    wpe = register_module("wpe", torch::nn::Embedding(s.n_positions, s.n_embd));
    h = register_module("h", torch::nn::ModuleList());
    for (int64_t i = 0; i < s.n_layer; ++i)
      h->push_back(GPT2Block(s));
    ln_f = register_module("ln_f", gpt2_layer_norm(s));
  }
  std::string base_model_prefix() const override { return "transformer"; }
  torch::Tensor forward(const torch::Tensor &input_ids) {
    const int64_t length = input_ids.size(1);
    auto x = wte(input_ids) + wpe(torch::arange(length, input_ids.options()));
    const auto bias = causal_bias(length, x.scalar_type(), x.device());
    for (const auto &block : *h)
      x = block->as<GPT2Block>()->forward(x, bias);
    return ln_f(x);
  }
  torch::nn::Embedding wte{nullptr}, wpe{nullptr};
  torch::nn::ModuleList h{nullptr};
  torch::nn::LayerNorm ln_f{nullptr};
};
TORCH_MODULE(GPT2Model);

struct GPT2LMHeadModelImpl : metaguard::PreTrainedModel {
  explicit GPT2LMHeadModelImpl(const metaguard::Config &config)
      : settings(config) {
    transformer = register_module("transformer", GPT2Model(settings));
    lm_head = register_module(
        "lm_head",
        Projection(settings.n_embd, settings.vocab_size, /*with_bias=*/false,
                   settings.tie_word_embeddings ? transformer->wte->weight
                                                : torch::Tensor()));
  }
  std::string base_model_prefix() const override { return "transformer"; }
  metaguard::TiedWeights tied_weights_keys() const override {
    if (!settings.tie_word_embeddings)
      return {};
    return {{"lm_head.weight", "transformer.wte.weight"}};
  }
  // Older GPT-2 checkpoints hold the causal-mask buffers.
  std::vector<std::string> keys_to_ignore_on_load_unexpected() const override {
    return {"attn.bias", "crossattention.bias"};
  }
  torch::Tensor forward(const torch::Tensor &input_ids) {
    return lm_head(transformer(input_ids));
  }
  GPT2Settings settings;
  GPT2Model transformer{nullptr};
  Projection lm_head{nullptr};
};
TORCH_MODULE(GPT2LMHeadModel);

} // namespace models
