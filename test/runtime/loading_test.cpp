// from_config, from_pretrained and load_weights: a real model round trip,
// in-place materialisation, dtype handling, key checks and the meta-scope
// rule under every policy.
#include <metaguard/metaguard.h>

#include "expect_text.h"
#include "loading_test_model.h"
#include "loading_test_util.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {
namespace loading_test {

using metaguard::FormatError;
using metaguard::LoadOptions;
using metaguard::MetaDeviceError;
using metaguard::Policy;
using metaguard_test::AmbientLinear;
using metaguard_test::TempDir;
using metaguard_test::TinyTransformer;

std::string message_of(const std::function<void()> &f) {
  try {
    f();
  } catch (const std::exception &e) {
    return e.what();
  }
  return "";
}


class LoadingTest : public testing::Test {
protected:
  void SetUp() override {
    saved_policy_ = metaguard::policy();
    metaguard::set_policy(Policy::Throw);
    torch::manual_seed(0);
    original_ = TinyTransformer(metaguard_test::tiny_config());
    metaguard::SaveOptions save;
    save.config = metaguard_test::tiny_config();
    metaguard::save_pretrained(*original_, dir_.path(), save);
  }
  void TearDown() override {
    metaguard::set_policy(saved_policy_);
    metaguard::reset_default_device();
  }
  torch::Tensor expected_output() {
    torch::NoGradGuard no_grad;
    return original_->forward(metaguard_test::sample_ids());
  }
  void expect_same_weights(TinyTransformer &model) {
    // Kept alive: find() points into the dictionary (found by ASan: a
    // temporary dictionary here left `loaded` dangling).
    const auto loaded_parameters = model->named_parameters();
    for (const auto &item : original_->named_parameters()) {
      const auto *loaded = loaded_parameters.find(item.key());
      ASSERT_NE(loaded, nullptr) << item.key();
      EXPECT_FALSE(loaded->is_meta()) << item.key();
      EXPECT_TRUE(torch::equal(*loaded, item.value())) << item.key();
    }
  }

  Policy saved_policy_;
  TempDir dir_;
  TinyTransformer original_{nullptr};
};

TEST_F(LoadingTest, FromConfigOutsideAMetaScopeBuildsARealModel) {
  auto model = metaguard::from_config<TinyTransformer>(metaguard_test::tiny_config());
  for (const auto &p : model->parameters())
    EXPECT_TRUE(p.device().is_cpu());
}

TEST_F(LoadingTest, FromConfigUnderAMetaScopePutsParametersOnMeta) {
  {
    metaguard::MetaDeviceScope scope;
    auto model = metaguard::from_config<TinyTransformer>(metaguard_test::tiny_config());
    for (const auto &p : model->named_parameters())
      EXPECT_TRUE(p.value().is_meta()) << p.key();
    EXPECT_TRUE(model->position_ids.is_meta());
    EXPECT_EQ(model->fc1->weight.sizes(), (std::vector<int64_t>{64, 16}));
    // The module's own handle and the registered parameter are one tensor.
    EXPECT_TRUE(model->fc1->weight.is_meta());
  }
  auto scope = metaguard::init_empty_weights(); // buffers stay real
  auto model = metaguard::from_config<TinyTransformer>(metaguard_test::tiny_config());
  EXPECT_TRUE(model->fc2->weight.is_meta());
  EXPECT_FALSE(model->position_ids.is_meta());
}

TEST_F(LoadingTest, LayersUsingTensorOptionsAllocateNothingUnderMeta) {
  metaguard::MetaDeviceScope scope;
  // 400 GB of float32 weights: only possible if nothing is allocated.
  auto model = metaguard::from_config<AmbientLinear>({{"in", 100000}, {"out", 1000000}});
  EXPECT_TRUE(model->weight.is_meta());
  EXPECT_EQ(model->weight.numel(), int64_t{100000} * 1000000);
}

TEST_F(LoadingTest, SavedAndLoadedTransformerGivesIdenticalOutputs) {
  auto model = metaguard::from_pretrained<TinyTransformer>(dir_.path());
  expect_same_weights(model);
  EXPECT_TRUE(torch::equal(model->position_ids, original_->position_ids));
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(model->forward(metaguard_test::sample_ids()), expected_output()));
}

// The file a pointer lies in, according to /proc/self/maps ("" if anonymous).
std::string mapped_file_of(const void *pointer) { return metaguard_test::maps_entry_of(pointer).file; }

