// LibTorch factory functions (and so stock torch::nn layers) under meta
// scopes and the meta default device: what goes to meta, what stays real,
// per-thread scopes, the per-process default, and from_config /
// from_pretrained building stock models without allocating.
#include <metaguard/metaguard.h>

#include "loading_test_model.h"
#include "loading_test_util.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <thread>

namespace {
namespace meta_factories_test {

using metaguard_test::TempDir;

class MetaFactoriesTest : public ::testing::Test {
protected:
  void SetUp() override {
    metaguard::reset_default_device();
    ASSERT_TRUE(metaguard::meta_factories_available());
  }
  void TearDown() override { metaguard::reset_default_device(); }
};

// Every stock layer the issue names, and a user parameter from torch::randn.
struct StockModelImpl : torch::nn::Module {
  StockModelImpl()
      : linear(register_module("linear", torch::nn::Linear(64, 32))),
        embed(register_module("embed", torch::nn::Embedding(
                                           torch::nn::EmbeddingOptions(100, 16).padding_idx(0)))),
        norm(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({16})))),
        conv(register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3)))) {
    scale = register_parameter("scale", torch::randn({4, 4}));
  }
  torch::nn::Linear linear;
  torch::nn::Embedding embed;
  torch::nn::LayerNorm norm;
  torch::nn::Conv2d conv;
  torch::Tensor scale;
};
TORCH_MODULE(StockModel);

void expect_all_on(const torch::nn::Module &module, bool meta) {
  for (const auto &item : module.named_parameters())
    EXPECT_EQ(item.value().is_meta(), meta) << item.key();
}

TEST_F(MetaFactoriesTest, StockLayersAndFactoriesComeOutMetaInsideAMetaScope) {
  {
    metaguard::MetaDeviceScope scope;
    StockModel model;
    expect_all_on(*model, /*meta=*/true);
    EXPECT_EQ(model->linear->weight.sizes().vec(), (std::vector<int64_t>{32, 64}));
    EXPECT_TRUE(model->linear->weight.requires_grad());
    EXPECT_TRUE(torch::zeros({3}).is_meta());
    EXPECT_TRUE(torch::arange(5).is_meta());
    EXPECT_TRUE(torch::full({2}, 7, torch::kFloat64).is_meta()) << "dtype alone is no device";
    EXPECT_EQ(torch::full({2}, 7, torch::kFloat64).scalar_type(), torch::kFloat64);
  }
  StockModel after;
  expect_all_on(*after, /*meta=*/false);
  EXPECT_TRUE(torch::zeros({3}).device().is_cpu()) << "nothing changes after the scope";
}

TEST_F(MetaFactoriesTest, EveryMetaScopeKindRedirects) {
  {
    metaguard::DeviceScope scope(torch::Device(torch::kMeta));
    EXPECT_TRUE(torch::nn::Linear(4, 4)->weight.is_meta());
  }
  {
    auto guard = metaguard::init_empty_weights(/*include_buffers=*/true);
    EXPECT_TRUE(torch::nn::Linear(4, 4)->weight.is_meta());
  }
  auto linear = metaguard::with_meta_device([] { return torch::nn::Linear(4, 4); });
  EXPECT_TRUE(linear->weight.is_meta());
  EXPECT_FALSE(torch::nn::Linear(4, 4)->weight.is_meta());
}

TEST_F(MetaFactoriesTest, AnExplicitDeviceInUserCodeIsKept) {
  metaguard::MetaDeviceScope scope;
  const auto cpu = torch::zeros({2}, torch::kCPU);
  EXPECT_TRUE(cpu.device().is_cpu());
  EXPECT_TRUE(torch::equal(cpu, torch::tensor({0.0f, 0.0f}, torch::kCPU)));
  EXPECT_TRUE(torch::ones({2}, torch::TensorOptions().device(torch::kCPU)).device().is_cpu());
  // Operators with a tensor argument take its device, as PyTorch's do.
  EXPECT_TRUE(torch::empty_like(cpu).device().is_cpu());
  EXPECT_TRUE(cpu.new_zeros({3}).device().is_cpu());
  EXPECT_TRUE((cpu + 1).device().is_cpu());
}

TEST_F(MetaFactoriesTest, ScopesThatExcludeBuffersLeaveFactoriesAlone) {
  auto guard = metaguard::init_empty_weights(); // include_buffers = false
  auto norm = torch::nn::BatchNorm1d(8);
  EXPECT_TRUE(norm->running_var.device().is_cpu());
  EXPECT_TRUE(torch::equal(norm->running_var, torch::ones({8})));
  EXPECT_TRUE(norm->weight.is_meta()) << "parameters go to meta at registration, as accelerate's";
}

TEST_F(MetaFactoriesTest, ScopesNestAndTheInnermostDecides) {
  metaguard::MetaDeviceScope outer;
  EXPECT_TRUE(torch::zeros({1}).is_meta());
  {
    metaguard::DeviceScope cpu(torch::Device(torch::kCPU));
    EXPECT_TRUE(torch::zeros({1}).device().is_cpu());
    {
      metaguard::MetaDeviceScope inner;
      EXPECT_TRUE(torch::zeros({1}).is_meta());
    }
    EXPECT_TRUE(torch::zeros({1}).device().is_cpu());
  }
  {
    auto keep_buffers = metaguard::init_empty_weights(false);
    EXPECT_TRUE(torch::zeros({1}).device().is_cpu());
  }
  EXPECT_TRUE(torch::zeros({1}).is_meta());
}

