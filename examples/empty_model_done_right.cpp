// The text encoder of empty_model_used.cpp, repaired: the skeleton is built
// empty under init_empty_weights(), inspected (names, shapes, sizes: all
// there without data), given its weights, and only then run and saved; the
// service loads its encoder before embedding. metaguard-empty-model-used
// reports nothing here.
#include <metaguard/metaguard.h>
#include <metaguard/saving.h>
#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <iostream>

#include "models/text_encoder.h"

namespace fs = std::filesystem;

using models::TextEncoder;

class Embedder {
public:
  explicit Embedder(const metaguard::Config &config) {
    auto guard = metaguard::init_empty_weights();
    encoder_ = metaguard::from_config<TextEncoder>(config);
  }
  void load(const fs::path &dir) { metaguard::load_weights(*encoder_, dir); }
  torch::Tensor embed(const torch::Tensor &tokens) {
    return encoder_->forward(tokens).mean(1);
  }

private:
  TextEncoder encoder_{nullptr};
};

int main(int argc, char **argv) {
  const fs::path model_dir = argc > 1 ? argv[1] : "checkpoints/text-encoder";
  const fs::path out_dir = argc > 2 ? argv[2] : "exported/text-encoder";
  const metaguard::Config config = metaguard::load_config(model_dir);

  TextEncoder encoder{nullptr};
  {
    auto guard = metaguard::init_empty_weights();
    encoder = metaguard::from_config<TextEncoder>(config);
  }
  // What the skeleton is for: its structure, without allocating anything.
  std::int64_t count = 0;
  for (const auto &item : encoder->named_parameters()) {
    std::cout << item.key() << ' ' << item.value().sizes() << '\n';
    count += item.value().numel();
  }
  std::cout << *encoder << "\n" << count << " parameters\n";

  // Its weights first; then it may run, move and be saved.
  metaguard::load_weights(*encoder, model_dir);
  const torch::Tensor tokens = torch::randint(0, 100, {1, 8}, torch::kLong);
  std::cout << encoder->forward(tokens).sizes() << '\n';
  metaguard::save_pretrained(*encoder, out_dir);

  Embedder embedder(config);
  embedder.load(model_dir);
  std::cout << embedder.embed(tokens).sizes() << '\n';
  return 0;
}
