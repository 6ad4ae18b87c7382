// Llama in LibTorch with the names of transformers' LlamaForCausalLM: RMS
// norms, grouped-query attention, SiLU-gated MLP and rotary position
// embeddings whose inv_freq is a non-persistent buffer (computed from the
// config, never in a checkpoint). Default rotary scaling only.
#pragma once

#include "models/layers.h"

namespace models {

struct LlamaSettings {
  explicit LlamaSettings(const metaguard::Config &c)
      : vocab_size(c.at("vocab_size")), hidden_size(c.at("hidden_size")),
        intermediate_size(c.at("intermediate_size")),
        num_hidden_layers(c.at("num_hidden_layers")),
        num_attention_heads(c.at("num_attention_heads")),
        num_key_value_heads(
            config_int(c, "num_key_value_heads", num_attention_heads)),
        head_dim(config_int(c, "head_dim", hidden_size / num_attention_heads)),
        rms_norm_eps(c.value("rms_norm_eps", 1e-6)), rope_theta(theta_of(c)),
        hidden_act(c.value("hidden_act", std::string("silu"))),
        attention_bias(c.value("attention_bias", false)),
        mlp_bias(c.value("mlp_bias", false)),
        tie_word_embeddings(c.value("tie_word_embeddings", false)) {}
  // transformers 5 keeps it in rope_parameters, 4.x at the top level.
  static double theta_of(const metaguard::Config &c) {
    if (c.contains("rope_parameters") && c["rope_parameters"].is_object())
      return c["rope_parameters"].value("rope_theta", 10000.0);
    return c.value("rope_theta", 10000.0);
  }
  int64_t vocab_size, hidden_size, intermediate_size, num_hidden_layers,
      num_attention_heads, num_key_value_heads, head_dim;
  double rms_norm_eps, rope_theta;
  std::string hidden_act;
  bool attention_bias, mlp_bias, tie_word_embeddings;
};

// Normalises in float32 and scales in the input's dtype, as LlamaRMSNorm.
struct LlamaRMSNormImpl : torch::nn::Module {
  LlamaRMSNormImpl(int64_t size, double eps) : eps(eps) {
    weight = register_parameter("weight", torch::ones({size}));
  }
  torch::Tensor forward(const torch::Tensor &x) {
    auto h = x.to(torch::kFloat32);
    h = h * torch::rsqrt(h.pow(2).mean(-1, /*keepdim=*/true) + eps);
    return weight * h.to(x.scalar_type());
  }
  double eps;
  torch::Tensor weight;
};
TORCH_MODULE(LlamaRMSNorm);

struct LlamaRotaryEmbeddingImpl : metaguard::Module {
  explicit LlamaRotaryEmbeddingImpl(const LlamaSettings &s) {
    auto exponents =
        torch::arange(0, s.head_dim, 2, torch::kInt64).to(torch::kFloat32) /
        s.head_dim;
    inv_freq =
        register_buffer("inv_freq", 1.0 / torch::pow(s.rope_theta, exponents),
                        /*persistent=*/false);
  }
  // cos and sin [1, seq, head_dim] for positions 0..length-1, in float32.
  std::pair<torch::Tensor, torch::Tensor> forward(int64_t length) {
    auto positions = torch::arange(length, inv_freq.options());
    auto freqs = torch::outer(positions, inv_freq);
    auto angles = torch::cat({freqs, freqs}, -1).unsqueeze(0);
    return {angles.cos(), angles.sin()};
  }
  torch::Tensor inv_freq;
};
TORCH_MODULE(LlamaRotaryEmbedding);

inline torch::Tensor rotate_half(const torch::Tensor &x) {
  const int64_t half = x.size(-1) / 2;
  return torch::cat({-x.slice(-1, half), x.slice(-1, 0, half)}, -1);
}

inline torch::Tensor apply_rotary(const torch::Tensor &x,
                                  const torch::Tensor &cos,
                                  const torch::Tensor &sin) {
  auto c = cos.unsqueeze(1).to(x.scalar_type()),
       s = sin.unsqueeze(1).to(x.scalar_type());
  return x * c + rotate_half(x) * s;
}

struct LlamaAttentionImpl : torch::nn::Module {
  explicit LlamaAttentionImpl(const LlamaSettings &s)
      : heads(s.num_attention_heads), kv_heads(s.num_key_value_heads) {
    using torch::nn::Linear, torch::nn::LinearOptions;
    q_proj = register_module(
        "q_proj", Linear(LinearOptions(s.hidden_size, heads * s.head_dim)
                             .bias(s.attention_bias)));
    k_proj = register_module(
        "k_proj", Linear(LinearOptions(s.hidden_size, kv_heads * s.head_dim)
                             .bias(s.attention_bias)));
    v_proj = register_module(
        "v_proj", Linear(LinearOptions(s.hidden_size, kv_heads * s.head_dim)
                             .bias(s.attention_bias)));
    o_proj = register_module(
        "o_proj", Linear(LinearOptions(heads * s.head_dim, s.hidden_size)
                             .bias(s.attention_bias)));
  }
  torch::Tensor forward(const torch::Tensor &x, const torch::Tensor &cos,
                        const torch::Tensor &sin, const torch::Tensor &bias) {
    auto q = apply_rotary(split_heads(q_proj(x), heads), cos, sin);
    auto k = apply_rotary(split_heads(k_proj(x), kv_heads), cos, sin);
    auto v = split_heads(v_proj(x), kv_heads);
    const int64_t groups = heads / kv_heads; // grouped-query attention
    k = k.repeat_interleave(groups, 1);
    v = v.repeat_interleave(groups, 1);
    return o_proj(merge_heads(attend(q, k, v, bias)));
  }
  int64_t heads, kv_heads;
  torch::nn::Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr},
      o_proj{nullptr};
};
TORCH_MODULE(LlamaAttention);

