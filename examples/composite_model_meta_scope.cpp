// A captioning model whose constructor loads a pretrained text encoder, built
// under init_empty_weights() so that its (large) skeleton allocates nothing.
//
// The bug: the constructor runs inside the meta scope, so the nested
// from_pretrained() runs there too. In PyTorch this silently leaves the
// encoder's weights on the meta device (no data); metaguard's runtime throws
// MetaDeviceError, and metaguard-from-pretrained-in-meta-scope reports it at
// compile time, at the construction, with notes at the scope and at the
// inner from_pretrained(). See composite_model_fixed.cpp for the repair.
#include <metaguard/metaguard.h>
#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <iostream>

#include "models/text_encoder.h"

namespace fs = std::filesystem;

using models::TextEncoder;

struct CaptionModelImpl : torch::nn::Module {
  CaptionModelImpl(const metaguard::Config &config, const fs::path &encoder_dir) {
    // The text tower comes pretrained from its own checkpoint...
    text_encoder = register_module(
        "text_encoder", metaguard::from_pretrained<TextEncoder>(encoder_dir));
    // ...and the head is new.
    const auto hidden = config.at("hidden_size").get<std::int64_t>();
    const auto labels = config.at("num_labels").get<std::int64_t>();
    head = register_module("head", torch::nn::Linear(hidden, labels));
  }
  torch::Tensor forward(const torch::Tensor &tokens) {
    return head(text_encoder(tokens).mean(1));
  }
  TextEncoder text_encoder{nullptr};
  torch::nn::Linear head{nullptr};
};
TORCH_MODULE(CaptionModel);

int main(int argc, char **argv) {
  const fs::path model_dir = argc > 1 ? argv[1] : "checkpoints/caption-model";
  const fs::path encoder_dir = argc > 2 ? argv[2] : "checkpoints/text-encoder";
  const metaguard::Config config = metaguard::load_config(model_dir);

  // Build the skeleton without allocating, then materialise it from disk.
  auto guard = metaguard::init_empty_weights();
  CaptionModel model(config, encoder_dir); // BUG: loads the encoder on meta.

  std::cout << "built " << model->name() << '\n';
  return 0;
}
