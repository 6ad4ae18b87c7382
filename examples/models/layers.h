// Pieces the example transformer models share: activations by their
// transformers names, attention, and a linear layer that can use another
// module's weight (weight tying).
#pragma once

#include <metaguard/metaguard.h>

#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace models {

// transformers' ACT2FN names used by BERT, GPT-2 and Llama configs.
inline torch::Tensor activation(const std::string &name,
                                const torch::Tensor &x) {
  if (name == "gelu")
    return torch::gelu(x);
  if (name == "gelu_new" || name == "gelu_pytorch_tanh")
    return torch::gelu(x, "tanh");
  if (name == "relu")
    return torch::relu(x);
  if (name == "silu" || name == "swish")
    return torch::silu(x);
  throw std::invalid_argument("unsupported activation '" + name +
                              "' in config.json");
}

// [batch, seq, heads * dim] -> [batch, heads, seq, dim]
inline torch::Tensor split_heads(const torch::Tensor &x, int64_t heads) {
  return x.view({x.size(0), x.size(1), heads, -1}).transpose(1, 2);
}

// [batch, heads, seq, dim] -> [batch, seq, heads * dim]
inline torch::Tensor merge_heads(const torch::Tensor &x) {
  return x.transpose(1, 2).contiguous().view({x.size(0), x.size(2), -1});
}

// Scaled dot-product attention in float32 arithmetic, as transformers'
// eager attention. `bias` is added to the scores ([batch or 1, 1, q, k]):
// zeros where attending is allowed, the dtype's lowest value elsewhere.
inline torch::Tensor attend(const torch::Tensor &q, const torch::Tensor &k,
                            const torch::Tensor &v, const torch::Tensor &bias) {
  auto scores = torch::matmul(q, k.transpose(-1, -2)) /
                std::sqrt(static_cast<double>(q.size(-1)));
  if (bias.defined())
    scores = scores + bias;
  auto probs = torch::softmax(scores, -1, torch::kFloat32).to(q.scalar_type());
  return torch::matmul(probs, v);
}

// The lowest finite value of a floating dtype (transformers' finfo(dtype).min):
// what masked scores get, so that softmax gives them zero weight.
inline double lowest(torch::Dtype dtype) {
  double value = 0;
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::kHalf, at::kBFloat16, dtype, "lowest", [&] {
        value = static_cast<double>(std::numeric_limits<scalar_t>::lowest());
      });
  return value;
}

// The score bias of a padding mask ([batch, keys], 1 = token, 0 = padding).
inline torch::Tensor padding_bias(const torch::Tensor &mask,
                                  torch::Dtype dtype) {
  auto keep = mask.to(torch::kBool).unsqueeze(1).unsqueeze(2);
  return torch::zeros(keep.sizes(),
                      torch::TensorOptions().dtype(dtype).device(mask.device()))
      .masked_fill(keep.logical_not(), lowest(dtype));
}

// The score bias of causal attention over `length` positions.
inline torch::Tensor causal_bias(int64_t length, torch::Dtype dtype,
                                 torch::Device device) {
  auto future =
      torch::ones({length, length},
                  torch::TensorOptions().dtype(torch::kBool).device(device))
          .triu(1);
  return torch::zeros({1, 1, length, length},
                      torch::TensorOptions().dtype(dtype).device(device))
      .masked_fill(future, lowest(dtype));
}

// y = x W^T + b, where W may be a tensor another module owns: registering
// the same tensor in both modules ties them (one tensor, two names), which
// is what the model's tied_weights_keys declares.
struct ProjectionImpl : torch::nn::Module {
  ProjectionImpl(int64_t in, int64_t out, bool with_bias,
                 torch::Tensor tied_weight = {}) {
    weight = register_parameter("weight", tied_weight.defined()
                                              ? tied_weight
                                              : torch::randn({out, in}) * 0.02);
    if (with_bias)
      bias = register_parameter("bias", torch::zeros({out}));
  }
  torch::Tensor forward(const torch::Tensor &x) {
    return torch::linear(x, weight, bias);
  }
  torch::Tensor weight, bias;
};
TORCH_MODULE(Projection);

inline int64_t config_int(const metaguard::Config &config, const char *key,
                          int64_t fallback) {
  const auto it = config.find(key);
  return it == config.end() || it->is_null() ? fallback : it->get<int64_t>();
}

} // namespace models
