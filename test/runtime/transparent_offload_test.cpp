// Transparent offload: stock LibTorch layers and a ported model whose forward
// has no OnloadGuard run with parameters on disk and give the in-memory
// model's output; each rule is enforced when an operator uses a parameter.
#include "offload_error_of.h"
#include "tiny_lm.h"

#include <metaguard/loading.h>
#include <metaguard/saving.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <thread>
#include <unistd.h>

namespace {
namespace transparent_offload_test {

namespace fs = std::filesystem;
using metaguard::OffloadError;

// A block as a project ported from Python would write it: no guard.
struct BlockImpl : torch::nn::Module {
  explicit BlockImpl(int64_t width)
      : norm(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({width})))),
        up(register_module("up", torch::nn::Linear(width, 2 * width))),
        down(register_module("down", torch::nn::Linear(2 * width, width))) {}
  torch::Tensor forward(const torch::Tensor &x) { return x + down(torch::gelu(up(norm(x)))); }
  torch::nn::LayerNorm norm;
  torch::nn::Linear up, down;
};
TORCH_MODULE(Block);

struct DecoderImpl : torch::nn::Module {
  explicit DecoderImpl(const metaguard::Config &config)
      : DecoderImpl(config.at("vocab").get<int64_t>(), config.at("width").get<int64_t>(),
                    config.at("depth").get<int64_t>()) {}
  DecoderImpl(int64_t vocab, int64_t width, int64_t depth)
      : embed(register_module("embed", torch::nn::Embedding(vocab, width))),
        blocks(register_module("blocks", torch::nn::ModuleList())),
        head(register_module("head", torch::nn::Linear(width, vocab))) {
    for (int64_t i = 0; i < depth; ++i)
      blocks->push_back(Block(width));
  }
  torch::Tensor forward(const torch::Tensor &ids) {
    torch::Tensor h = embed(ids);
    for (const auto &block : *blocks)
      h = block->as<BlockImpl>()->forward(h);
    return head(h);
  }
  torch::nn::Embedding embed;
  torch::nn::ModuleList blocks;
  torch::nn::Linear head;
};
TORCH_MODULE(Decoder);

torch::nn::Sequential stock_sequential() {
  return torch::nn::Sequential(torch::nn::Embedding(40, 16), torch::nn::Linear(16, 32), torch::nn::ReLU(),
                               torch::nn::LayerNorm(torch::nn::LayerNormOptions({32})),
                               torch::nn::Linear(32, 8));
}

