// Save -> reload with no extra argument every module the
// runtime built remembers its config, and a PreTrainedModel built as
// Model(config) does too, as in transformers' `Model(config).save_pretrained`.
#include <metaguard/metaguard.h>

#include "loading_test_util.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>

namespace {
namespace config_round_trip_test {

namespace fs = std::filesystem;
using metaguard_test::TempDir;

// With the "dtype" that save_pretrained writes (the saved weights'), so
// that configs round-trip unchanged.
metaguard::Config tiny_config(int width) {
  return {{"model_type", "tiny"}, {"width", width}, {"dtype", "float32"}};
}

// A plain torch::nn::Module: nothing in it can hold a config.
struct PlainImpl : torch::nn::Module {
  explicit PlainImpl(const metaguard::Config &config)
      : fc(register_module("fc", torch::nn::Linear(config.at("width").get<int64_t>(), 3))) {}
  torch::nn::Linear fc;
};
TORCH_MODULE(Plain);

// The same, deep-copyable (clone() needs torch::nn::Cloneable).
struct CopyableImpl : torch::nn::Cloneable<CopyableImpl> {
  explicit CopyableImpl(const metaguard::Config &config) : width(config.at("width").get<int64_t>()) {
    reset();
  }
  void reset() override { fc = register_module("fc", torch::nn::Linear(width, 3)); }
  int64_t width;
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(Copyable);

// transformers' idiom: the constructor hands the config to the base.
struct OwnModelImpl : metaguard::PreTrainedModel {
  explicit OwnModelImpl(const metaguard::Config &config)
      : metaguard::PreTrainedModel(config),
        fc(register_module("fc", torch::nn::Linear(config.at("width").get<int64_t>(), 2))) {}
  torch::nn::Linear fc;
};
TORCH_MODULE(OwnModel);

// A PreTrainedModel whose constructor forgets to pass the config on.
struct ForgetfulImpl : metaguard::PreTrainedModel {
  explicit ForgetfulImpl(const metaguard::Config &config)
      : fc(register_module("fc", torch::nn::Linear(config.at("width").get<int64_t>(), 2))) {}
  torch::nn::Linear fc;
};
TORCH_MODULE(Forgetful);

void save_with_config(const torch::nn::Module &module, const fs::path &dir,
                      const metaguard::Config &config) {
  metaguard::SaveOptions options;
  options.config = config;
  metaguard::save_pretrained(module, dir, options);
}

TEST(ConfigRoundTrip, APlainModuleLoadedWithFromPretrainedSavesItsConfig) {
  TempDir dir;
  Plain original(tiny_config(5));
  save_with_config(*original, dir / "first", tiny_config(5));

  auto loaded = metaguard::from_pretrained<Plain>(dir / "first");
  metaguard::save_pretrained(*loaded, dir / "second");
  ASSERT_TRUE(fs::exists(dir / "second" / "config.json"));
  EXPECT_EQ(metaguard::load_config(dir / "second"), tiny_config(5));
  auto again = metaguard::from_pretrained<Plain>(dir / "second");
  EXPECT_TRUE(torch::equal(again->fc->weight, original->fc->weight));
}

TEST(ConfigRoundTrip, APlainModuleBuiltWithFromConfigSavesItsConfig) {
  TempDir dir;
  auto model = metaguard::from_config<Plain>(tiny_config(7));
  metaguard::save_pretrained(*model, dir.path());
  EXPECT_EQ(metaguard::load_config(dir.path()), tiny_config(7));
  EXPECT_EQ(metaguard::from_pretrained<Plain>(dir.path())->fc->weight.size(1), 7);
}

TEST(ConfigRoundTrip, LoadingAndDispatchingKeepTheModuleRecognised) {
  TempDir dir;
  Plain original(tiny_config(4));
  save_with_config(*original, dir / "first", tiny_config(4));
  auto model = metaguard::from_config<Plain>(tiny_config(4));
  metaguard::load_weights(*model, dir / "first");
  metaguard::dispatch_model(*model, metaguard::DeviceMap::on(torch::kCPU));
  metaguard::save_pretrained(*model, dir / "second");
  EXPECT_EQ(metaguard::load_config(dir / "second"), tiny_config(4));
}

TEST(ConfigRoundTrip, OnlyTheModuleTheRuntimeBuiltIsRecognised) {
  TempDir dir;
  auto model = metaguard::from_config<Plain>(tiny_config(3));
  // A submodule, a deep copy, a module built by hand: no config of theirs.
  metaguard::save_pretrained(*model->fc, dir / "sub");
  EXPECT_FALSE(fs::exists(dir / "sub" / "config.json"));
  auto copyable = metaguard::from_config<Copyable>(tiny_config(3));
  auto copy = copyable->clone();
  metaguard::save_pretrained(*copy, dir / "clone");
  EXPECT_FALSE(fs::exists(dir / "clone" / "config.json"));
  Plain by_hand(tiny_config(3));
  metaguard::save_pretrained(*by_hand, dir / "by_hand");
  EXPECT_FALSE(fs::exists(dir / "by_hand" / "config.json"));
}

TEST(ConfigRoundTrip, ADeadModelsConfigIsNeverHandedToANewOne) {
  TempDir dir;
  for (int i = 0; i < 50; ++i)
    metaguard::from_config<Plain>(tiny_config(2));
  Plain by_hand(tiny_config(2));
  metaguard::save_pretrained(*by_hand, dir.path());
  EXPECT_FALSE(fs::exists(dir / "config.json"));
}

TEST(ConfigRoundTrip, APreTrainedModelBuiltFromItsConfigSavesIt) {
  TempDir dir;
  OwnModel model(tiny_config(6));
  EXPECT_EQ(model->config(), tiny_config(6));
  metaguard::save_pretrained(*model, dir.path());
  EXPECT_EQ(metaguard::load_config(dir.path()), tiny_config(6));
  auto loaded = metaguard::from_pretrained<OwnModel>(dir.path());
  EXPECT_TRUE(torch::equal(loaded->fc->weight, model->fc->weight));
  EXPECT_EQ(loaded->config(), tiny_config(6));
}

TEST(ConfigRoundTrip, AnExplicitConfigStillWins) {
  TempDir dir;
  OwnModel model(tiny_config(6));
  metaguard::Config explicit_config = tiny_config(6);
  explicit_config["extra"] = true;
  save_with_config(*model, dir.path(), explicit_config);
  EXPECT_TRUE(metaguard::load_config(dir.path()).at("extra").get<bool>());
}

TEST(ConfigRoundTrip, APreTrainedModelWithoutConfigSaysWhyNoConfigIsWritten) {
  TempDir dir;
  Forgetful model(tiny_config(2));
  testing::internal::CaptureStderr();
  metaguard::save_pretrained(*model, dir.path());
  const std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(fs::exists(dir / "config.json"));
  EXPECT_NE(warning.find("no config.json"), std::string::npos) << warning;
  EXPECT_NE(warning.find("PreTrainedModel(config)"), std::string::npos) << warning;

  metaguard::SaveOptions bare;
  bare.save_config = false;
  testing::internal::CaptureStderr();
  metaguard::save_pretrained(*model, dir / "bare", bare);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

} // namespace config_round_trip_test
} // namespace
