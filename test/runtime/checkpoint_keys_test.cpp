// metaguard::Module's checkpoint declarations: non-persistent buffers, tied
// weights, base_model_prefix and the ignore lists, through save_pretrained,
// from_pretrained and load_weights. (test/interop/ checks the same against
// checkpoints transformers wrote.)
#include <metaguard/metaguard.h>

#include "expect_text.h"
#include "loading_test_util.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>

namespace {
namespace checkpoint_keys_test {

using metaguard::FormatError;
using metaguard_test::TempDir;

// A base model: an embedding and a sub-module with a computed buffer (not in
// checkpoints) and a persistent one.
struct RotaryImpl : metaguard::Module {
  RotaryImpl() {
    inv_freq = register_buffer("inv_freq", torch::arange(4).to(torch::kFloat32),
                               /*persistent=*/false);
    scale = register_buffer("scale", torch::ones({2}));
  }
  torch::Tensor inv_freq, scale;
};
TORCH_MODULE(Rotary);

struct BaseImpl : metaguard::PreTrainedModel {
  explicit BaseImpl(const metaguard::Config & = {}) {
    emb = register_module("emb", torch::nn::Embedding(8, 4));
    rot = register_module("rot", Rotary());
  }
  std::string base_model_prefix() const override { return "base"; }
  torch::nn::Embedding emb{nullptr};
  Rotary rot{nullptr};
};
TORCH_MODULE(Base);

// The base plus a head whose weight is tied to the embedding. With
// config["tie_in_constructor"] false the model declares the tie without
// making it (loading must make it).
struct WithHeadImpl : metaguard::PreTrainedModel {
  explicit WithHeadImpl(const metaguard::Config &config = {}) {
    base = register_module("base", Base());
    head = register_module("head", std::make_shared<torch::nn::Module>());
    const bool tie =
        !config.is_object() || config.value("tie_in_constructor", true);
    head_weight = head->register_parameter(
        "weight", tie ? base->emb->weight : torch::randn({8, 4}));
    head_bias = head->register_parameter("bias", torch::randn({8}));
  }
  std::string base_model_prefix() const override { return "base"; }
  metaguard::TiedWeights tied_weights_keys() const override {
    return {{"head.weight", "base.emb.weight"}};
  }
  std::vector<std::string> keys_to_ignore_on_load_missing() const override {
    return ignore_missing;
  }
  Base base{nullptr};
  std::shared_ptr<torch::nn::Module> head;
  torch::Tensor head_weight, head_bias;
  std::vector<std::string> ignore_missing;
};
TORCH_MODULE(WithHead);

// Models built by hand remember no config: give config.json one.
void save(const torch::nn::Module &model, const std::filesystem::path &dir,
          metaguard::Config config = metaguard::Config::object()) {
  metaguard::SaveOptions options;
  options.config = std::move(config);
  metaguard::save_pretrained(model, dir, options);
}

std::set<std::string> keys_of(const std::filesystem::path &dir) {
  metaguard::SafetensorsCheckpoint checkpoint(dir);
  return {checkpoint.names().begin(), checkpoint.names().end()};
}


TEST(CheckpointKeys, SaveLeavesOutTiedCopiesAndComputedBuffers) {
  TempDir dir;
  WithHead model;
  save(*model, dir.path());
  EXPECT_EQ(keys_of(dir.path()),
            (std::set<std::string>{"base.emb.weight", "base.rot.scale",
                                   "head.bias"}));
}

TEST(CheckpointKeys, UntiedTargetIsSavedUnderItsOwnName) {
  TempDir dir;
  WithHead model(metaguard::Config{{"tie_in_constructor", false}});
  save(*model, dir.path());
  EXPECT_EQ(keys_of(dir.path()).count("head.weight"), 1U);
}

TEST(CheckpointKeys, TiedTargetLoadsFromItsSourceAndSharesIt) {
  TempDir dir;
  WithHead saved;
  saved->base->rot->inv_freq.fill_(42); // computed: must not travel
  save(*saved, dir.path(), metaguard::Config{{"tie_in_constructor", false}});
  auto loaded = metaguard::from_pretrained<WithHead>(dir.path());
  EXPECT_TRUE(
      torch::equal(loaded->base->emb->weight, saved->base->emb->weight));
  // Declared, not made by the constructor: loading ties them.
  EXPECT_EQ(loaded->head_weight.data_ptr(),
            loaded->base->emb->weight.data_ptr());
  EXPECT_TRUE(torch::equal(loaded->base->rot->inv_freq,
                           torch::arange(4).to(torch::kFloat32)));
}

TEST(CheckpointKeys, CheckpointHoldingTheComputedBufferLoads) {
  TempDir dir;
  WithHead saved;
  metaguard::save_safetensors(dir / "model.safetensors",
                              {{"base.emb.weight", saved->base->emb->weight},
                               {"base.rot.scale", saved->base->rot->scale},
                               {"base.rot.inv_freq", torch::full({4}, 7.0)},
                               {"head.bias", saved->head_bias}});
  WithHead model;
  metaguard::load_weights(*model, dir.path()); // strict: not an unexpected key
  EXPECT_TRUE(torch::equal(model->base->rot->inv_freq,
                           torch::arange(4).to(torch::kFloat32)));
}

TEST(CheckpointKeys, BaseModelStripsThePrefixOfAHeadCheckpoint) {
  TempDir dir;
  WithHead saved;
  save(*saved, dir.path());
  testing::internal::CaptureStderr();
  auto base = metaguard::from_pretrained<Base>(dir.path());
  const std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(torch::equal(base->emb->weight, saved->base->emb->weight));
  EXPECT_CONTAINS(warning,
                  "head.bias"); // the head's tensors: left out, said so
}

TEST(CheckpointKeys, HeadModelAddsThePrefixToABaseCheckpoint) {
  TempDir dir;
  Base saved;
  save(*saved, dir.path());
  const std::string error =
      metaguard_test::format_error_of([&] { metaguard::from_pretrained<WithHead>(dir.path()); });
  EXPECT_CONTAINS(
      error, "missing keys (in the model, not in the checkpoint): head.bias;");
  EXPECT_CONTAINS(error, "'base.'");
  metaguard::LoadOptions lenient;
  lenient.strict = false;
  testing::internal::CaptureStderr();
  auto model = metaguard::from_pretrained<WithHead>(dir.path(), lenient);
  testing::internal::GetCapturedStderr();
  EXPECT_TRUE(torch::equal(model->base->emb->weight, saved->emb->weight));
  EXPECT_TRUE(torch::equal(model->head_weight, saved->emb->weight));
}

TEST(CheckpointKeys, OffloadedParametersReadRenamedKeys) {
  // On disk, a parameter is read on demand by the offload hook: under the
  // checkpoint's name (prefix stripped) and, for a tie, under its source's.
  TempDir dir;
  WithHead saved;
  save(*saved, dir.path(), metaguard::Config{{"tie_in_constructor", false}});
  metaguard::LoadOptions options;
  // A tie has one placement (the map puts both sides on disk).
  options.device_map = {{"base.rot", "cpu"}, {"base.emb", "disk"}, {"head", "disk"}};
  auto model = metaguard::from_pretrained<WithHead>(dir.path(), options);
  EXPECT_EQ(metaguard::offloaded_parameter_names(*model),
            (std::vector<std::string>{"base.emb.weight", "head.bias", "head.weight"}));
  EXPECT_TRUE(torch::equal(metaguard::parameter_value(*model, "head.weight"),
                           saved->base->emb->weight));

  options.device_map = {{"emb", "disk"}, {"rot", "cpu"}};
  testing::internal::CaptureStderr();
  auto base = metaguard::from_pretrained<Base>(dir.path(), options);
  testing::internal::GetCapturedStderr();
  EXPECT_TRUE(torch::equal(metaguard::parameter_value(*base, "emb.weight"),
                           saved->base->emb->weight));
}

TEST(CheckpointKeys, TieSplitBetweenCpuAndDiskLoadsInMemoryWithAWarning) {
  // One side on the CPU, the other on disk: the one tensor stays in memory
  // on the CPU for both, as transformers' loaders keep the values equal.
  TempDir dir;
  for (const bool in_constructor : {true, false}) {
    WithHead saved;
    save(*saved, dir.path(), metaguard::Config{{"tie_in_constructor", in_constructor}});
    metaguard::LoadOptions options;
    options.device_map = {{"base", "cpu"}, {"head", "disk"}};
    testing::internal::CaptureStderr();
    auto model = metaguard::from_pretrained<WithHead>(dir.path(), options);
    const std::string printed = testing::internal::GetCapturedStderr();
    EXPECT_CONTAINS(printed, "tied parameters 'base.emb.weight' on cpu and 'head.weight' on disk");
    EXPECT_EQ(metaguard::offloaded_parameter_names(*model), (std::vector<std::string>{"head.bias"}));
    EXPECT_TRUE(torch::equal(model->head_weight, saved->base->emb->weight));
    EXPECT_EQ(model->head_weight.data_ptr(), model->base->emb->weight.data_ptr());
  }
  // dispatch_model moves an in-memory model and refuses the split, before
  // changing anything.
  auto model = metaguard::from_pretrained<WithHead>(dir.path());
  TempDir folder;
  try {
    metaguard::dispatch_model(*model, {{"base", "cpu"}, {"head", "disk"}}, folder.path());
    ADD_FAILURE() << "dispatch_model: no error";
  } catch (const metaguard::Error &e) {
    EXPECT_CONTAINS(e.what(), "tied parameters 'base.emb.weight' on cpu and 'head.weight' on disk");
  }
  EXPECT_FALSE(metaguard::has_offloaded_parameters(*model));
}

TEST(CheckpointKeys, IgnoredMissingKeysAreNotReported) {
  TempDir dir;
  Base saved;
  save(*saved, dir.path());
  WithHead model;
  model->ignore_missing = {"^head\\.b"};
  metaguard::load_weights(*model, dir.path());
  EXPECT_TRUE(torch::equal(model->base->emb->weight, saved->emb->weight));
}

TEST(CheckpointKeys, InvalidIgnorePatternIsNamed) {
  TempDir dir;
  Base saved;
  save(*saved, dir.path());
  WithHead model;
  model->ignore_missing = {"head("};
  try {
    metaguard::load_weights(*model, dir.path());
    FAIL() << "no error";
  } catch (const metaguard::Error &e) {
    EXPECT_CONTAINS(e.what(), "keys_to_ignore_on_load_missing holds 'head('");
  }
}

TEST(CheckpointKeys, ShapeMismatchNamesCheckpointKeyAndModelName) {
  TempDir dir;
  metaguard::save_safetensors(
      dir / "model.safetensors",
      {{"emb.weight", torch::zeros({9, 4})}, {"rot.scale", torch::ones({2})}});
  WithHead model;
  const std::string error =
      metaguard_test::format_error_of([&] { metaguard::load_weights(*model, dir.path()); });
  EXPECT_CONTAINS(error, "tensor 'emb.weight' (for 'base.emb.weight'): shape "
                         "[9, 4] in the checkpoint, [8, 4]");
}

// A checkpoint holding `tensors` (names as given) and a config.json.
void write_checkpoint(const std::filesystem::path &dir, const metaguard::NamedTensors &tensors,
                      const metaguard::Config &config) {
  metaguard::save_safetensors(dir / "model.safetensors", tensors);
  std::ofstream(dir / "config.json") << config.dump();
}

TEST(CheckpointKeys, TieGoesTheOtherWayWhenOnlyTheTargetIsSaved) {
  // transformers' tie_weights during from_pretrained: the source takes the
  // target's values, and nothing is missing.
  TempDir dir;
  const auto head = torch::randn({8, 4});
  for (const bool in_constructor : {true, false}) {
    write_checkpoint(dir.path(),
                     {{"base.rot.scale", torch::ones({2})}, {"head.weight", head},
                      {"head.bias", torch::zeros({8})}},
                     {{"tie_in_constructor", in_constructor}});
    auto model = metaguard::from_pretrained<WithHead>(dir.path()); // strict
    EXPECT_TRUE(torch::equal(model->base->emb->weight, head)) << in_constructor;
    EXPECT_EQ(model->head_weight.data_ptr(), model->base->emb->weight.data_ptr());
  }
}

TEST(CheckpointKeys, EqualCopiesOfATieLoadTied) {
  TempDir dir;
  const auto emb = torch::randn({8, 4});
  write_checkpoint(dir.path(),
                   {{"base.emb.weight", emb}, {"base.rot.scale", torch::ones({2})},
                    {"head.weight", emb.clone()}, {"head.bias", torch::zeros({8})}},
                   {{"tie_in_constructor", false}});
  auto model = metaguard::from_pretrained<WithHead>(dir.path());
  EXPECT_TRUE(torch::equal(model->base->emb->weight, emb));
  EXPECT_EQ(model->head_weight.data_ptr(), model->base->emb->weight.data_ptr());
}

TEST(CheckpointKeys, DifferentCopiesOfATieAreUntiedAsTransformersDoes) {
  TempDir dir;
  const auto emb = torch::randn({8, 4}), head = torch::randn({8, 4});
  write_checkpoint(dir.path(),
                   {{"base.emb.weight", emb}, {"base.rot.scale", torch::ones({2})},
                    {"head.weight", head}, {"head.bias", torch::zeros({8})}},
                   {{"tie_in_constructor", false}});
  testing::internal::CaptureStderr();
  auto model = metaguard::from_pretrained<WithHead>(dir.path());
  const std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_CONTAINS(warning, "'base.emb.weight' and 'head.weight' with different values");
  EXPECT_TRUE(torch::equal(model->base->emb->weight, emb));
  EXPECT_TRUE(torch::equal(model->head_weight, head));
  // Untied, both are saved again.
  TempDir resaved;
  metaguard::save_pretrained(*model, resaved.path());
  EXPECT_EQ(keys_of(resaved.path()).count("head.weight"), 1U);
}

TEST(CheckpointKeys, DifferentCopiesOfATieTheModelHoldsAsOneTensorAreRefused) {
  TempDir dir;
  const auto emb = torch::randn({8, 4});
  write_checkpoint(dir.path(),
                   {{"base.emb.weight", emb}, {"base.rot.scale", torch::ones({2})},
                    {"head.weight", torch::randn({8, 4})}, {"head.bias", torch::zeros({8})}},
                   metaguard::Config::object());
  const std::string error =
      metaguard_test::format_error_of([&] { metaguard::from_pretrained<WithHead>(dir.path()); });
  EXPECT_CONTAINS(error, "'base.emb.weight' and 'head.weight' with different values");
  EXPECT_CONTAINS(error, "as one tensor");
  metaguard::LoadOptions lenient;
  lenient.strict = false;
  testing::internal::CaptureStderr();
  auto model = metaguard::from_pretrained<WithHead>(dir.path(), lenient);
  EXPECT_CONTAINS(testing::internal::GetCapturedStderr(), "with the values of 'base.emb.weight'");
  EXPECT_TRUE(torch::equal(model->head_weight, emb));
}

// T5's shape: one source with several targets, each its own Parameter
// (shared.weight; encoder's and decoder's embed_tokens; lm_head).
struct SharedImpl : metaguard::PreTrainedModel {
  SharedImpl() {
    for (const char *name : {"shared", "first", "second", "lm_head"})
      weights.push_back(register_parameter(name, torch::randn({8, 4})));
  }
  metaguard::TiedWeights tied_weights_keys() const override {
    return {{"first", "shared"}, {"second", "shared"}, {"lm_head", "shared"}};
  }
  std::vector<torch::Tensor> weights;
};
TORCH_MODULE(Shared);

TEST(CheckpointKeys, MissingSourceTakesTheFirstTargetAndADifferentTargetBreaksAway) {
  // transformers 5.23 on T5 with tie_word_embeddings, shared.weight not
  // saved, the two embeddings saved with different values: shared, the
  // encoder's and lm_head are one tensor with the encoder's values; the
  // decoder's keeps its own, untied, with a warning.
  TempDir dir;
  const auto first = torch::randn({8, 4}), second = torch::randn({8, 4});
  write_checkpoint(dir.path(), {{"first", first}, {"second", second}}, metaguard::Config::object());
  Shared model;
  testing::internal::CaptureStderr();
  metaguard::load_weights(*model, dir.path());
  EXPECT_CONTAINS(testing::internal::GetCapturedStderr(),
                  "'first' and 'second' with different values: the tie is broken");
  const auto &weights = model->weights;
  EXPECT_TRUE(torch::equal(weights[0], first));
  EXPECT_EQ(weights[1].data_ptr(), weights[0].data_ptr());
  EXPECT_EQ(weights[3].data_ptr(), weights[0].data_ptr());
  EXPECT_TRUE(torch::equal(weights[2], second));
  EXPECT_NE(weights[2].data_ptr(), weights[0].data_ptr());
}

TEST(CheckpointKeys, TieWithNeitherSideSavedIsMissingNotZeros) {
  TempDir dir;
  write_checkpoint(dir.path(), {{"base.rot.scale", torch::ones({2})}, {"head.bias", torch::zeros({8})}},
                   metaguard::Config::object());
  const std::string error =
      metaguard_test::format_error_of([&] { metaguard::from_pretrained<WithHead>(dir.path()); });
  EXPECT_CONTAINS(error, "missing keys (in the model, not in the checkpoint): base.emb.weight, "
                         "head.weight;");
}

TEST(CheckpointKeys, SavedConfigNamesTheDtypeOfTheSavedWeights) {
  // A float16 checkpoint loaded into a float32 model and saved: config.json
  // says float32 (transformers builds the model in the dtype it reads
  // there); after .to(bfloat16) it says bfloat16; mixed, the first
  // floating-point parameter's (transformers' PreTrainedModel.dtype).
  TempDir dir, resaved;
  WithHead saved;
  saved->to(torch::kFloat16);
  save(*saved, dir.path(), metaguard::Config{{"dtype", "float16"}, {"torch_dtype", "float16"}});
  EXPECT_EQ(metaguard::load_config(dir.path()).at("dtype"), "float16");
  auto model = metaguard::from_pretrained<WithHead>(dir.path());
  auto dtype_saved = [&] {
    metaguard::save_pretrained(*model, resaved.path());
    const auto config = metaguard::load_config(resaved.path());
    EXPECT_EQ(config.at("torch_dtype"), config.at("dtype")); // the legacy key agrees
    return config.at("dtype").get<std::string>();
  };
  EXPECT_EQ(dtype_saved(), "float32");
  model->to(torch::kBFloat16);
  EXPECT_EQ(dtype_saved(), "bfloat16");
  model->base->emb->to(torch::kFloat32);
  EXPECT_EQ(dtype_saved(), "float32");
}

} // namespace checkpoint_keys_test
} // namespace