class TransparentOffloadTest : public ::testing::Test {
protected:
  void SetUp() override {
    torch::manual_seed(11);
    dir_ = fs::temp_directory_path() / ("metaguard_transparent_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    ids_ = torch::randint(0, 40, {3, 7}, torch::kLong);
  }
  void TearDown() override {
    metaguard::set_policy(metaguard::Policy::Throw);
    fs::remove_all(dir_);
  }
  fs::path dir_;
  torch::Tensor ids_;
};

TEST_F(TransparentOffloadTest, StockSequentialGivesTheInMemoryOutputInEveryPlacement) {
  const std::vector<metaguard::DeviceMap> placements = {
      {{"", "cpu"}, {"1", "disk"}, {"3", "disk"}},
      {{"", "cpu"}, {"0", "disk"}},
      {{"", "disk"}},
  };
  torch::NoGradGuard no_grad;
  for (const auto &map : placements) {
    auto reference = stock_sequential();
    auto model = stock_sequential();
    tiny::copy_parameters(*reference, *model);
    const torch::Tensor expected = reference->forward(ids_);
    metaguard::dispatch_model(*model, map, dir_);
    ASSERT_TRUE(metaguard::has_offloaded_parameters(*model));
    EXPECT_TRUE(torch::equal(model->forward(ids_), expected));
    EXPECT_TRUE(torch::equal(model->forward(ids_), expected)) << "a second forward sees the same values";
    // Still meta to user code, nothing left materialised.
    for (const auto &name : metaguard::offloaded_parameter_names(*model))
      EXPECT_TRUE(model->named_parameters(true)[name].is_meta()) << name;
    metaguard::verify_dispatch(*model);
    fs::remove_all(dir_);
  }
}

TEST_F(TransparentOffloadTest, OffloadedParametersStayMetaAndLoadable) {
  auto reference = stock_sequential();
  auto model = stock_sequential();
  tiny::copy_parameters(*reference, *model);
  metaguard::dispatch_model(*model, {{"", "cpu"}, {"1", "disk"}}, dir_);
  const torch::Tensor weight = model->named_parameters(true)["1.weight"];
  EXPECT_TRUE(weight.is_meta());
  EXPECT_EQ(weight.sizes(), torch::IntArrayRef({32, 16}));
  EXPECT_EQ(metaguard::offloaded_parameter_names(*model), (std::vector<std::string>{"1.bias", "1.weight"}));
  EXPECT_TRUE(torch::equal(metaguard::load_offloaded_parameter(*model, "1.weight"),
                           reference->named_parameters(true)["1.weight"]));
  // An operator on the parameter itself sees its values.
  EXPECT_TRUE(torch::equal(weight.sum(), reference->named_parameters(true)["1.weight"].sum()));
  EXPECT_TRUE(torch::equal(torch::cat({weight, weight}),
                           torch::cat({reference->named_parameters(true)["1.weight"],
                                       reference->named_parameters(true)["1.weight"]})))
      << "tensor lists in arguments";
}

TEST_F(TransparentOffloadTest, MultiheadAttentionOffloadedGivesTheInMemoryOutput) {
  torch::NoGradGuard no_grad;
  for (const metaguard::DeviceMap &map :
       {metaguard::DeviceMap{{"", "disk"}}, metaguard::DeviceMap{{"", "cpu"}, {"out_proj", "disk"}}}) {
    torch::nn::MultiheadAttention reference(16, 4);
    torch::nn::MultiheadAttention model(16, 4);
    tiny::copy_parameters(*reference, *model);
    const torch::Tensor x = torch::randn({5, 2, 16});
    const auto expected = reference->forward(x, x, x);
    metaguard::dispatch_model(*model, map, dir_);
    const auto got = model->forward(x, x, x);
    EXPECT_TRUE(torch::allclose(std::get<0>(got), std::get<0>(expected)));
    EXPECT_TRUE(torch::allclose(std::get<1>(got), std::get<1>(expected)));
    EXPECT_FALSE(metaguard::offloaded_parameter_names(*model).empty());
    fs::remove_all(dir_);
  }
}

TEST_F(TransparentOffloadTest, PortedDecoderWithHalfItsBlocksOnDisk) {
  torch::NoGradGuard no_grad;
  Decoder reference(40, 16, 4);
  Decoder model(40, 16, 4);
  tiny::copy_parameters(*reference, *model);
  const torch::Tensor expected = reference->forward(ids_);
  metaguard::dispatch_model(*model, {{"", "cpu"}, {"blocks.2", "disk"}, {"blocks.3", "disk"}}, dir_);
  EXPECT_TRUE(torch::equal(model->forward(ids_), expected));
  // The guard stays the fast path and gives the same output.
  {
    metaguard::OnloadGuard onload(*model);
    EXPECT_FALSE(model->named_parameters(true)["blocks.2.up.weight"].is_meta());
    EXPECT_TRUE(torch::equal(model->forward(ids_), expected));
  }
  EXPECT_TRUE(model->named_parameters(true)["blocks.2.up.weight"].is_meta());
  EXPECT_TRUE(torch::equal(model->forward(ids_), expected)) << "self-loading again after the guard";
}

TEST_F(TransparentOffloadTest, LoadingWithADiskPlacementReadsTheShardsOnUse) {
  torch::NoGradGuard no_grad;
  const metaguard::Config config = {{"vocab", 40}, {"width", 16}, {"depth", 4}};
  Decoder reference(config);
  metaguard::SaveOptions save;
  save.config = config;
  metaguard::save_pretrained(*reference, dir_ / "checkpoint", save);
  metaguard::LoadOptions options;
  options.device_map = {{"", "cpu"}, {"blocks.1", "disk"}, {"head", "disk"}};
  Decoder model = metaguard::from_pretrained<Decoder>(dir_ / "checkpoint", options);
  EXPECT_TRUE(model->named_parameters(true)["head.weight"].is_meta());
  EXPECT_TRUE(torch::equal(model->forward(ids_), reference->forward(ids_)));
  // load_weights into a built model takes the same path.
  Decoder built(config);
  metaguard::load_weights(*built, dir_ / "checkpoint", options);
  EXPECT_TRUE(built->named_parameters(true)["blocks.1.up.weight"].is_meta());
  EXPECT_TRUE(torch::equal(built->forward(ids_), reference->forward(ids_)));
}

TEST_F(TransparentOffloadTest, TwoThreadsRunTheSameDispatchedModel) {
  torch::NoGradGuard no_grad;
  Decoder reference(40, 16, 4);
  Decoder model(40, 16, 4);
  tiny::copy_parameters(*reference, *model);
  metaguard::dispatch_model(*model, {{"", "cpu"}, {"blocks.1", "disk"}, {"blocks.3", "disk"}}, dir_);
  const torch::Tensor a = torch::randint(0, 40, {2, 9}, torch::kLong);
  const torch::Tensor b = torch::randint(0, 40, {4, 3}, torch::kLong);
  const torch::Tensor expected_a = reference->forward(a), expected_b = reference->forward(b);
  std::atomic<int> wrong{0};
  auto run = [&](const torch::Tensor &ids, const torch::Tensor &expected) {
    torch::NoGradGuard thread_no_grad;
    for (int i = 0; i < 20; ++i)
      if (!torch::equal(model->forward(ids), expected))
        ++wrong;
  };
  std::thread first(run, a, expected_a), second(run, b, expected_b);
  first.join();
  second.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST_F(TransparentOffloadTest, WithGradEnabledOffloadedParametersAreConstants) {
  auto reference = stock_sequential();
  auto model = stock_sequential();
  tiny::copy_parameters(*reference, *model);
  metaguard::dispatch_model(*model, {{"", "cpu"}, {"3", "disk"}}, dir_);
  const torch::Tensor out = model->forward(ids_);
  EXPECT_TRUE(torch::equal(out, reference->forward(ids_)));
  out.sum().backward();
  reference->forward(ids_).sum().backward();
  // In-memory parameters get their gradients; offloaded ones get none.
  EXPECT_TRUE(torch::allclose(model->named_parameters(true)["1.weight"].grad(),
                              reference->named_parameters(true)["1.weight"].grad()));
  EXPECT_FALSE(model->named_parameters(true)["3.weight"].grad().defined());
  EXPECT_TRUE(model->named_parameters(true)["3.weight"].requires_grad());
}

TEST_F(TransparentOffloadTest, AnOperatorOnAParameterWhoseHookWasRemovedRaises) {
  auto model = stock_sequential();
  metaguard::dispatch_model(*model, {{"", "cpu"}, {"1", "disk"}}, dir_);
  metaguard::remove_hook_from_module(*model->children()[1]);
  torch::NoGradGuard no_grad;
  const std::string what = offload_error_of([&] { model->forward(ids_); });
  EXPECT_TRUE(has(what, "offloaded parameter '1.")) << what;
  EXPECT_TRUE(has(what, "hook was removed")) << what;
  EXPECT_TRUE(has(what, "dispatch_model")) << what;
}

// A ported module that assigns a registered parameter (LibTorch has no
// public way to; a subclass can reach the registered tensors).
struct ReassignableLinearImpl : torch::nn::LinearImpl {
  using torch::nn::LinearImpl::LinearImpl;
  void assign_registered_weight(const torch::Tensor &value) { parameters_["weight"] = value; }
};

TEST_F(TransparentOffloadTest, AnOperatorOnAReplacedParameterRaises) {
  auto layer = std::make_shared<ReassignableLinearImpl>(4, 4);
  metaguard::dispatch_model(*layer, {{"", "disk"}}, dir_);
  // The registered parameter is replaced; the member the forward uses still
  // holds the offloaded tensor, whose values would silently be stale.
  layer->assign_registered_weight(torch::zeros({4, 4}));
  torch::NoGradGuard no_grad;
  const std::string what = offload_error_of([&] { layer->forward(torch::ones({2, 4})); });
  EXPECT_TRUE(has(what, "'weight'")) << what;
  EXPECT_TRUE(has(what, "replaced")) << what;
}

TEST_F(TransparentOffloadTest, MovingAParameterByHandRaisesAndChangesNothing) {
  auto reference = stock_sequential();
  auto model = stock_sequential();
  tiny::copy_parameters(*reference, *model);
  metaguard::dispatch_model(*model, {{"", "cpu"}, {"1", "disk"}}, dir_);
  torch::Tensor weight = model->named_parameters(true)["1.weight"];
  // set_data asks an operator whether the value fits; for an offloaded
  // parameter the answer is an OffloadError. Module::to(device) on a plain
  // module moves parameters with set_data.
  std::string what = offload_error_of([&] { weight.set_data(torch::zeros({32, 16})); });
  EXPECT_TRUE(has(what, "'1.weight'")) << what;
  EXPECT_TRUE(has(what, "set_data")) << what;
  what = offload_error_of([&] { weight.set_data(torch::empty({2, 2}, torch::kMeta)); });
  EXPECT_TRUE(has(what, "'1.weight'")) << what;
  what = offload_error_of([&] { model->to(torch::kCPU); });
  EXPECT_TRUE(has(what, "offloaded parameter '1.")) << what;
  // Under Policy::Warn the set_data goes on to LibTorch, which refuses it.
  metaguard::set_policy(metaguard::Policy::Warn);
  testing::internal::CaptureStderr();
  EXPECT_THROW(weight.set_data(torch::zeros({32, 16})), c10::Error);
  EXPECT_TRUE(has(testing::internal::GetCapturedStderr(), "'1.weight'"));
  metaguard::set_policy(metaguard::Policy::Throw);
  EXPECT_TRUE(weight.is_meta());
  EXPECT_EQ(weight.sizes(), torch::IntArrayRef({32, 16}));
  metaguard::verify_dispatch(*model);
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(model->forward(ids_), reference->forward(ids_)));
}

TEST_F(TransparentOffloadTest, TorchLoadIntoADispatchedModelRaisesAtTheFirstOffloadedParameter) {
  auto saved = stock_sequential();
  auto model = stock_sequential();
  torch::Tensor original_first;
  {
    torch::NoGradGuard no_grad;
    original_first = model->named_parameters(true)["0.weight"].clone();
  }
  metaguard::dispatch_model(*model, {{"", "cpu"}, {"1", "disk"}, {"4", "disk"}}, dir_ / "offload");
  const fs::path archive = dir_ / "saved.pt";
  torch::save(saved, archive.string());
  // Module::load reads each parameter into the module's own tensor: set_ for
  // one on the archive's device, set_data for an offloaded (meta) one, which
  // asks the offloaded parameter first and gets an OffloadError.
  const std::string what = offload_error_of([&] { torch::load(model, archive.string()); });
  EXPECT_TRUE(has(what, "'1.weight'")) << what;
  EXPECT_TRUE(has(what, "set_data")) << what;
  // Parameters before it were already overwritten by the archive's; the
  // offloaded ones are untouched and still load from the offload folder.
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(model->named_parameters(true)["0.weight"], saved->named_parameters(true)["0.weight"]));
  EXPECT_FALSE(torch::equal(model->named_parameters(true)["0.weight"], original_first));
  EXPECT_TRUE(model->named_parameters(true)["1.weight"].is_meta());
  EXPECT_TRUE(model->named_parameters(true)["4.weight"].is_meta());
  metaguard::verify_dispatch(*model);
}