TEST_F(LoadingTest, CpuLoadsWithTheCheckpointDtypePointIntoTheMappedFile) {
  auto model = metaguard::from_pretrained<TinyTransformer>(dir_.path());
  for (const auto &item : model->named_parameters())
    EXPECT_EQ(mapped_file_of(item.value().data_ptr()), (dir_ / "model.safetensors").string())
        << item.key() << " was copied";
  LoadOptions options;
  options.dtype = torch::kBFloat16;
  auto converted = metaguard::from_pretrained<TinyTransformer>(dir_.path(), options);
  EXPECT_EQ(mapped_file_of(converted->fc1->weight.data_ptr()), "");
}

TEST_F(LoadingTest, LoadedParametersAreTheModulesOwnObjectsAndStayTrainable) {
  auto model = metaguard::from_config<TinyTransformer>(metaguard_test::tiny_config());
  const torch::Tensor handle = model->fc1->weight;
  metaguard::load_weights(*model, dir_.path());
  EXPECT_EQ(handle.unsafeGetTensorImpl(), model->fc1->weight.unsafeGetTensorImpl());
  EXPECT_EQ(handle.unsafeGetTensorImpl(),
            model->named_parameters().find("fc1.weight")->unsafeGetTensorImpl());
  EXPECT_TRUE(torch::equal(handle, original_->fc1->weight));
  EXPECT_TRUE(handle.requires_grad());
  // A training step writes into the loaded (copy-on-write mapped) weights.
  auto loss = model->forward(metaguard_test::sample_ids()).sum();
  loss.backward();
  {
    torch::NoGradGuard no_grad;
    for (auto &p : model->parameters())
      p.sub_(p.grad() * 0.1);
  }
  EXPECT_FALSE(torch::equal(handle, original_->fc1->weight));
  // The file is untouched.
  auto again = metaguard::from_pretrained<TinyTransformer>(dir_.path());
  expect_same_weights(again);
}

TEST_F(LoadingTest, LoadsIntoAModelBuiltOnMetaWithoutAllocatingTwice) {
  TinyTransformer model{nullptr};
  {
    metaguard::MetaDeviceScope scope;
    model = metaguard::from_config<TinyTransformer>(metaguard_test::tiny_config());
  }
  metaguard::load_weights(*model, dir_.path());
  expect_same_weights(model);
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(model->forward(metaguard_test::sample_ids()), expected_output()));
}

TEST_F(LoadingTest, ShardedCheckpointLoadsTheSame) {
  TempDir sharded;
  metaguard::SaveOptions save;
  save.max_shard_size = "2KB";
  save.config = metaguard_test::tiny_config();
  metaguard::save_pretrained(*original_, sharded.path(), save);
  ASSERT_TRUE(std::filesystem::exists(sharded / "model.safetensors.index.json"));
  auto model = metaguard::from_pretrained<TinyTransformer>(sharded.path());
  expect_same_weights(model);
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(model->forward(metaguard_test::sample_ids()), expected_output()));
}

TEST_F(LoadingTest, ConvertsFloatingWeightsToTheRequestedDtype) {
  LoadOptions options;
  options.dtype = torch::kBFloat16;
  auto model = metaguard::from_pretrained<TinyTransformer>(dir_.path(), options);
  const auto loaded_parameters = model->named_parameters();
  for (const auto &item : original_->named_parameters()) {
    const auto &loaded = *loaded_parameters.find(item.key());
    EXPECT_EQ(loaded.scalar_type(), torch::kBFloat16) << item.key();
    EXPECT_TRUE(torch::equal(loaded, item.value().to(torch::kBFloat16))) << item.key();
  }
  EXPECT_EQ(model->position_ids.scalar_type(), torch::kInt64) << "integers are not converted";
}

TEST_F(LoadingTest, CheckpointDtypeIsConvertedToTheModelsDtype) {
  TempDir bf16;
  auto half = TinyTransformer(metaguard_test::tiny_config());
  half->to(torch::kBFloat16);
  metaguard::SaveOptions save;
  save.config = metaguard_test::tiny_config();
  metaguard::save_pretrained(*half, bf16.path(), save);
  auto model = metaguard::from_pretrained<TinyTransformer>(bf16.path());
  EXPECT_EQ(model->fc1->weight.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::equal(model->fc1->weight, half->fc1->weight.to(torch::kFloat32)));
}

TEST_F(LoadingTest, ExplicitSingleDeviceMapsWork) {
  LoadOptions options;
  options.device_map = metaguard::DeviceMap::on(torch::kCPU);
  auto a = metaguard::from_pretrained<TinyTransformer>(dir_.path(), options);
  expect_same_weights(a);
  options.device_map = {{"", "cpu"}};
  auto b = metaguard::from_pretrained<TinyTransformer>(dir_.path(), options);
  expect_same_weights(b);
  options.device_map = {{"embed", "cpu"}, {"head", "cpu"}};
  const std::string error =
      message_of([&] { metaguard::from_pretrained<TinyTransformer>(dir_.path(), options); });
  EXPECT_CONTAINS(error, "places no entry over");
  EXPECT_CONTAINS(error, "fc1.weight");
}

