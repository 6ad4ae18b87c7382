// Each way of breaking a dispatched model that
// metaguard-offloaded-parameter-move reports, and what the runtime does when
// it runs anyway. Every marked line is a mistake; offload_done_right.cpp shows
// the fixes. The program runs each mistake and prints the error it gets.
#include <metaguard/loading.h>
#include <metaguard/metaguard.h>
#include <metaguard/saving.h>

#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <iostream>

namespace fs = std::filesystem;

struct BlockImpl : torch::nn::Module {
  explicit BlockImpl(std::int64_t hidden)
      : fc(register_module("fc", torch::nn::Linear(hidden, hidden))),
        out(register_module("out", torch::nn::Linear(hidden, hidden))) {}
  torch::Tensor forward(torch::Tensor x) {
    metaguard::OnloadGuard onload(*this);
    return x + out(torch::relu(fc(x)));
  }
  torch::nn::Linear fc, out;
};
TORCH_MODULE(Block);

struct ClassifierImpl : metaguard::PreTrainedModel {
  explicit ClassifierImpl(const metaguard::Config &config) {
    const auto hidden = config.at("hidden_size").get<std::int64_t>();
    blocks = register_module("blocks", torch::nn::ModuleList());
    for (int i = 0; i < config.at("num_layers").get<int>(); ++i)
      blocks->push_back(Block(hidden));
    head = register_module("head", torch::nn::Linear(hidden, config.at("num_labels").get<std::int64_t>()));
  }
  torch::Tensor forward(torch::Tensor x) {
    for (const auto &block : *blocks)
      x = block->as<BlockImpl>()->forward(x);
    return metaguard::run_onloaded(head, x);
  }
  torch::nn::ModuleList blocks{nullptr};
  torch::nn::Linear head{nullptr};
};
TORCH_MODULE(Classifier);

namespace {

const metaguard::Config kConfig = {{"hidden_size", 32}, {"num_layers", 4}, {"num_labels", 3}};

Classifier load_half_on_disk(const fs::path &checkpoint) {
  metaguard::LoadOptions options;
  options.device_map = {{"", "cpu"}, {"blocks.2", "disk"}, {"blocks.3", "disk"}};
  return metaguard::from_pretrained<Classifier>(checkpoint, options);
}

void attempt(const char *what, const std::function<void()> &mistake) {
  try {
    mistake();
    std::cout << "[not caught] " << what << "\n";
  } catch (const metaguard::OffloadError &e) {
    std::cout << "[OffloadError] " << what << ":\n  " << e.what() << "\n\n";
  } catch (const std::exception &e) {
    std::cout << "[error] " << what << ":\n  " << e.what() << "\n\n";
  }
}

// Mistake 1: moving a dispatched model by hand. The offloaded parameters
// would leave their hooks behind; PreTrainedModel::to refuses.
void move_dispatched_model(const fs::path &checkpoint) {
  Classifier model = load_half_on_disk(checkpoint);
  model->to(torch::kCPU); // mistake: use dispatch_model with a new device map
}

// Mistake 2: writing into parameters from named_parameters(). Offloaded ones
// load themselves for each operator: copy_ writes into a copy that is lost
// (OffloadError in debug builds); set_data in a guard replaces their data.
void overwrite_offloaded_parameters(const fs::path &checkpoint) {
  Classifier model = load_half_on_disk(checkpoint);
  torch::NoGradGuard no_grad;
  for (auto &item : model->named_parameters()) {
    if (item.key().find("fc.bias") == std::string::npos)
      continue;
    item.value().copy_(torch::zeros_like(item.value())); // mistake: lost (debug builds: OffloadError)
    metaguard::OnloadGuard onload(*model);
    item.value().set_data(torch::zeros({32})); // mistake: replaces an offloaded parameter
  }
  model->forward(torch::randn({1, 32})); // reported when blocks 2 and 3 are materialised
}

// Mistake 3: stripping hooks, then saving or reading the weights.
void strip_hooks_then_save(const fs::path &checkpoint, const fs::path &out) {
  Classifier model = load_half_on_disk(checkpoint);
  metaguard::remove_hook_from_module(*model, /*recurse=*/true); // mistake
  metaguard::save_pretrained(*model, out);                      // would save empty weights
}

void strip_hooks_then_read(const fs::path &checkpoint) {
  Classifier model = load_half_on_disk(checkpoint);
  metaguard::remove_hook_from_module(*model->blocks[2], /*recurse=*/true); // mistake
  metaguard::load_offloaded_parameter(*model, "blocks.2.fc.weight");
}

} // namespace

int main(int argc, char **argv) {
  const fs::path work = argc > 1 ? fs::path(argv[1]) : fs::temp_directory_path() / "metaguard_offload_mistakes";
  fs::remove_all(work);
  Classifier original(kConfig);
  metaguard::save_pretrained(*original, work / "checkpoint", {"5GB", kConfig});

  attempt("model->to(cpu) on a dispatched model", [&] { move_dispatched_model(work / "checkpoint"); });
  attempt("set_data on an offloaded parameter",
          [&] { overwrite_offloaded_parameters(work / "checkpoint"); });
  attempt("save_pretrained after remove_hook_from_module",
          [&] { strip_hooks_then_save(work / "checkpoint", work / "saved"); });
  attempt("load_offloaded_parameter after remove_hook_from_module",
          [&] { strip_hooks_then_read(work / "checkpoint"); });
  fs::remove_all(work);
  return 0;
}
