// dispatch_model, OnloadGuard and load_offloaded_parameter on a small
// transformer-like model: offloaded forwards match the in-memory model bit
// for bit, and offloaded parameters really live on disk between forwards.
#include "tiny_lm.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace {
namespace dispatch_test {

namespace fs = std::filesystem;

class DispatchTest : public ::testing::Test {
protected:
  void SetUp() override {
    torch::manual_seed(7);
    dir_ = fs::temp_directory_path() / ("metaguard_dispatch_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    tiny::copy_parameters(reference_, model_);
    ids_ = torch::randint(0, 50, {2, 5}, torch::kLong);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Blocks 2 and 3 of 4 on disk, everything else on the CPU.
  metaguard::DeviceMap half_on_disk() const {
    return {{"", "cpu"}, {"blocks.2", "disk"}, {"blocks.3", "disk"}};
  }

  fs::path dir_;
  tiny::TinyLM reference_{50, 16, 4};
  tiny::TinyLM model_{50, 16, 4};
  torch::Tensor ids_;
};

TEST_F(DispatchTest, HalfTheBlocksOnDiskGiveBitIdenticalOutput) {
  torch::NoGradGuard no_grad;
  const torch::Tensor expected = reference_.forward(ids_);
  metaguard::dispatch_model(model_, half_on_disk(), dir_);
  EXPECT_TRUE(torch::equal(model_.forward(ids_), expected));
  // Twice: returning to meta and materialising again loses nothing.
  EXPECT_TRUE(torch::equal(model_.forward(ids_), expected));
}

TEST_F(DispatchTest, OffloadedParametersAreMetaBetweenForwards) {
  metaguard::dispatch_model(model_, half_on_disk(), dir_);
  auto params = model_.named_parameters(true);
  EXPECT_TRUE(params["blocks.2.attn.weight"].is_meta());
  EXPECT_TRUE(params["blocks.3.mlp_out.bias"].is_meta());
  EXPECT_FALSE(params["blocks.1.attn.weight"].is_meta());
  EXPECT_FALSE(params["embed.weight"].is_meta());
  {
    torch::NoGradGuard no_grad;
    model_.forward(ids_);
  }
  EXPECT_TRUE(params["blocks.2.attn.weight"].is_meta());
  EXPECT_EQ(params["blocks.2.attn.weight"].sizes(), torch::IntArrayRef({16, 16}));
  // Same Parameter objects as before dispatch: the module's members agree.
  auto *block = model_.blocks[2]->as<tiny::BlockImpl>();
  EXPECT_EQ(block->attn->weight.unsafeGetTensorImpl(), params["blocks.2.attn.weight"].unsafeGetTensorImpl());
  EXPECT_TRUE(block->attn->weight.requires_grad());
}

TEST_F(DispatchTest, OffloadFolderHoldsExactlyTheDiskParameters) {
  metaguard::dispatch_model(model_, half_on_disk(), dir_);
  metaguard::OffloadFolder folder(dir_);
  std::vector<std::string> expected;
  for (const auto &item : reference_.named_parameters(true))
    if (item.key().rfind("blocks.2.", 0) == 0 || item.key().rfind("blocks.3.", 0) == 0)
      expected.push_back(item.key());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(folder.names(), expected);
  EXPECT_EQ(metaguard::offloaded_parameter_names(model_), expected);
  EXPECT_TRUE(metaguard::has_offloaded_parameters(model_));
  EXPECT_FALSE(metaguard::has_offloaded_parameters(reference_));
  for (const auto &name : expected)
    EXPECT_TRUE(fs::exists(dir_ / (name + ".dat"))) << name;
}

TEST_F(DispatchTest, LoadOffloadedParameterReturnsTheRealValues) {
  metaguard::dispatch_model(model_, half_on_disk(), dir_);
  auto ref = reference_.named_parameters(true);
  for (const auto &name : metaguard::offloaded_parameter_names(model_)) {
    const torch::Tensor value = metaguard::load_offloaded_parameter(model_, name);
    EXPECT_EQ(value.device(), torch::Device(torch::kCPU));
    EXPECT_TRUE(torch::equal(value, ref[name])) << name;
  }
  // Names are relative to the module passed in.
  const torch::Tensor w = metaguard::load_offloaded_parameter(*model_.blocks[3], "mlp_in.weight");
  EXPECT_TRUE(torch::equal(w, ref["blocks.3.mlp_in.weight"]));
  // parameter_value: offloaded or not, the real value.
  EXPECT_TRUE(torch::equal(metaguard::parameter_value(model_, "blocks.2.norm.weight"), ref["blocks.2.norm.weight"]));
  EXPECT_TRUE(torch::equal(metaguard::parameter_value(model_, "head.weight"), ref["head.weight"]));
}

TEST_F(DispatchTest, AWriteToALoadedCopyDoesNotReachTheFolder) {
  metaguard::dispatch_model(model_, half_on_disk(), dir_);
  torch::Tensor copy = metaguard::load_offloaded_parameter(model_, "blocks.2.attn.weight");
  copy.fill_(42.0f);
  EXPECT_TRUE(torch::equal(metaguard::load_offloaded_parameter(model_, "blocks.2.attn.weight"),
                           reference_.named_parameters(true)["blocks.2.attn.weight"]));
}

TEST_F(DispatchTest, EveryBlockOnDiskStillMatches) {
  torch::NoGradGuard no_grad;
  const torch::Tensor expected = reference_.forward(ids_);
  metaguard::dispatch_model(model_, {{"", "disk"}}, dir_);
  EXPECT_EQ(metaguard::offloaded_parameter_names(model_).size(), reference_.parameters().size());
  EXPECT_TRUE(torch::equal(model_.forward(ids_), expected));
}

TEST_F(DispatchTest, GuardsNestAndTheOutermostReturnsToMeta) {
  metaguard::dispatch_model(model_, half_on_disk(), dir_);
  auto &block = *model_.blocks[2];
  auto weight = model_.named_parameters(true)["blocks.2.attn.weight"];
  {
    metaguard::OnloadGuard outer(block);
    EXPECT_FALSE(weight.is_meta());
    {
      metaguard::OnloadGuard inner(*model_.blocks[2]->as<tiny::BlockImpl>()->attn);
      EXPECT_FALSE(weight.is_meta());
    }
    EXPECT_FALSE(weight.is_meta()) << "the inner guard must not take the outer guard's parameters away";
    EXPECT_TRUE(torch::equal(weight, reference_.named_parameters(true)["blocks.2.attn.weight"]));
    metaguard::verify_dispatch(model_); // materialised under a guard is fine
  }
  EXPECT_TRUE(weight.is_meta());
}

TEST_F(DispatchTest, GuardOnAModuleWithoutOffloadIsFree) {
  metaguard::dispatch_model(model_, half_on_disk(), dir_);
  metaguard::OnloadGuard guard(*model_.blocks[0]);
  EXPECT_EQ(guard.device(), torch::Device(torch::kCPU));
  EXPECT_FALSE(model_.named_parameters(true)["blocks.0.attn.weight"].is_meta());
}

TEST_F(DispatchTest, DispatchAgainWithANewMapMovesEverythingBack) {
  torch::NoGradGuard no_grad;
  metaguard::dispatch_model(model_, half_on_disk(), dir_);
  metaguard::dispatch_model(model_, metaguard::DeviceMap::on(torch::kCPU));
  EXPECT_FALSE(metaguard::has_offloaded_parameters(model_));
  auto ref = reference_.named_parameters(true);
  for (const auto &item : model_.named_parameters(true))
    EXPECT_TRUE(torch::equal(item.value(), ref[item.key()])) << item.key();
  model_.to(torch::kCPU); // allowed again
  metaguard::verify_dispatch(model_);
  EXPECT_TRUE(torch::equal(model_.forward(ids_), reference_.forward(ids_)));
}

TEST_F(DispatchTest, DispatchAgainOntoOtherBlocks) {
  torch::NoGradGuard no_grad;
  const torch::Tensor expected = reference_.forward(ids_);
  metaguard::dispatch_model(model_, half_on_disk(), dir_);
  metaguard::dispatch_model(model_, {{"", "disk"}, {"blocks.2", "cpu"}, {"head", "cpu"}}, dir_ / "second");
  EXPECT_FALSE(model_.named_parameters(true)["blocks.2.attn.weight"].is_meta());
  EXPECT_TRUE(model_.named_parameters(true)["blocks.0.attn.weight"].is_meta());
  EXPECT_TRUE(torch::equal(model_.forward(ids_), expected));
}

TEST_F(DispatchTest, AStrategyResolvesAgainstTheModel) {
  torch::NoGradGuard no_grad;
  const torch::Tensor expected = reference_.forward(ids_);
  metaguard::DeviceMap map = metaguard::DeviceMap::automatic();
  // dispatch_model resolves strategies with the memory available now: on this
  // machine a model of a few KiB fits on the CPU entirely.
  metaguard::dispatch_model(model_, map);
  EXPECT_FALSE(metaguard::has_offloaded_parameters(model_));
  EXPECT_TRUE(torch::equal(model_.forward(ids_), expected));
}

// A weights map that is not a folder: what from_pretrained uses with a
// safetensors checkpoint.
struct MapWeights : metaguard::WeightsMap {
  std::map<std::string, torch::Tensor> tensors;
  mutable int loads = 0;
  bool contains(const std::string &name) const override { return tensors.count(name) != 0; }
  torch::Tensor load(const std::string &name) const override {
    ++loads;
    return tensors.at(name);
  }
  std::vector<std::string> names() const override {
    std::vector<std::string> out;
    for (const auto &[n, t] : tensors)
      out.push_back(n);
    return out;
  }
};

TEST_F(DispatchTest, AttachOffloadHooksWithAnyWeightsMap) {
  torch::NoGradGuard no_grad;
  const torch::Tensor expected = reference_.forward(ids_);
  auto weights = std::make_shared<MapWeights>();
  for (const auto &item : reference_.named_parameters(true))
    if (item.key().rfind("blocks.1.", 0) == 0)
      weights->tensors[item.key()] = item.value().to(torch::kFloat64); // converted back on load
  const auto resolved =
      metaguard::resolve_device_map(model_, {{"", "cpu"}, {"blocks.1", "disk"}});
  metaguard::attach_offload_hooks(model_, resolved, weights);
  EXPECT_TRUE(model_.named_parameters(true)["blocks.1.mlp_in.weight"].is_meta());
  EXPECT_EQ(model_.named_parameters(true)["blocks.1.mlp_in.weight"].scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::equal(model_.forward(ids_), expected));
  EXPECT_EQ(weights->loads, 8) << "one load per offloaded parameter (8 per block) per forward";
}

TEST_F(DispatchTest, AttachListsParametersTheWeightsMapLacks) {
  auto weights = std::make_shared<MapWeights>();
  weights->tensors["blocks.1.attn.weight"] = torch::zeros({16, 16});
  const auto resolved = metaguard::resolve_device_map(model_, {{"", "cpu"}, {"blocks.1", "disk"}});
  try {
    metaguard::attach_offload_hooks(model_, resolved, weights);
    FAIL() << "expected OffloadError";
  } catch (const metaguard::OffloadError &e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("blocks.1.attn.bias: not in the weights map"), std::string::npos) << what;
    EXPECT_NE(what.find("blocks.1.mlp_out.weight"), std::string::npos) << what;
    EXPECT_EQ(what.find("blocks.1.attn.weight:"), std::string::npos) << what;
  }
  EXPECT_FALSE(metaguard::has_offloaded_parameters(model_));
  EXPECT_FALSE(model_.named_parameters(true)["blocks.1.attn.weight"].is_meta()) << "nothing changed";
}

TEST_F(DispatchTest, ModelsOwnedBySharedPtrAndStackModelsAtTheSameAddress) {
  // A dead model's hooks must never apply to a new model at the same address.
  for (int round = 0; round < 3; ++round) {
    auto model = std::make_shared<tiny::TinyLM>(50, 16, 4);
    metaguard::dispatch_model(*model, half_on_disk(), dir_ / std::to_string(round));
    EXPECT_TRUE(metaguard::has_offloaded_parameters(*model));
  }
  tiny::TinyLM fresh(50, 16, 4);
  EXPECT_FALSE(metaguard::has_offloaded_parameters(fresh));
  metaguard::verify_dispatch(fresh);
}

} // namespace dispatch_test
} // namespace
