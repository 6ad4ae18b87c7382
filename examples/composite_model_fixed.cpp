// The captioning model of composite_model_meta_scope.cpp, repaired: nothing
// that loads weights runs inside a meta scope, so
// metaguard-from-pretrained-in-meta-scope reports nothing here.
//
// Two ways, as in transformers/accelerate:
//  1. the constructor only *builds* the text encoder from its config
//     (Model(config)), and the whole model is loaded with one from_pretrained()
//     call outside any meta scope;
//  2. the skeleton is built under init_empty_weights() with from_config, and
//     a pretrained part is loaded after the scope has ended, or with an
//     explicit device map (which wins over the ambient device).
#include <metaguard/metaguard.h>
#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <iostream>

#include "models/text_encoder.h"

namespace fs = std::filesystem;

using models::TextEncoder;

struct CaptionModelImpl : torch::nn::Module {
  explicit CaptionModelImpl(const metaguard::Config &config) {
    // Built from the config: under a meta scope this allocates nothing.
    text_encoder =
        register_module("text_encoder", TextEncoder(config.at("text_config")));
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

  // 1. One load, outside any meta scope: from_pretrained builds the model on
  //    meta itself and materialises every parameter from the checkpoint.
  auto model = metaguard::from_pretrained<CaptionModel>(model_dir);

  // 2. An empty skeleton first, then the pretrained encoder once the scope
  //    has ended...
  const metaguard::Config config = metaguard::load_config(model_dir);
  auto skeleton = [&] {
    auto guard = metaguard::init_empty_weights();
    return metaguard::from_config<CaptionModel>(config);
  }();
  auto encoder = metaguard::from_pretrained<TextEncoder>(encoder_dir);

  // ...or inside a scope, with an explicit device map.
  {
    auto guard = metaguard::init_empty_weights();
    metaguard::LoadOptions options;
    options.device_map = metaguard::DeviceMap::on(torch::kCPU);
    auto on_cpu = metaguard::from_pretrained<TextEncoder>(encoder_dir, options);
    std::cout << "loaded " << on_cpu->name() << '\n';
  }

  std::cout << "loaded " << model->name() << ", " << skeleton->name() << ", "
            << encoder->name() << '\n';
  return 0;
}
