// Fuzz target: the checkpoint-to-model path. The input is model.safetensors
// of a small model; it is loaded in place (zero-copy, converting to another
// dtype, non-strict, and with one layer offloaded to disk), then the model
// runs a forward pass.
#include "fuzz_util.h"

#include <metaguard/metaguard.h>

#include <torch/torch.h>

using namespace metaguard_fuzz;

namespace {

struct SmallImpl : torch::nn::Module {
  SmallImpl()
      : emb(register_module("emb", torch::nn::Embedding(6, 4))),
        fc(register_module("fc", torch::nn::Linear(4, 3))) {
    mask = register_buffer("mask", torch::ones({3}, torch::kBool));
  }
  torch::Tensor forward(const torch::Tensor &ids) {
    metaguard::OnloadGuard onload(*this);
    return fc(emb(ids)).masked_fill(mask.logical_not(), 0);
  }
  torch::nn::Embedding emb;
  torch::nn::Linear fc;
  torch::Tensor mask;
};
TORCH_MODULE(Small);

void load_and_run(const std::filesystem::path &dir, const metaguard::LoadOptions &options) {
  Small model;
  expect_typed_errors([&] {
    metaguard::load_weights(*model, dir, options);
    torch::NoGradGuard no_grad;
    const torch::Tensor out = model->forward(torch::tensor({0, 5, 2}, torch::kInt64));
    if (out.sizes() != c10::IntArrayRef({3, 3}))
      violated("the loaded model's output has the wrong shape");
    (void)out.sum().item<double>();
  });
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const auto dir = scratch() / "model";
  std::filesystem::create_directories(dir);
  write_file(dir / metaguard::kSafetensorsWeightsName, as_text(data, size));
  load_and_run(dir, {});
  metaguard::LoadOptions converting;
  converting.dtype = torch::kFloat64;
  load_and_run(dir, converting);
  metaguard::LoadOptions lenient;
  lenient.strict = false;
  load_and_run(dir, lenient);
  metaguard::LoadOptions offloaded;
  offloaded.device_map = {{"fc", metaguard::Placement::disk()}, {"", torch::kCPU}};
  offloaded.strict = false;
  load_and_run(dir, offloaded);
  return 0;
}
