// The memory to_empty gives, in a debug build: filled with poison and marked
// uninitialised until something writes it. The first operator that reads a
// tensor still holding only poison, save_pretrained and
// PreTrainedModel::to(device) raise UninitializedMemoryError naming the
// tensor, where the model was built empty and where it was given memory;
// every write (torch::nn::init, reset_parameters, copy_, fill_, in-place
// operators, load_weights, torch::load) clears the mark.
//
// This file is a debug translation unit whatever the build type: the checks
// follow the program's translation units (debug_checks.h), not the library.
#undef NDEBUG
#include "empty_model_net.h"
#include "expect_text.h"
#include "loading_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace {
namespace uninitialised_memory_test {

using empty_test::Net;
using metaguard::UninitializedMemoryError;
using metaguard_test::TempDir;

template <class F> std::string uninit_error_of(F &&f) {
  try {
    f();
  } catch (const UninitializedMemoryError &e) {
    return e.what();
  } catch (const std::exception &e) {
    ADD_FAILURE() << "expected UninitializedMemoryError, got: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected UninitializedMemoryError";
  return {};
}

// The snippet of the runtime guide: built empty, given memory, used.
Net empty_net_with_memory() {
  Net net{nullptr};
  {
    auto guard = metaguard::init_empty_weights();
    net = metaguard::from_config<Net>(empty_test::net_config());
  }
  metaguard::to_empty(*net, torch::kCPU);
  return net;
}

void reset_parameters(Net &net) {
  for (const auto &module : net->modules(/*include_self=*/false)) {
    if (auto *linear = module->as<torch::nn::LinearImpl>())
      linear->reset_parameters();
    else if (auto *embedding = module->as<torch::nn::EmbeddingImpl>())
      embedding->reset_parameters();
    else if (auto *norm = module->as<torch::nn::LayerNormImpl>())
      norm->reset_parameters();
  }
}

// A real Net holding copies of `net`'s values: what the forward must give.
Net reference_of(Net &net) {
  Net reference(empty_test::net_config());
  torch::NoGradGuard no_grad;
  auto target = reference->named_parameters();
  for (const auto &item : net->named_parameters())
    target[item.key()].copy_(item.value());
  return reference;
}

class UninitialisedMemoryTest : public testing::Test {
protected:
  void SetUp() override { torch::manual_seed(11); }
  void TearDown() override { metaguard::set_policy(metaguard::Policy::Throw); }
};

TEST_F(UninitialisedMemoryTest, AForwardBeforeInitialisationNamesTheParameterAndItsHistory) {
  ASSERT_TRUE(metaguard::empty_model_checks());
  Net net = empty_net_with_memory();
  const std::string what = uninit_error_of([&] { empty_test::forward(net); });
  EXPECT_CONTAINS(what, "operator aten::embedding read 'embed.weight' (Float [30, 16]) before anything wrote it");
  EXPECT_CONTAINS(what, "a model built on the meta device by from_config<empty_test::NetImpl> under "
                        "init_empty_weights() and given memory by to_empty(model, cpu)");
  EXPECT_CONTAINS(what, "reset_parameters()");
  EXPECT_CONTAINS(what, "load_weights(model, checkpoint)");
  // It derives from metaguard's base error, beside MetaDeviceError.
  EXPECT_THROW(empty_test::forward(net), metaguard::Error);
}

TEST_F(UninitialisedMemoryTest, ResetParametersMakesTheForwardWorkAndCorrect) {
  Net net = empty_net_with_memory();
  reset_parameters(net);
  for (const auto &item : net->named_parameters()) {
    EXPECT_FALSE(torch::isnan(item.value()).any().item<bool>()) << item.key();
    EXPECT_TRUE(item.value().requires_grad()) << item.key();
  }
  Net reference = reference_of(net);
  EXPECT_TRUE(torch::equal(empty_test::forward(net), empty_test::forward(reference)));
}

TEST_F(UninitialisedMemoryTest, NnInitOverParametersMakesTheForwardWorkAndGradientsFlow) {
  Net net = empty_net_with_memory();
  torch::optim::SGD optimizer(net->parameters(), torch::optim::SGDOptions(0.1));
  {
    torch::NoGradGuard no_grad;
    for (auto &parameter : net->parameters())
      torch::nn::init::normal_(parameter, 0.0, 0.5);
  }
  Net reference = reference_of(net);
  EXPECT_TRUE(torch::equal(empty_test::forward(net), empty_test::forward(reference)));
  optimizer.zero_grad();
  net->forward(empty_test::net_ids()).pow(2).mean().backward();
  optimizer.step();
  for (const auto &item : net->named_parameters())
    EXPECT_TRUE(item.value().grad().defined()) << item.key();
}

TEST_F(UninitialisedMemoryTest, LoadWeightsAndTorchLoadGiveTheSavedValues) {
  TempDir dir;
  Net saved = empty_test::saved_net(dir.path());
  Net net = empty_net_with_memory();
  metaguard::load_weights(*net, dir.path());
  EXPECT_TRUE(torch::equal(empty_test::forward(net), empty_test::forward(saved)));

  torch::save(saved, (dir / "net.pt").string());
  Net loaded = empty_net_with_memory();
  torch::load(loaded, (dir / "net.pt").string());
  EXPECT_TRUE(torch::equal(empty_test::forward(loaded), empty_test::forward(saved)));
}

TEST_F(UninitialisedMemoryTest, APartialInitialisationNamesExactlyTheTensorLeft) {
  Net net = empty_net_with_memory();
  {
    torch::NoGradGuard no_grad;
    for (auto &item : net->named_parameters())
      if (item.key() != "blocks.1.fc.bias")
        item.value().uniform_(-0.1, 0.1);
  }
  std::string what = uninit_error_of([&] { empty_test::forward(net); });
  EXPECT_CONTAINS(what, "'blocks.1.fc.bias' (Float [16])");
  EXPECT_EQ(what.find("'blocks.1.fc.weight'"), std::string::npos) << what;

  TempDir dir;
  what = uninit_error_of([&] { metaguard::save_pretrained(*net, dir.path()); });
  EXPECT_CONTAINS(what, "cannot save the model: 1 tensor(s) were given memory and never initialised: "
                        "'blocks.1.fc.bias'. ");
  EXPECT_CONTAINS(what, "Nothing was written");
  EXPECT_FALSE(std::filesystem::exists(dir / "model.safetensors"));

  what = uninit_error_of([&] { net->to(torch::Device(torch::kCPU)); });
  EXPECT_CONTAINS(what, "cannot move the model to cpu: 1 tensor(s) were given memory and never initialised: "
                        "'blocks.1.fc.bias'");

  // A slice written counts as a write; the forward then runs.
  {
    torch::NoGradGuard no_grad;
    net->blocks[1]->as<empty_test::BlockImpl>()->fc->bias.narrow(0, 0, 4).zero_();
  }
  EXPECT_NO_THROW(empty_test::forward(net));
  EXPECT_NO_THROW(metaguard::save_pretrained(*net, dir.path()));
}

TEST_F(UninitialisedMemoryTest, AGenuineNaNIsNotTakenForPoison) {
  Net net = empty_net_with_memory();
  reset_parameters(net);
  {
    torch::NoGradGuard no_grad;
    net->head->bias.fill_(std::numeric_limits<float>::quiet_NaN());
  }
  torch::Tensor out;
  EXPECT_NO_THROW(out = empty_test::forward(net));
  EXPECT_TRUE(torch::isnan(out).all().item<bool>());
}

TEST_F(UninitialisedMemoryTest, ValuesWrittenThroughTheDataPointerCountAsInitialised) {
  Net net = empty_net_with_memory();
  reset_parameters(net);
  torch::Tensor bias = net->head->bias; // written again, bypassing the operators
  {
    torch::NoGradGuard no_grad;
    bias.fill_(0.0);
  }
  Net other = empty_net_with_memory();
  reset_parameters(other);
  torch::Tensor raw = other->head->bias;
  std::vector<float> ones(static_cast<std::size_t>(raw.numel()), 1.0F);
  std::memcpy(raw.data_ptr(), ones.data(), ones.size() * sizeof(float));
  EXPECT_NO_THROW(empty_test::forward(other));
}

// Integer and bool buffers made in the constructor, built with the buffers on meta.
struct PositionsImpl : torch::nn::Module {
  PositionsImpl() {
    ids = register_buffer("position_ids", torch::arange(8, torch::kLong));
    mask = register_buffer("mask", torch::zeros({8}, torch::kBool));
  }
  torch::Tensor ids;
  torch::Tensor mask;
};
TORCH_MODULE(Positions);

TEST_F(UninitialisedMemoryTest, IntegerAndBoolBuffersHoldTheirSentinelAndAreChecked) {
  Positions positions{nullptr};
  {
    metaguard::MetaDeviceScope scope; // buffers included
    positions = Positions();
  }
  ASSERT_TRUE(positions->ids.is_meta());
  metaguard::to_empty(*positions, torch::kCPU);
  const auto *ids = positions->ids.data_ptr<std::int64_t>();
  for (std::int64_t i = 0; i < 8; ++i)
    EXPECT_EQ(ids[i], std::numeric_limits<std::int64_t>::min()) << i;
  const auto *mask = static_cast<const std::uint8_t *>(positions->mask.data_ptr());
  for (std::int64_t i = 0; i < 8; ++i)
    EXPECT_EQ(mask[i], 1) << i;

  std::string what = uninit_error_of([&] { (void)(positions->ids + 1); });
  EXPECT_CONTAINS(what, "read 'position_ids' (Long [8])");
  EXPECT_CONTAINS(what, "given memory by to_empty(model, cpu)");
  what = uninit_error_of([&] { (void)positions->mask.logical_not(); });
  EXPECT_CONTAINS(what, "'mask' (Bool [8])");

  positions->ids.copy_(torch::arange(8, torch::kLong));
  positions->mask.zero_();
  EXPECT_TRUE(torch::equal(positions->ids + 1, torch::arange(1, 9, torch::kLong)));
  EXPECT_FALSE(positions->mask.any().item<bool>());
}

TEST_F(UninitialisedMemoryTest, UnderPolicyOffNothingIsRefused) {
  Net net = empty_net_with_memory();
  metaguard::set_policy(metaguard::Policy::Off);
  torch::Tensor out;
  EXPECT_NO_THROW(out = empty_test::forward(net));
  EXPECT_TRUE(torch::isnan(out).all().item<bool>()) << "the poison's NaNs, not stale memory";
}

TEST_F(UninitialisedMemoryTest, OffloadedParametersWorkAsBeforeBesideAHeadGivenMemory) {
  TempDir dir;
  Net saved = empty_test::saved_net(dir.path());
  Net model = empty_test::empty_net();
  metaguard::LoadOptions options;
  options.device_map = {{"", "cpu"}, {"blocks.1", "disk"}};
  metaguard::load_checkpoint_and_dispatch(*model, dir.path(), options);
  EXPECT_TRUE(torch::equal(empty_test::forward(model), empty_test::forward(saved)));

  metaguard::to_empty(*model->head, torch::kCPU); // real already: copied, nothing poisoned
  EXPECT_TRUE(torch::equal(empty_test::forward(model), empty_test::forward(saved)));
  metaguard::verify_dispatch(*model);
}

TEST_F(UninitialisedMemoryTest, AnOffloadedModelsEmptyHeadIsNamedAndItsOffloadedBlocksStillLoad) {
  TempDir dir;
  Net saved = empty_test::saved_net(dir.path());
  Net model = empty_test::empty_net();
  metaguard::LoadOptions options;
  options.device_map = {{"", "cpu"}, {"blocks.1", "disk"}};
  metaguard::load_checkpoint_and_dispatch(*model, dir.path(), options);
  // A head of the empty model's shape, given memory, replaces the loaded one.
  torch::nn::Linear head{nullptr};
  {
    auto scope = metaguard::init_empty_weights();
    head = torch::nn::Linear(16, 30);
  }
  metaguard::to_empty(*head, torch::kCPU);
  const torch::Tensor hidden = torch::ones({2, 16});
  const std::string what = uninit_error_of([&] { head->forward(hidden); });
  EXPECT_CONTAINS(what, "operator aten::addmm read 'bias' (Float [30])");
  EXPECT_CONTAINS(what, "under init_empty_weights() and given memory by to_empty(model, cpu)");
  head->weight.data().copy_(saved->head->weight);
  {
    torch::NoGradGuard no_grad;
    head->bias.copy_(saved->head->bias);
  }
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(head->forward(hidden), saved->head->forward(hidden)));
  EXPECT_TRUE(torch::equal(empty_test::forward(model), empty_test::forward(saved)));
}

} // namespace uninitialised_memory_test
} // namespace