struct LlamaMLPImpl : torch::nn::Module {
  explicit LlamaMLPImpl(const LlamaSettings &s) : act(s.hidden_act) {
    using torch::nn::Linear, torch::nn::LinearOptions;
    gate_proj = register_module(
        "gate_proj", Linear(LinearOptions(s.hidden_size, s.intermediate_size)
                                .bias(s.mlp_bias)));
    up_proj = register_module(
        "up_proj", Linear(LinearOptions(s.hidden_size, s.intermediate_size)
                              .bias(s.mlp_bias)));
    down_proj = register_module(
        "down_proj", Linear(LinearOptions(s.intermediate_size, s.hidden_size)
                                .bias(s.mlp_bias)));
  }
  torch::Tensor forward(const torch::Tensor &x) {
    return down_proj(activation(act, gate_proj(x)) * up_proj(x));
  }
  std::string act;
  torch::nn::Linear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};
};
TORCH_MODULE(LlamaMLP);

struct LlamaDecoderLayerImpl : torch::nn::Module {
  explicit LlamaDecoderLayerImpl(const LlamaSettings &s) {
    self_attn = register_module("self_attn", LlamaAttention(s));
    mlp = register_module("mlp", LlamaMLP(s));
    input_layernorm = register_module(
        "input_layernorm", LlamaRMSNorm(s.hidden_size, s.rms_norm_eps));
    post_attention_layernorm =
        register_module("post_attention_layernorm",
                        LlamaRMSNorm(s.hidden_size, s.rms_norm_eps));
  }
  torch::Tensor forward(torch::Tensor x, const torch::Tensor &cos,
                        const torch::Tensor &sin, const torch::Tensor &bias) {
    x = x + self_attn(input_layernorm(x), cos, sin, bias);
    return x + mlp(post_attention_layernorm(x));
  }
  LlamaAttention self_attn{nullptr};
  LlamaMLP mlp{nullptr};
  LlamaRMSNorm input_layernorm{nullptr}, post_attention_layernorm{nullptr};
};
TORCH_MODULE(LlamaDecoderLayer);

struct LlamaModelImpl : metaguard::PreTrainedModel {
  explicit LlamaModelImpl(const LlamaSettings &s) {
    embed_tokens = register_module(
        "embed_tokens", torch::nn::Embedding(s.vocab_size, s.hidden_size));
    layers = register_module("layers", torch::nn::ModuleList());
    for (int64_t i = 0; i < s.num_hidden_layers; ++i)
      layers->push_back(LlamaDecoderLayer(s));
    norm = register_module("norm", LlamaRMSNorm(s.hidden_size, s.rms_norm_eps));
    rotary_emb = register_module("rotary_emb", LlamaRotaryEmbedding(s));
  }
  std::string base_model_prefix() const override { return "model"; }
  torch::Tensor forward(const torch::Tensor &input_ids) {
    auto x = embed_tokens(input_ids);
    const int64_t length = input_ids.size(1);
    auto [cos, sin] = rotary_emb(length);
    const auto bias = causal_bias(length, x.scalar_type(), x.device());
    for (const auto &layer : *layers)
      x = layer->as<LlamaDecoderLayer>()->forward(x, cos, sin, bias);
    return norm(x);
  }
  torch::nn::Embedding embed_tokens{nullptr};
  torch::nn::ModuleList layers{nullptr};
  LlamaRMSNorm norm{nullptr};
  LlamaRotaryEmbedding rotary_emb{nullptr};
};
TORCH_MODULE(LlamaModel);

struct LlamaForCausalLMImpl : metaguard::PreTrainedModel {
  explicit LlamaForCausalLMImpl(const metaguard::Config &config)
      : settings(config) {
    model = register_module("model", LlamaModel(settings));
    lm_head = register_module(
        "lm_head",
        Projection(settings.hidden_size, settings.vocab_size,
                   /*with_bias=*/false,
                   settings.tie_word_embeddings ? model->embed_tokens->weight
                                                : torch::Tensor()));
  }
  std::string base_model_prefix() const override { return "model"; }
  metaguard::TiedWeights tied_weights_keys() const override {
    if (!settings.tie_word_embeddings)
      return {};
    return {{"lm_head.weight", "model.embed_tokens.weight"}};
  }
  torch::Tensor forward(const torch::Tensor &input_ids) {
    return lm_head(model(input_ids));
  }
  LlamaSettings settings;
  LlamaModel model{nullptr};
  Projection lm_head{nullptr};
};
TORCH_MODULE(LlamaForCausalLM);

} // namespace models