// --- key checks ---

metaguard::NamedTensors state_of(const torch::nn::Module &module) {
  metaguard::NamedTensors state;
  for (const auto &item : module.named_parameters())
    state.emplace_back(item.key(), item.value());
  for (const auto &item : module.named_buffers())
    state.emplace_back(item.key(), item.value());
  return state;
}

void write_checkpoint(const std::filesystem::path &dir, const metaguard::NamedTensors &state) {
  metaguard::save_safetensors(dir / "model.safetensors", state);
  metaguard_test::write_bytes(dir / "config.json", metaguard_test::tiny_config().dump());
}

TEST_F(LoadingTest, MissingAndUnexpectedKeysAreListedByName) {
  auto state = state_of(*original_);
  state.erase(std::find_if(state.begin(), state.end(), [](auto &e) { return e.first == "fc2.bias"; }));
  state.emplace_back("extra.weight", torch::ones({2}));
  TempDir odd;
  write_checkpoint(odd.path(), state);
  const std::string error =
      message_of([&] { metaguard::from_pretrained<TinyTransformer>(odd.path()); });
  EXPECT_CONTAINS(error, "missing keys (in the model, not in the checkpoint): fc2.bias;");
  EXPECT_CONTAINS(error, "unexpected keys (in the checkpoint, not in the model): extra.weight;");
  EXPECT_CONTAINS(error, odd.path().string());

  // strict = false: a warning with the same names, and the model loads; the
  // missing parameter keeps the value it was built with.
  LoadOptions lenient;
  lenient.strict = false;
  testing::internal::CaptureStderr();
  auto model = metaguard::from_pretrained<TinyTransformer>(odd.path(), lenient);
  const std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_CONTAINS(warning, "warning");
  EXPECT_CONTAINS(warning, "fc2.bias");
  EXPECT_CONTAINS(warning, "extra.weight");
  EXPECT_FALSE(model->fc2->bias.is_meta());
  EXPECT_TRUE(torch::equal(model->fc1->weight, original_->fc1->weight));
}

TEST_F(LoadingTest, MissingTensorsBuiltOnMetaBecomeZerosWithAWarning) {
  TempDir dir;
  metaguard::save_safetensors(dir / "model.safetensors", {{"weight", torch::ones({3, 2})}});
  metaguard_test::write_bytes(dir / "config.json", R"({"in": 2, "out": 3})");
  LoadOptions lenient;
  lenient.strict = false;
  testing::internal::CaptureStderr();
  auto model = metaguard::from_pretrained<AmbientLinear>(dir.path(), lenient);
  const std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_CONTAINS(warning, "were on the meta device and are now zeros: bias");
  EXPECT_TRUE(torch::equal(model->bias, torch::zeros({3})));
  EXPECT_TRUE(torch::equal(model->weight, torch::ones({3, 2})));
}

TEST_F(LoadingTest, ShapeMismatchNamesTheTensorAndBothShapes) {
  auto state = state_of(*original_);
  for (auto &[name, tensor] : state)
    if (name == "fc1.weight")
      tensor = torch::zeros({32, 16});
  TempDir odd;
  write_checkpoint(odd.path(), state);
  auto model = metaguard::from_config<TinyTransformer>(metaguard_test::tiny_config());
  const auto before = model->fc1->weight.clone();
  const std::string error = message_of([&] { metaguard::load_weights(*model, odd.path()); });
  EXPECT_CONTAINS(error, "tensor 'fc1.weight': shape [32, 16] in the checkpoint, [64, 16] in the model");
  EXPECT_TRUE(torch::equal(model->fc1->weight, before)) << "nothing changed";
  EXPECT_THROW(metaguard::from_pretrained<TinyTransformer>(odd.path()), FormatError);
}

TEST_F(LoadingTest, UnloadableDtypeInTheCheckpointNamesTensorAndDtype) {
  TempDir odd;
  const std::string header = R"({"weight":{"dtype":"U16","shape":[3,2],"data_offsets":[0,12]},)"
                             R"("bias":{"dtype":"F32","shape":[3],"data_offsets":[12,24]}})";
  metaguard_test::write_bytes(odd / "model.safetensors",
                              metaguard_test::safetensors_bytes(header, std::string(24, '\0')));
  metaguard_test::write_bytes(odd / "config.json", R"({"in": 2, "out": 3})");
  const std::string error =
      message_of([&] { metaguard::from_pretrained<AmbientLinear>(odd.path()); });
  EXPECT_CONTAINS(error, "tensor 'weight' has dtype U16");
}

