// load_checkpoint_and_dispatch: an empty model built with from_config under
// init_empty_weights() gets a checkpoint's weights (one file, a folder or
// sharded) in place, on devices or behind offload hooks that read the
// checkpoint, and then computes what the saved model computes.
#include "empty_model_net.h"
#include "expect_text.h"
#include "loading_test_util.h"

#include <gtest/gtest.h>

#include <map>

namespace {
namespace load_checkpoint_and_dispatch_test {

using empty_test::Net;
using metaguard::LoadOptions;
using metaguard_test::TempDir;

std::map<std::string, const c10::TensorImpl *> identities(const torch::nn::Module &module) {
  std::map<std::string, const c10::TensorImpl *> found;
  for (const auto &item : module.named_parameters())
    found[item.key()] = item.value().unsafeGetTensorImpl();
  return found;
}

class LoadCheckpointAndDispatchTest : public testing::Test {
protected:
  void SetUp() override {
    torch::manual_seed(3);
    saved_ = empty_test::saved_net(dir_.path());
  }
  TempDir dir_;
  Net saved_{nullptr};
};

TEST_F(LoadCheckpointAndDispatchTest, GivesAnEmptyModelItsWeightsInPlace) {
  Net model = empty_test::empty_net();
  for (const auto &item : model->named_parameters())
    ASSERT_TRUE(item.value().is_meta()) << item.key();
  const auto before = identities(*model);

  metaguard::load_checkpoint_and_dispatch(*model, dir_.path());

  EXPECT_EQ(identities(*model), before) << "the model keeps its Parameter objects";
  for (const auto &item : model->named_parameters()) {
    EXPECT_TRUE(item.value().device().is_cpu()) << item.key();
    EXPECT_TRUE(torch::equal(item.value(), saved_->named_parameters()[item.key()])) << item.key();
  }
  EXPECT_TRUE(torch::equal(model->scale, saved_->scale)) << "the computed buffer keeps its value";
  EXPECT_TRUE(torch::equal(empty_test::forward(model), empty_test::forward(saved_)));
}

TEST_F(LoadCheckpointAndDispatchTest, MatchesFromPretrained) {
  Net model = empty_test::empty_net();
  metaguard::load_checkpoint_and_dispatch(*model, dir_.path());
  Net loaded = metaguard::from_pretrained<Net>(dir_.path());
  const auto reference = loaded->named_parameters();
  ASSERT_EQ(model->named_parameters().size(), reference.size());
  for (const auto &item : model->named_parameters()) {
    EXPECT_EQ(item.value().scalar_type(), reference[item.key()].scalar_type()) << item.key();
    EXPECT_TRUE(torch::equal(item.value(), reference[item.key()])) << item.key();
  }
  EXPECT_TRUE(torch::equal(empty_test::forward(model), empty_test::forward(loaded)));
}

TEST_F(LoadCheckpointAndDispatchTest, DiskEntriesStayMetaBehindHooksThatReadTheCheckpoint) {
  const auto files = metaguard_test::files_in(dir_.path());
  Net model = empty_test::empty_net();
  LoadOptions options;
  options.device_map = {{"", "cpu"}, {"blocks.1", "disk"}, {"head", "disk"}};
  metaguard::load_checkpoint_and_dispatch(*model, dir_.path(), options);

  EXPECT_EQ(metaguard::offloaded_parameter_names(*model),
            (std::vector<std::string>{"blocks.1.fc.bias", "blocks.1.fc.weight", "blocks.1.norm.bias",
                                      "blocks.1.norm.weight", "head.bias", "head.weight"}));
  EXPECT_TRUE(model->head->weight.is_meta());
  EXPECT_FALSE(model->blocks[0]->as<empty_test::BlockImpl>()->fc->weight.is_meta());
  EXPECT_TRUE(torch::equal(empty_test::forward(model), empty_test::forward(saved_)));
  EXPECT_TRUE(torch::equal(metaguard::load_offloaded_parameter(*model, "head.weight"), saved_->head->weight));
  EXPECT_EQ(metaguard_test::files_in(dir_.path()), files) << "no offload folder: the checkpoint is read in place";
  metaguard::verify_dispatch(*model);
}

TEST_F(LoadCheckpointAndDispatchTest, AnAutomaticMapWithASmallBudgetOffloadsAndStillMatches) {
  Net model = empty_test::empty_net();
  LoadOptions options;
  options.device_map = metaguard::DeviceMap::automatic();
  options.max_memory = {{"cpu", 4000}};
  options.no_split_modules = {"BlockImpl"};
  metaguard::load_checkpoint_and_dispatch(*model, dir_.path(), options);
  const auto offloaded = metaguard::offloaded_parameter_names(*model);
  EXPECT_FALSE(offloaded.empty());
  EXPECT_LT(offloaded.size(), model->parameters().size());
  EXPECT_TRUE(torch::equal(empty_test::forward(model), empty_test::forward(saved_)));
}

TEST_F(LoadCheckpointAndDispatchTest, ShardedCheckpointsLoadByFolderAndByIndex) {
  TempDir sharded;
  torch::manual_seed(4);
  Net reference = empty_test::saved_net(sharded.path(), empty_test::net_config(), "2KB");
  ASSERT_TRUE(std::filesystem::exists(sharded / "model.safetensors.index.json"));
  for (const auto &location : {sharded.path(), sharded / "model.safetensors.index.json"}) {
    Net model = empty_test::empty_net();
    LoadOptions options;
    options.device_map = {{"", "cpu"}, {"blocks.2", "disk"}};
    metaguard::load_checkpoint_and_dispatch(*model, location, options);
    EXPECT_TRUE(torch::equal(empty_test::forward(model), empty_test::forward(reference))) << location;
  }
}

TEST_F(LoadCheckpointAndDispatchTest, ASingleFileLoadsByItsPath) {
  Net model = empty_test::empty_net();
  metaguard::load_checkpoint_and_dispatch(*model, dir_ / "model.safetensors");
  EXPECT_TRUE(torch::equal(empty_test::forward(model), empty_test::forward(saved_)));
}

TEST_F(LoadCheckpointAndDispatchTest, MissingKeysAreAFormatErrorNamingThemAndTheCheckpoint) {
  TempDir fewer;
  empty_test::saved_net(fewer.path(), empty_test::net_config(/*blocks=*/2));
  Net model = empty_test::empty_net();
  const std::string what = metaguard_test::format_error_of(
      [&] { metaguard::load_checkpoint_and_dispatch(*model, fewer.path()); });
  EXPECT_CONTAINS(what, fewer.path().string());
  EXPECT_CONTAINS(what, "missing keys");
  EXPECT_CONTAINS(what, "blocks.2.fc.weight");
  EXPECT_CONTAINS(what, "strict = false");
  for (const auto &item : model->named_parameters())
    EXPECT_TRUE(item.value().is_meta()) << item.key() << ": a failed load changes nothing";
}

TEST_F(LoadCheckpointAndDispatchTest, UnexpectedKeysAndShapesAreFormatErrorsNamingThem) {
  TempDir more;
  empty_test::saved_net(more.path(), empty_test::net_config(/*blocks=*/4));
  Net model = empty_test::empty_net();
  std::string what = metaguard_test::format_error_of(
      [&] { metaguard::load_checkpoint_and_dispatch(*model, more.path()); });
  EXPECT_CONTAINS(what, "unexpected keys");
  EXPECT_CONTAINS(what, "blocks.3.norm.weight");

  TempDir wider;
  empty_test::saved_net(wider.path(), empty_test::net_config(3, /*d=*/8));
  what = metaguard_test::format_error_of([&] { metaguard::load_checkpoint_and_dispatch(*model, wider.path()); });
  EXPECT_CONTAINS(what, wider.path().string());
  EXPECT_CONTAINS(what, "tensor 'embed.weight': shape [30, 8] in the checkpoint, [30, 16] in the model");
}

TEST_F(LoadCheckpointAndDispatchTest, NotStrictLoadsTheMatchingTensorsAndZeroesTheMissingOnes) {
  TempDir fewer;
  Net two = empty_test::saved_net(fewer.path(), empty_test::net_config(/*blocks=*/2));
  Net model = empty_test::empty_net();
  LoadOptions options;
  options.strict = false;
  testing::internal::CaptureStderr();
  metaguard::load_checkpoint_and_dispatch(*model, fewer.path(), options);
  const std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_CONTAINS(warning, "blocks.2.fc.weight");
  EXPECT_TRUE(torch::equal(model->head->weight, two->head->weight));
  EXPECT_TRUE(torch::equal(model->blocks[2]->as<empty_test::BlockImpl>()->fc->weight, torch::zeros({16, 16})));
}

TEST_F(LoadCheckpointAndDispatchTest, AFileThatIsNoCheckpointIsAFormatErrorNamingIt) {
  const std::string what = metaguard_test::format_error_of([&] {
    Net model = empty_test::empty_net();
    metaguard::load_checkpoint_and_dispatch(*model, dir_ / "no-such-folder");
  });
  EXPECT_CONTAINS(what, (dir_ / "no-such-folder").string());
}

TEST_F(LoadCheckpointAndDispatchTest, UnderAMetaScopeItNeedsADeviceMap) {
  Net model = empty_test::empty_net();
  {
    metaguard::MetaDeviceScope scope;
    try {
      metaguard::load_checkpoint_and_dispatch(*model, dir_.path());
      FAIL() << "expected MetaDeviceError";
    } catch (const metaguard::MetaDeviceError &e) {
      EXPECT_CONTAINS(e.what(), "load_checkpoint_and_dispatch('" + dir_.path().string() + "')");
      EXPECT_CONTAINS(e.what(), "ambient device is meta");
    }
    EXPECT_TRUE(model->head->weight.is_meta());
    LoadOptions options;
    options.device_map = metaguard::DeviceMap::on(torch::kCPU); // says where the weights go
    metaguard::load_checkpoint_and_dispatch(*model, dir_.path(), options);
  }
  EXPECT_TRUE(torch::equal(empty_test::forward(model), empty_test::forward(saved_)));
}

TEST_F(LoadCheckpointAndDispatchTest, DtypeConvertsFloatingWeights) {
  Net model = empty_test::empty_net();
  LoadOptions options;
  options.dtype = torch::kFloat64;
  options.device_map = {{"", "cpu"}, {"blocks.0", "disk"}};
  metaguard::load_checkpoint_and_dispatch(*model, dir_.path(), options);
  EXPECT_EQ(model->head->weight.scalar_type(), torch::kFloat64);
  EXPECT_EQ(metaguard::load_offloaded_parameter(*model, "blocks.0.fc.weight").scalar_type(), torch::kFloat64);
  EXPECT_TRUE(torch::equal(model->head->weight, saved_->head->weight.to(torch::kFloat64)));
}

} // namespace load_checkpoint_and_dispatch_test
} // namespace