TEST_F(MetaFactoriesTest, ExceptionsUnwindTheRedirection) {
  try {
    metaguard::MetaDeviceScope scope;
    throw std::runtime_error("during construction");
  } catch (const std::runtime_error &) {
  }
  EXPECT_TRUE(torch::zeros({1}).device().is_cpu());
}

TEST_F(MetaFactoriesTest, ScopesArePerThread) {
  metaguard::MetaDeviceScope scope;
  bool other_meta = true;
  std::thread([&] { other_meta = torch::nn::Linear(4, 4)->weight.is_meta(); }).join();
  EXPECT_FALSE(other_meta) << "a scope on one thread must not reach another";
  EXPECT_TRUE(torch::nn::Linear(4, 4)->weight.is_meta());
}

TEST_F(MetaFactoriesTest, TheDefaultDeviceReachesThreadsStartedLater) {
  testing::internal::CaptureStderr();
  metaguard::set_default_device("meta");
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "")
      << "replacing LibTorch's BackendSelect kernels is deliberate: no warning per operator";
  EXPECT_TRUE(torch::nn::Linear(4, 4)->weight.is_meta());
  bool later_meta = false, later_explicit_cpu = false, later_scoped_cpu = false;
  std::thread([&] {
    later_meta = StockModel()->conv->weight.is_meta();
    later_explicit_cpu = torch::zeros({1}, torch::kCPU).device().is_cpu();
    metaguard::DeviceScope cpu(torch::Device(torch::kCPU));
    later_scoped_cpu = torch::zeros({1}).device().is_cpu();
  }).join();
  EXPECT_TRUE(later_meta);
  EXPECT_TRUE(later_explicit_cpu);
  EXPECT_TRUE(later_scoped_cpu) << "a scope on the thread wins over the default";
  {
    auto keep_buffers = metaguard::init_empty_weights();
    EXPECT_TRUE(torch::zeros({1}).device().is_cpu()) << "the scope excludes buffers";
  }
  // Operators with a BackendSelect kernel of their own keep its work: the
  // dtype, layout and an explicit device still pick the backend.
  const auto doubles = torch::empty({2}, torch::kFloat64);
  EXPECT_TRUE(doubles.is_meta());
  EXPECT_EQ(doubles.scalar_type(), torch::kFloat64);
  EXPECT_TRUE(torch::arange(5).is_meta());
  EXPECT_TRUE(torch::empty({2}, torch::kCPU).device().is_cpu());
  EXPECT_TRUE(torch::empty_strided({2, 2}, {2, 1}).is_meta());
  metaguard::set_default_device("cpu");
  EXPECT_TRUE(torch::zeros({1}).device().is_cpu());
  EXPECT_TRUE(torch::empty({1}).device().is_cpu());
  metaguard::set_default_device("meta");
  EXPECT_TRUE(torch::zeros({1}).is_meta());
  metaguard::reset_default_device();
  bool after_reset_cpu = false;
  std::thread([&] { after_reset_cpu = torch::zeros({1}).device().is_cpu(); }).join();
  EXPECT_TRUE(after_reset_cpu);
  EXPECT_TRUE(torch::zeros({1}).device().is_cpu());
}

// Records whether its weight was meta while the constructor ran, i.e.
// whether construction allocated and initialised it.
struct ProbeImpl : torch::nn::Module {
  static inline int meta_constructions = 0;
  static inline int real_constructions = 0;
  explicit ProbeImpl(const metaguard::Config &config)
      : fc(register_module("fc", torch::nn::Linear(config.at("in").get<int64_t>(),
                                                   config.at("out").get<int64_t>()))) {
    (fc->weight.is_meta() ? meta_constructions : real_constructions) += 1;
    if (config.value("with_buffer", false))
      steps = register_buffer("steps", torch::arange(3));
  }
  torch::nn::Linear fc;
  torch::Tensor steps;
};
TORCH_MODULE(Probe);

metaguard::Config probe_config(bool with_buffer) {
  return {{"in", 8}, {"out", 4}, {"with_buffer", with_buffer}};
}

TEST_F(MetaFactoriesTest, FromConfigUnderInitEmptyWeightsBuildsStockLayersOnMeta) {
  ProbeImpl::meta_constructions = ProbeImpl::real_constructions = 0;
  auto guard = metaguard::init_empty_weights();
  auto model = metaguard::from_config<Probe>(probe_config(false));
  expect_all_on(*model, /*meta=*/true);
  EXPECT_EQ(ProbeImpl::real_constructions, 0) << "nothing was allocated or initialised";
}

struct NormedImpl : torch::nn::Module {
  explicit NormedImpl(const metaguard::Config &)
      : norm(register_module("norm", torch::nn::BatchNorm1d(8))) {}
  torch::nn::BatchNorm1d norm;
};
TORCH_MODULE(Normed);

