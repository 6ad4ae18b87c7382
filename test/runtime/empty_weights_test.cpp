// init_empty_weights() with buffers excluded (the default) as accelerate's
// every parameter on meta, every buffer real with its
// constructed value, for stock torch::nn layers, for layers allocating
// through metaguard::tensor_options(), and for Model(config) called directly.
// Memory figures are in bench/bench_empty_weights.cpp, not here.
#include <metaguard/metaguard.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <thread>

namespace {
namespace empty_weights_test {

void expect_parameters_meta(const torch::nn::Module &module) {
  for (const auto &item : module.named_parameters())
    EXPECT_TRUE(item.value().is_meta()) << item.key();
}

// Llama-style rotary embedding: its inverse frequencies are a buffer computed
// in the constructor, never saved in checkpoints.
torch::Tensor expected_inv_freq(int64_t dim) {
  std::vector<float> values;
  for (int64_t i = 0; i < dim; i += 2)
    values.push_back(static_cast<float>(1.0 / std::pow(10000.0, static_cast<double>(i) / dim)));
  return torch::tensor(values);
}

struct AttentionImpl : torch::nn::Module {
  explicit AttentionImpl(const metaguard::Config &config) {
    const int64_t d = config.at("hidden").get<int64_t>();
    // A layer written for metaguard: parameters through tensor_options().
    q = register_parameter("q", torch::empty({d, d}, metaguard::tensor_options()));
    torch::nn::init::normal_(q, 0.0, 0.02);
    // Stock layers, a norm with running statistics.
    o = register_module("o", torch::nn::Linear(d, d));
    norm = register_module("norm", torch::nn::BatchNorm1d(d));
    // A parameter initialised before registration, as user code often does.
    gate = register_parameter("gate", torch::randn({d}));
    // Buffers with plain factories: they follow the scope (real here).
    inv_freq = register_buffer(
        "inv_freq",
        1.0 / torch::pow(10000.0, torch::arange(0, d, 2).to(torch::kFloat32) / static_cast<double>(d)));
    mask = register_buffer("mask", torch::ones({4, 4}).tril());
  }
  torch::Tensor q, gate, inv_freq, mask;
  torch::nn::Linear o{nullptr};
  torch::nn::BatchNorm1d norm{nullptr};
};
TORCH_MODULE(Attention);

metaguard::Config config() { return {{"hidden", 8}}; }

void expect_real_buffers(const AttentionImpl &model) {
  EXPECT_TRUE(torch::allclose(model.inv_freq, expected_inv_freq(8)));
  EXPECT_TRUE(torch::equal(model.mask, torch::ones({4, 4}).tril()));
  EXPECT_TRUE(torch::equal(model.norm->running_mean, torch::zeros({8})));
  EXPECT_TRUE(torch::equal(model.norm->running_var, torch::ones({8})));
  EXPECT_TRUE(torch::equal(model.norm->num_batches_tracked, torch::zeros({}, torch::kLong)));
}

TEST(InitEmptyWeights, ModelOfConfigHasMetaParametersAndRealBuffers) {
  auto guard = metaguard::init_empty_weights();
  Attention model(config());
  expect_parameters_meta(*model);
  expect_real_buffers(*model);
  EXPECT_EQ(model->o->weight.sizes(), (std::vector<int64_t>{8, 8}));
  EXPECT_TRUE(model->o->weight.requires_grad());
  EXPECT_EQ(model->gate.scalar_type(), torch::kFloat32);
}

TEST(InitEmptyWeights, AStockLayerAloneEndsOnMeta) {
  torch::nn::Linear linear{nullptr};
  torch::nn::Embedding embed{nullptr};
  {
    auto guard = metaguard::init_empty_weights();
    linear = torch::nn::Linear(4, 4);
    // Registered and not touched by any operator before the scope ends.
    embed = torch::nn::Embedding(torch::nn::EmbeddingOptions(10, 4).padding_idx(0));
  }
  EXPECT_TRUE(linear->weight.is_meta());
  EXPECT_TRUE(linear->bias.is_meta());
  EXPECT_TRUE(embed->weight.is_meta());
}

TEST(InitEmptyWeights, FactoriesAndComputationsStayReal) {
  auto guard = metaguard::init_empty_weights();
  EXPECT_TRUE(torch::zeros({3}).device().is_cpu());
  const auto x = torch::arange(4).to(torch::kFloat32) * 2;
  EXPECT_TRUE(torch::equal(x, torch::tensor({0.0f, 2.0f, 4.0f, 6.0f})));
  EXPECT_FALSE(torch::nn::BatchNorm1d(3)->running_var.is_meta());
}

TEST(InitEmptyWeights, FromConfigGivesTheSameSplit) {
  auto guard = metaguard::init_empty_weights();
  auto model = metaguard::from_config<Attention>(config());
  expect_parameters_meta(*model);
  expect_real_buffers(*model);
}

TEST(InitEmptyWeights, IncludingBuffersPutsEverythingOnMeta) {
  auto guard = metaguard::init_empty_weights(/*include_buffers=*/true);
  Attention model(config());
  expect_parameters_meta(*model);
  for (const auto &item : model->named_buffers())
    EXPECT_TRUE(item.value().is_meta()) << item.key();
}

TEST(InitEmptyWeights, OutsideTheScopeNothingIsReleased) {
  { auto guard = metaguard::init_empty_weights(); }
  Attention model(config());
  for (const auto &item : model->named_parameters())
    EXPECT_TRUE(item.value().device().is_cpu()) << item.key();
  auto guard = metaguard::init_empty_weights();
  {
    // A CPU scope inside: what is built there is real.
    metaguard::DeviceScope cpu{torch::Device(torch::kCPU)};
    torch::nn::Linear linear(2, 2);
    torch::zeros({1}); // an operator after registration, still in the CPU scope
    EXPECT_TRUE(linear->weight.device().is_cpu());
  }
}

TEST(InitEmptyWeights, ATensorRegisteredAsParameterLaterInTheScopeIsReleasedThen) {
  auto guard = metaguard::init_empty_weights();
  torch::nn::Module holder;
  auto values = torch::randn({3, 3});
  EXPECT_TRUE(values.device().is_cpu());
  auto kept = holder.register_buffer("kept", torch::randn({2}));
  auto param = holder.register_parameter("param", values);
  torch::zeros({1}); // the next operator on this thread
  EXPECT_TRUE(param.is_meta());
  EXPECT_TRUE(values.is_meta()) << "one tensor: the parameter object itself went to meta";
  EXPECT_TRUE(kept.device().is_cpu());
}

TEST(InitEmptyWeights, ScopesOnOtherThreadsAreIndependent) {
  auto guard = metaguard::init_empty_weights();
  bool other_meta = true;
  std::thread([&] { other_meta = torch::nn::Linear(4, 4)->weight.is_meta(); }).join();
  EXPECT_FALSE(other_meta);
  EXPECT_TRUE(torch::nn::Linear(4, 4)->weight.is_meta());
}

TEST(InitEmptyWeights, LoadingWithAnExplicitMapInsideTheScopeKeepsTheLoadedValues) {
  // The loader's real tensors are created inside the scope: they must not be
  // mistaken for new parameters and released.
  const auto dir = std::filesystem::temp_directory_path() /
                   ("metaguard-empty-weights-" + std::to_string(::getpid()));
  Attention original(config());
  metaguard::SaveOptions save;
  save.config = config();
  metaguard::save_pretrained(*original, dir, save);
  {
    auto guard = metaguard::init_empty_weights();
    metaguard::LoadOptions options;
    options.device_map = metaguard::DeviceMap::on(torch::kCPU);
    auto loaded = metaguard::from_pretrained<Attention>(dir, options);
    torch::zeros({1});
    EXPECT_TRUE(torch::equal(loaded->o->weight, original->o->weight));
    EXPECT_TRUE(torch::equal(loaded->q, original->q));
  }
  std::filesystem::remove_all(dir);
}

} // namespace empty_weights_test
} // namespace
