// A small transformer-like model for the offload tests: embedding, N
// residual blocks (norm, attention-like mixing, MLP) and a head. Each block's
// forward opens an OnloadGuard, as a real model's would.
#pragma once

#include <metaguard/metaguard.h>

#include <torch/torch.h>

namespace tiny {

struct BlockImpl : torch::nn::Module {
  explicit BlockImpl(std::int64_t d)
      : norm(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})))),
        attn(register_module("attn", torch::nn::Linear(d, d))),
        mlp_in(register_module("mlp_in", torch::nn::Linear(d, 4 * d))),
        mlp_out(register_module("mlp_out", torch::nn::Linear(4 * d, d))) {}

  torch::Tensor forward(torch::Tensor x) {
    metaguard::OnloadGuard onload(*this);
    x = x.to(onload.device());
    auto h = x + torch::softmax(attn(norm(x)), -1);
    return h + mlp_out(torch::gelu(mlp_in(h)));
  }

  torch::nn::LayerNorm norm;
  torch::nn::Linear attn, mlp_in, mlp_out;
};
TORCH_MODULE(Block);

struct TinyLM : metaguard::PreTrainedModel {
  TinyLM(std::int64_t vocab, std::int64_t d, int n_blocks)
      : embed(register_module("embed", torch::nn::Embedding(vocab, d))),
        blocks(register_module("blocks", torch::nn::ModuleList())),
        head(register_module("head", torch::nn::Linear(d, vocab))) {
    for (int i = 0; i < n_blocks; ++i)
      blocks->push_back(Block(d));
  }

  torch::Tensor forward(const torch::Tensor &ids) {
    auto h = metaguard::run_onloaded(embed, ids);
    for (const auto &block : *blocks)
      h = block->as<BlockImpl>()->forward(h);
    return metaguard::run_onloaded(head, h);
  }

  torch::nn::Embedding embed;
  torch::nn::ModuleList blocks;
  torch::nn::Linear head;
};

// Copies every parameter of `from` into `to` (same architecture).
inline void copy_parameters(const torch::nn::Module &from, torch::nn::Module &to) {
  torch::NoGradGuard no_grad;
  auto dst = to.named_parameters(true);
  for (const auto &item : from.named_parameters(true))
    dst[item.key()].copy_(item.value());
}

// Turns every parameter of `module` into a meta tensor in place: a model
// skeleton that was never loaded.
inline void make_meta(torch::nn::Module &module) {
  for (auto &p : module.parameters(true))
    p.unsafeGetTensorImpl()->shallow_copy_from(
        torch::empty(p.sizes(), p.options().device(torch::kMeta)).getIntrusivePtr());
}

} // namespace tiny