TEST_F(MetaFactoriesTest, FromConfigKeepsBuffersRealWhenTheScopeSaysSo) {
  auto guard = metaguard::init_empty_weights();
  auto model = metaguard::from_config<Probe>(probe_config(true));
  expect_all_on(*model, /*meta=*/true);
  EXPECT_TRUE(torch::equal(model->steps, torch::arange(3)));
  auto norm = metaguard::from_config<Normed>(metaguard::Config{});
  EXPECT_TRUE(norm->norm->weight.is_meta());
  EXPECT_TRUE(torch::equal(norm->norm->running_var, torch::ones({8})));
  EXPECT_TRUE(torch::equal(norm->norm->num_batches_tracked, torch::zeros({}, torch::kLong)));
}

TEST_F(MetaFactoriesTest, FromPretrainedBuildsAStockModelWithoutAllocating) {
  TempDir dir;
  torch::manual_seed(3);
  Probe original(probe_config(false));
  metaguard::SaveOptions save;
  save.config = probe_config(false);
  metaguard::save_pretrained(*original, dir.path(), save);

  ProbeImpl::meta_constructions = ProbeImpl::real_constructions = 0;
  auto loaded = metaguard::from_pretrained<Probe>(dir.path());
  EXPECT_EQ(ProbeImpl::real_constructions, 0);
  EXPECT_EQ(ProbeImpl::meta_constructions, 1);
  EXPECT_TRUE(torch::equal(loaded->fc->weight, original->fc->weight));
  EXPECT_TRUE(torch::equal(loaded->fc->bias, original->fc->bias));
  EXPECT_TRUE(loaded->fc->weight.requires_grad());
  EXPECT_TRUE(torch::zeros({1}).device().is_cpu());
}

TEST_F(MetaFactoriesTest, FromPretrainedKeepsWhatTheCheckpointLacks) {
  TempDir dir;
  Probe original(probe_config(false));
  metaguard::SaveOptions save;
  save.config = probe_config(true); // the model will have a buffer the files lack
  metaguard::save_pretrained(*original, dir.path(), save);
  metaguard::LoadOptions options;
  options.strict = false;
  auto loaded = metaguard::from_pretrained<Probe>(dir.path(), options);
  EXPECT_TRUE(torch::equal(loaded->steps, torch::arange(3))) << "built, not zeroed";
  EXPECT_TRUE(torch::equal(loaded->fc->weight, original->fc->weight));
}

// Its constructor reads a tensor's value (a width computed with item()),
// which LibTorch refuses on a meta tensor.
struct ReadsValuesImpl : torch::nn::Module {
  explicit ReadsValuesImpl(const metaguard::Config &config)
      : fc(register_module(
            "fc", torch::nn::Linear(config.at("in").get<int64_t>(),
                                    torch::full({1}, config.at("out").get<int64_t>()).item<int64_t>()))) {}
  torch::nn::Linear fc;
};
TORCH_MODULE(ReadsValues);

TEST_F(MetaFactoriesTest, AConstructorThatNeedsRealValuesIsBuiltThePreviousWay) {
  {
    auto guard = metaguard::init_empty_weights();
    auto model = metaguard::from_config<ReadsValues>(probe_config(false));
    expect_all_on(*model, /*meta=*/true);
    EXPECT_EQ(model->fc->weight.sizes().vec(), (std::vector<int64_t>{4, 8}));
  }
  TempDir dir;
  torch::manual_seed(5);
  ReadsValues original(probe_config(false));
  metaguard::SaveOptions save;
  save.config = probe_config(false);
  metaguard::save_pretrained(*original, dir.path(), save);
  auto loaded = metaguard::from_pretrained<ReadsValues>(dir.path());
  EXPECT_TRUE(torch::equal(loaded->fc->weight, original->fc->weight));
  EXPECT_TRUE(torch::equal(loaded->fc->bias, original->fc->bias));
}

struct RejectsConfigImpl : torch::nn::Module {
  explicit RejectsConfigImpl(const metaguard::Config &config) {
    if (!config.contains("width"))
      throw std::invalid_argument("config has no width");
  }
};
TORCH_MODULE(RejectsConfig);

TEST_F(MetaFactoriesTest, AConstructorsOwnErrorStillReachesTheCaller) {
  auto guard = metaguard::init_empty_weights();
  EXPECT_THROW(metaguard::from_config<RejectsConfig>(metaguard::Config{}), std::invalid_argument);
}

TEST_F(MetaFactoriesTest, TheMetaScopeRuleIsUnchanged) {
  TempDir dir;
  Probe original(probe_config(false));
  metaguard::SaveOptions save;
  save.config = probe_config(false);
  metaguard::save_pretrained(*original, dir.path(), save);
  metaguard::MetaDeviceScope scope;
  EXPECT_THROW(metaguard::from_pretrained<Probe>(dir.path()), metaguard::MetaDeviceError);
  EXPECT_TRUE(torch::zeros({1}).is_meta()) << "the failed load left the scope as it was";
}

} // namespace meta_factories_test
} // namespace
