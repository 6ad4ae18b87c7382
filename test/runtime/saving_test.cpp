// save_pretrained: file layout like transformers', sharding, stale files,
// and atomicity when saving fails.
#include <metaguard/metaguard.h>

#include "expect_text.h"
#include "loading_test_model.h"
#include "loading_test_util.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <csignal>
#include <sys/resource.h>

namespace {
namespace saving_test {

using metaguard::FormatError;
using metaguard::SafetensorsFile;
using metaguard_test::TempDir;
using metaguard_test::files_in;


// Three parameters of known sizes: a 400 B, b 400 B, c 1200 B.
struct ThreeImpl : torch::nn::Module {
  ThreeImpl() {
    a = register_parameter("a", torch::arange(100, torch::kFloat32));
    b = register_parameter("b", torch::arange(100, torch::kFloat32) * 2);
    c = register_parameter("c", torch::arange(300, torch::kFloat32) * 3);
  }
  torch::Tensor a, b, c;
};
TORCH_MODULE(Three);

TEST(SavingTest, SmallModelIsOneFileWithFormatMetadata) {
  TempDir dir;
  Three model;
  metaguard::save_pretrained(*model, dir.path());
  EXPECT_EQ(files_in(dir.path()), std::vector<std::string>{"model.safetensors"});
  SafetensorsFile file(dir / "model.safetensors");
  EXPECT_EQ(file.metadata(), (std::map<std::string, std::string>{{"format", "pt"}}));
  EXPECT_EQ(file.names(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(torch::equal(file.tensor("c"), model->c));
}

TEST(SavingTest, ShardsAboveTheLimitWithAnIndexLikeTransformers) {
  TempDir dir;
  Three model;
  metaguard::SaveOptions options;
  options.max_shard_size = 1000; // a+b = 800 fit, c does not: it starts shard 2
  metaguard::save_pretrained(*model, dir.path(), options);
  EXPECT_EQ(files_in(dir.path()),
            (std::vector<std::string>{"model-00001-of-00002.safetensors",
                                      "model-00002-of-00002.safetensors",
                                      "model.safetensors.index.json"}));
  // json.dumps(index, indent=2, sort_keys=True) + "\n", written out by hand.
  EXPECT_EQ(metaguard_test::read_bytes(dir / "model.safetensors.index.json"),
            "{\n"
            "  \"metadata\": {\n"
            "    \"total_size\": 2000\n"
            "  },\n"
            "  \"weight_map\": {\n"
            "    \"a\": \"model-00001-of-00002.safetensors\",\n"
            "    \"b\": \"model-00001-of-00002.safetensors\",\n"
            "    \"c\": \"model-00002-of-00002.safetensors\"\n"
            "  }\n"
            "}\n");
  EXPECT_EQ(SafetensorsFile(dir / "model-00001-of-00002.safetensors").names(),
            (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(SafetensorsFile(dir / "model-00002-of-00002.safetensors").metadata().at("format"), "pt");
}

TEST(SavingTest, ShardSizeAcceptsSizeStrings) {
  TempDir dir;
  Three model;
  metaguard::save_pretrained(*model, dir.path(), {"0.5KB"}); // 500 bytes: one tensor per shard
  EXPECT_TRUE(std::filesystem::exists(dir / "model-00003-of-00003.safetensors"));
  TempDir big;
  metaguard::save_pretrained(*model, big.path(), {"1KiB"}); // 1024: a+b, then c alone
  EXPECT_TRUE(std::filesystem::exists(big / "model-00002-of-00002.safetensors"));
  EXPECT_THROW(metaguard::SaveOptions{"5 parsecs"}, metaguard::Error);
}

TEST(SavingTest, WritesTheConfigWhenGiven) {
  TempDir dir;
  Three model;
  metaguard::SaveOptions options;
  options.config = {{"hidden_size", 8}, {"architectures", {"Three"}}};
  metaguard::save_pretrained(*model, dir.path(), options);
  // As given, plus the dtype of the saved weights (transformers writes it).
  metaguard::Config expected = options.config;
  expected["dtype"] = "float32";
  EXPECT_EQ(metaguard::load_config(dir.path()), expected);
  EXPECT_EQ(metaguard_test::read_bytes(dir / "config.json"),
            "{\n  \"architectures\": [\n    \"Three\"\n  ],\n  \"dtype\": \"float32\",\n  "
            "\"hidden_size\": 8\n}\n");
}

TEST(SavingTest, SwitchingBetweenSingleAndShardedRemovesTheOldFiles) {
  TempDir dir;
  Three model;
  metaguard::save_pretrained(*model, dir.path(), {"0.5KB"});
  ASSERT_EQ(files_in(dir.path()).size(), 4u);
  metaguard_test::write_bytes(dir / "notes.txt", "mine");
  metaguard::save_pretrained(*model, dir.path());
  EXPECT_EQ(files_in(dir.path()), (std::vector<std::string>{"model.safetensors", "notes.txt"}));
  metaguard::save_pretrained(*model, dir.path(), {1000});
  EXPECT_EQ(files_in(dir.path()),
            (std::vector<std::string>{"model-00001-of-00002.safetensors",
                                      "model-00002-of-00002.safetensors",
                                      "model.safetensors.index.json", "notes.txt"}));
}

TEST(SavingTest, RefusesAModelWhoseWeightsAreOnMeta) {
  TempDir dir;
  metaguard::MetaDeviceScope scope;
  auto model = metaguard::from_config<metaguard_test::TinyTransformer>(metaguard_test::tiny_config());
  try {
    metaguard::save_pretrained(*model, dir.path());
    FAIL();
  } catch (const metaguard::MetaDeviceError &e) {
    EXPECT_CONTAINS(e.what(), "tensor(s) are on the meta device and have no data: 'embed.weight'");
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

// Lowers this process's file size limit so that writes fail with EFBIG, as
// on a full disk, for the object's lifetime.
class FileSizeLimit {
public:
  explicit FileSizeLimit(rlim_t bytes) {
    previous_signal_ = std::signal(SIGXFSZ, SIG_IGN);
    getrlimit(RLIMIT_FSIZE, &previous_);
    rlimit limit = previous_;
    limit.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &previous_);
    std::signal(SIGXFSZ, previous_signal_);
  }

private:
  rlimit previous_{};
  void (*previous_signal_)(int);
};

TEST(SavingTest, AFailedWriteLeavesTheEarlierCheckpointIntact) {
  TempDir dir;
  Three small;
  metaguard::save_pretrained(*small, dir.path(), {1000});
  const auto before = files_in(dir.path());
  const std::string shard1 = metaguard_test::read_bytes(dir / "model-00001-of-00002.safetensors");
  const std::string index = metaguard_test::read_bytes(dir / "model.safetensors.index.json");

  auto bigger = metaguard_test::TinyTransformer(metaguard_test::tiny_config());
  std::string error;
  {
    FileSizeLimit limit(4096); // the new shards are larger than this
    try {
      metaguard::save_pretrained(*bigger, dir.path(), {1000});
    } catch (const FormatError &e) {
      error = e.what();
    }
  }
  EXPECT_CONTAINS(error, "File too large");
  EXPECT_CONTAINS(error, dir.path().string());
  EXPECT_EQ(files_in(dir.path()), before) << "no temporary or partial file is left";
  EXPECT_EQ(metaguard_test::read_bytes(dir / "model-00001-of-00002.safetensors"), shard1);
  EXPECT_EQ(metaguard_test::read_bytes(dir / "model.safetensors.index.json"), index);
  Three reloaded;
  metaguard::load_weights(*reloaded, dir.path());
  EXPECT_TRUE(torch::equal(reloaded->c, small->c));
}

TEST(SavingTest, ATargetThatCannotBeReplacedChangesNothing) {
  TempDir dir;
  Three model;
  metaguard::save_pretrained(*model, dir.path());
  const std::string weights = metaguard_test::read_bytes(dir / "model.safetensors");
  std::filesystem::create_directory(dir / "config.json");
  metaguard::SaveOptions options;
  options.config = {{"x", 1}};
  try {
    auto other = metaguard_test::TinyTransformer(metaguard_test::tiny_config());
    metaguard::save_pretrained(*other, dir.path(), options);
    FAIL();
  } catch (const FormatError &e) {
    EXPECT_CONTAINS(e.what(), "'config.json' exists and is not a regular file");
    EXPECT_CONTAINS(e.what(), "nothing in the folder was changed");
  }
  EXPECT_EQ(files_in(dir.path()), (std::vector<std::string>{"config.json", "model.safetensors"}));
  EXPECT_EQ(metaguard_test::read_bytes(dir / "model.safetensors"), weights);
}

TEST(SavingTest, AnUnwritableFolderIsAnErrorThatSaysWhy) {
  TempDir dir;
  metaguard_test::write_bytes(dir / "file", "x");
  Three model;
  try {
    metaguard::save_pretrained(*model, dir / "file" / "ckpt");
    FAIL();
  } catch (const FormatError &e) {
    EXPECT_CONTAINS(e.what(), "cannot create the folder");
    EXPECT_CONTAINS(e.what(), "Not a directory");
  }
}

TEST(SavingTest, ResavingAZeroCopyLoadedModelOverItsOwnFilesIsSafe) {
  TempDir dir;
  metaguard::SaveOptions options;
  options.config = metaguard_test::tiny_config();
  auto original = metaguard_test::TinyTransformer(metaguard_test::tiny_config());
  metaguard::save_pretrained(*original, dir.path(), options);
  // The loaded weights point into model.safetensors; saving renames a new
  // file over it, which leaves the mapped old file intact until unmapped.
  auto model = metaguard::from_pretrained<metaguard_test::TinyTransformer>(dir.path());
  {
    torch::NoGradGuard no_grad;
    model->fc1->weight.mul_(2);
  }
  metaguard::save_pretrained(*model, dir.path(), options);
  EXPECT_TRUE(torch::equal(model->fc1->weight, original->fc1->weight * 2));
  auto again = metaguard::from_pretrained<metaguard_test::TinyTransformer>(dir.path());
  EXPECT_TRUE(torch::equal(again->fc1->weight, original->fc1->weight * 2));
  EXPECT_TRUE(torch::equal(again->fc2->weight, original->fc2->weight));
}

// A model that remembers its config (PreTrainedModel).
struct RememberingImpl : metaguard::PreTrainedModel {
  explicit RememberingImpl(const metaguard::Config &config)
      : fc(register_module("fc", torch::nn::Linear(config.at("d").get<int64_t>(), 3))) {}
  torch::nn::Linear fc;
};
TORCH_MODULE(Remembering);

// With the "dtype" that save_pretrained writes, so that it round-trips.
const metaguard::Config kRememberedConfig = {{"d", 5}, {"name", "remembering"}, {"dtype", "float32"}};

TEST(SavingConfigTest, LoadSaveLoadRoundTripsWithoutPassingTheConfig) {
  TempDir first, second;
  metaguard::SaveOptions options;
  options.config = kRememberedConfig;
  Remembering original(kRememberedConfig);
  metaguard::save_pretrained(*original, first.path(), options);
  auto loaded = metaguard::from_pretrained<Remembering>(first.path());
  EXPECT_EQ(loaded->config(), kRememberedConfig);
  metaguard::save_pretrained(*loaded, second.path()); // no config passed
  EXPECT_EQ(metaguard::load_config(second.path()), kRememberedConfig);
  auto again = metaguard::from_pretrained<Remembering>(second.path());
  EXPECT_TRUE(torch::equal(again->fc->weight, original->fc->weight));
  EXPECT_EQ(again->config(), kRememberedConfig);
}

TEST(SavingConfigTest, AModelFromConfigRemembersItAndSavesIt) {
  TempDir dir;
  auto model = metaguard::from_config<Remembering>(kRememberedConfig);
  EXPECT_EQ(model->config(), kRememberedConfig);
  metaguard::save_pretrained(*model, dir.path());
  auto loaded = metaguard::from_pretrained<Remembering>(dir.path());
  EXPECT_TRUE(torch::equal(loaded->fc->bias, model->fc->bias));
}

TEST(SavingConfigTest, SaveOptionsCanReplaceOrSkipTheRememberedConfig) {
  TempDir replaced, skipped;
  auto model = metaguard::from_config<Remembering>(kRememberedConfig);
  metaguard::SaveOptions options;
  options.config = {{"d", 5}, {"name", "other"}};
  metaguard::save_pretrained(*model, replaced.path(), options);
  EXPECT_EQ(metaguard::load_config(replaced.path()).at("name").get<std::string>(), "other");
  metaguard::SaveOptions no_config;
  no_config.save_config = false;
  metaguard::save_pretrained(*model, skipped.path(), no_config);
  EXPECT_FALSE(std::filesystem::exists(skipped / "config.json"));
  EXPECT_TRUE(std::filesystem::exists(skipped / "model.safetensors"));
}

TEST(SavingConfigTest, APlainModuleWithoutAConfigSavesNoConfig) {
  TempDir dir;
  Three model;
  metaguard::save_pretrained(*model, dir.path());
  EXPECT_FALSE(std::filesystem::exists(dir / "config.json"));
}

} // namespace saving_test
} // namespace
