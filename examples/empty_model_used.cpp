// A text encoder whose skeleton is built the recommended way, from its config
// under init_empty_weights() (no memory allocated), and then used before its
// weights are loaded: saved, run, and run again inside a service object whose
// constructor builds it the same way.
//
// The bug: an empty model has shapes but no data until something gives it
// weights (load_weights, load_checkpoint_and_dispatch, torch::load, ...).
// Python reports it late, as "Cannot copy out of meta tensor; no data!";
// metaguard-empty-model-used reports each use at compile time, with notes at
// where the model was built empty and the scope that made it so. See
// empty_model_done_right.cpp for the repair.
#include <metaguard/metaguard.h>
#include <metaguard/saving.h>
#include <torch/torch.h>

#include <filesystem>
#include <iostream>

#include "models/text_encoder.h"

namespace fs = std::filesystem;

using models::TextEncoder;

// A service that keeps its encoder: the constructor builds the skeleton, and
// load() gives it its weights.
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
  // BUG: saved before anything gave it weights: a checkpoint of nothing.
  metaguard::save_pretrained(*encoder, out_dir);

  // BUG: a forward pass of the skeleton computes with tensors without data.
  const torch::Tensor tokens = torch::randint(0, 100, {1, 8}, torch::kLong);
  std::cout << encoder->forward(tokens).sizes() << '\n';
  metaguard::load_weights(*encoder, model_dir);

  // BUG: the service's encoder is still the skeleton its constructor built.
  Embedder embedder(config);
  std::cout << embedder.embed(tokens).sizes() << '\n';
  return 0;
}