TEST_F(TransparentOffloadTest, BookkeepingOperatorsDoNotLoad) {
  auto model = stock_sequential();
  metaguard::dispatch_model(*model, {{"", "cpu"}, {"1", "disk"}}, dir_);
  torch::Tensor weight = model->named_parameters(true)["1.weight"];
  weight.requires_grad_(false);
  EXPECT_FALSE(weight.requires_grad());
  const torch::Tensor detached = weight.detach();
  EXPECT_TRUE(detached.is_meta());
  EXPECT_TRUE(torch::equal(detached.sum(), metaguard::load_offloaded_parameter(*model, "1.weight").sum()))
      << "a detached offloaded parameter loads itself too";
}

TEST_F(TransparentOffloadTest, WritingIntoAnOffloadedParameterFollowsTheDebugSetting) {
  auto reference = stock_sequential();
  auto model = stock_sequential();
  tiny::copy_parameters(*reference, *model);
  metaguard::dispatch_model(*model, {{"", "cpu"}, {"1", "disk"}}, dir_);
  torch::Tensor weight = model->named_parameters(true)["1.weight"];
  torch::NoGradGuard no_grad;
  const bool before = metaguard::verify_on_materialise();
  metaguard::set_verify_on_materialise(true);
  std::string what = offload_error_of([&] { weight.copy_(torch::zeros({32, 16})); });
  EXPECT_TRUE(has(what, "'1.weight'")) << what;
  EXPECT_TRUE(has(what, "aten::copy_")) << what;
  what = offload_error_of([&] { weight.mul_(2); });
  EXPECT_TRUE(has(what, "writes into it")) << what;
  // Release behaviour: the write goes to a loaded copy and is lost.
  metaguard::set_verify_on_materialise(false);
  weight.mul_(2);
  metaguard::set_verify_on_materialise(before);
  EXPECT_TRUE(torch::equal(model->forward(ids_), reference->forward(ids_)));
}

TEST_F(TransparentOffloadTest, ADtypeChangeKeepsParametersSelfLoading) {
  struct Wrapped : metaguard::PreTrainedModel {
    Wrapped() { seq = register_module("seq", stock_sequential()); }
    torch::nn::Sequential seq;
  };
  Wrapped reference, model;
  tiny::copy_parameters(reference, model);
  metaguard::dispatch_model(model, {{"", "cpu"}, {"seq.4", "disk"}}, dir_);
  model.to(torch::kFloat64);
  reference.to(torch::kFloat64);
  EXPECT_EQ(model.named_parameters(true)["seq.4.weight"].scalar_type(), torch::kFloat64);
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(model.seq->forward(ids_), reference.seq->forward(ids_)));
}

} // namespace transparent_offload_test
} // namespace
