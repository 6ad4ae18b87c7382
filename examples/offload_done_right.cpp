// A decoder too big for memory, run with half of its blocks offloaded to
// disk, the way metaguard expects:
//  - blocks open an OnloadGuard at the top of forward; leaf modules the model
//    calls directly go through run_onloaded;
//  - the model derives from metaguard::PreTrainedModel, so moving it while
//    parameters are offloaded is refused instead of losing them;
//  - placement changes go through the device map (from_pretrained with a new
//    LoadOptions.device_map, or dispatch_model with a new map);
//  - values of offloaded parameters are read with load_offloaded_parameter;
//  - save_pretrained writes every tensor, offloaded ones included.
// metaguard-offloaded-parameter-move reports nothing in this file.
#include <metaguard/loading.h>
#include <metaguard/metaguard.h>
#include <metaguard/saving.h>

#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <iostream>

namespace fs = std::filesystem;

struct DecoderBlockImpl : torch::nn::Module {
  explicit DecoderBlockImpl(std::int64_t hidden)
      : norm(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden})))),
        mix(register_module("mix", torch::nn::Linear(hidden, hidden))),
        up(register_module("up", torch::nn::Linear(hidden, 4 * hidden))),
        down(register_module("down", torch::nn::Linear(4 * hidden, hidden))) {}

  torch::Tensor forward(torch::Tensor x) {
    // Offloaded weights of this block (and its submodules) are loaded for the
    // duration of this call and return to disk when it ends.
    metaguard::OnloadGuard onload(*this);
    x = x.to(onload.device());
    x = x + torch::tanh(mix(norm(x)));
    return x + down(torch::gelu(up(x)));
  }

  torch::nn::LayerNorm norm;
  torch::nn::Linear mix, up, down;
};
TORCH_MODULE(DecoderBlock);

struct DecoderImpl : metaguard::PreTrainedModel {
  explicit DecoderImpl(const metaguard::Config &config) {
    const auto vocab = config.at("vocab_size").get<std::int64_t>();
    const auto hidden = config.at("hidden_size").get<std::int64_t>();
    embed = register_module("embed", torch::nn::Embedding(vocab, hidden));
    blocks = register_module("blocks", torch::nn::ModuleList());
    for (int i = 0; i < config.at("num_layers").get<int>(); ++i)
      blocks->push_back(DecoderBlock(hidden));
    head = register_module("head", torch::nn::Linear(hidden, vocab));
  }

  torch::Tensor forward(const torch::Tensor &tokens) {
    auto h = metaguard::run_onloaded(embed, tokens);
    for (const auto &block : *blocks)
      h = block->as<DecoderBlockImpl>()->forward(h);
    return metaguard::run_onloaded(head, h);
  }

  torch::nn::Embedding embed{nullptr};
  torch::nn::ModuleList blocks{nullptr};
  torch::nn::Linear head{nullptr};
};
TORCH_MODULE(Decoder);

int main(int argc, char **argv) {
  const fs::path work = argc > 1 ? fs::path(argv[1]) : fs::temp_directory_path() / "metaguard_offload_done_right";
  fs::remove_all(work);
  torch::manual_seed(0);
  const metaguard::Config config = {{"vocab_size", 1000}, {"hidden_size", 64}, {"num_layers", 6}};

  // A checkpoint to start from.
  Decoder original(config);
  metaguard::save_pretrained(*original, work / "checkpoint", {"5GB", config});

  // Load with the last three blocks and the head on disk: they are read from
  // the checkpoint shard when needed, never held in memory.
  metaguard::LoadOptions options;
  options.device_map = {{"", "cpu"}, {"blocks.3", "disk"}, {"blocks.4", "disk"}, {"blocks.5", "disk"},
                        {"head", "disk"}};
  Decoder model = metaguard::from_pretrained<Decoder>(work / "checkpoint", options);

  torch::NoGradGuard no_grad;
  const auto tokens = torch::randint(0, 1000, {2, 16}, torch::kLong);
  const torch::Tensor logits = model->forward(tokens);
  std::cout << "offloaded forward matches the in-memory model: " << std::boolalpha
            << torch::equal(logits, original->forward(tokens)) << "\n";

  // Reading an offloaded weight: a CPU copy, the parameter stays offloaded.
  const torch::Tensor head_weight = metaguard::load_offloaded_parameter(*model, "head.weight");
  std::cout << "head.weight norm: " << head_weight.norm().item<float>() << "\n";

  // Changing placement: a new device map, not model->to().
  metaguard::dispatch_model(*model, {{"", "cpu"}, {"blocks.0", "disk"}}, work / "offload");
  std::cout << "offloaded now: " << metaguard::offloaded_parameter_names(*model).size() << " parameters\n";

  // Saving a dispatched model writes every tensor; offloaded ones are loaded
  // one shard at a time after verify_dispatch has checked them.
  metaguard::verify_dispatch(*model);
  metaguard::save_pretrained(*model, work / "saved", {"64KB", config});

  // Everything back in memory; now the model may move freely.
  metaguard::dispatch_model(*model, metaguard::DeviceMap::on(torch::kCPU));
  model->to(torch::kCPU);
  Decoder reloaded = metaguard::from_pretrained<Decoder>(work / "saved");
  std::cout << "saved and reloaded model matches: " << torch::equal(reloaded->forward(tokens), logits) << "\n";
  fs::remove_all(work);
  return 0;
}