TEST_F(LoadingTest, MissingFilesAreClearErrors) {
  TempDir empty;
  EXPECT_CONTAINS(message_of([&] { metaguard::from_pretrained<TinyTransformer>(empty.path()); }),
                  "has neither model.safetensors nor model.safetensors.index.json");
  metaguard_test::write_bytes(empty / "pytorch_model.bin", "pickle");
  EXPECT_CONTAINS(message_of([&] { metaguard::from_pretrained<TinyTransformer>(empty.path()); }),
                  "pytorch_model.bin");
  std::filesystem::remove(dir_ / "config.json");
  EXPECT_CONTAINS(message_of([&] { metaguard::from_pretrained<TinyTransformer>(dir_.path()); }),
                  "config.json");
  metaguard_test::write_bytes(dir_ / "config.json", "{\"vocab_size\": ");
  EXPECT_CONTAINS(message_of([&] { metaguard::from_pretrained<TinyTransformer>(dir_.path()); }),
                  "not valid JSON");
}

// --- the meta-scope rule, in every policy ---

TEST_F(LoadingTest, MetaScopeWithoutDeviceMapThrowsMetaDeviceError) {
  metaguard::MetaDeviceScope scope;
  try {
    metaguard::from_pretrained<TinyTransformer>(dir_.path());
    FAIL() << "no error";
  } catch (const MetaDeviceError &e) {
    const std::string what = e.what();
    EXPECT_CONTAINS(what, "from_pretrained('" + dir_.path().string() + "')");
    EXPECT_CONTAINS(what, "ambient device is meta");
    EXPECT_CONTAINS(what, "scope is live on this thread");
    EXPECT_CONTAINS(what, "from_config");
    EXPECT_CONTAINS(what, "LoadOptions.device_map");
  }
  auto model = TinyTransformer(metaguard_test::tiny_config());
  EXPECT_THROW(metaguard::load_weights(*model, dir_.path()), MetaDeviceError);
}

TEST_F(LoadingTest, MetaDefaultDeviceIsNamedAsTheCause) {
  metaguard::set_default_device("meta");
  const std::string error =
      message_of([&] { metaguard::from_pretrained<TinyTransformer>(dir_.path()); });
  EXPECT_CONTAINS(error, "default device is meta");
  EXPECT_CONTAINS(error, "set_default_device");
}

TEST_F(LoadingTest, AnExplicitDeviceMapWinsOverTheMetaScope) {
  metaguard::MetaDeviceScope scope;
  LoadOptions options;
  options.device_map = metaguard::DeviceMap::on(torch::kCPU);
  auto model = metaguard::from_pretrained<TinyTransformer>(dir_.path(), options);
  expect_same_weights(model);
}

TEST_F(LoadingTest, ANonMetaAmbientDeviceIsWhereWeightsGo) {
  metaguard::DeviceScope scope(torch::kCPU);
  auto model = metaguard::from_pretrained<TinyTransformer>(dir_.path());
  expect_same_weights(model);
}

TEST_F(LoadingTest, WarnPolicyReportsAndLoadsOntoTheCpu) {
  metaguard::set_policy(Policy::Warn);
  metaguard::MetaDeviceScope scope;
  testing::internal::CaptureStderr();
  auto model = metaguard::from_pretrained<TinyTransformer>(dir_.path());
  const std::string printed = testing::internal::GetCapturedStderr();
  EXPECT_CONTAINS(printed, "ambient device is meta");
  EXPECT_CONTAINS(printed, "loading onto the CPU instead");
  expect_same_weights(model);
  EXPECT_TRUE(model->fc1->weight.device().is_cpu());
}

TEST_F(LoadingTest, OffPolicySkipsTheCheckAndLoadsOntoTheCpu) {
  metaguard::set_policy(Policy::Off);
  metaguard::MetaDeviceScope scope;
  testing::internal::CaptureStderr();
  auto model = metaguard::from_pretrained<TinyTransformer>(dir_.path());
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  expect_same_weights(model);
}

TEST_F(LoadingTest, AbortPolicyAbortsWithTheMessage) {
  EXPECT_DEATH(
      {
        metaguard::set_policy(Policy::Abort);
        metaguard::MetaDeviceScope scope;
        metaguard::from_pretrained<TinyTransformer>(dir_.path());
      },
      "from_pretrained\\(.*\\) was called while the ambient device is meta");
}

} // namespace loading_test
} // namespace
