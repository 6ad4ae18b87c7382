// SafetensorsCheckpoint: locating the files, and validating a sharded
// checkpoint's index against its shards.
#include <metaguard/metaguard.h>

#include "loading_test_util.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {
namespace checkpoint_test {

using metaguard::FormatError;
using metaguard::SafetensorsCheckpoint;
using metaguard_test::TempDir;

class CheckpointTest : public testing::Test {
protected:
  void SetUp() override {
    metaguard::save_safetensors(dir_ / "one.safetensors", {{"a", torch::ones({2})}, {"b", torch::zeros({3})}});
    metaguard::save_safetensors(dir_ / "two.safetensors", {{"c", torch::arange(4)}});
  }
  void write_index(const std::string &weight_map) {
    metaguard_test::write_bytes(dir_ / "model.safetensors.index.json",
                                R"({"metadata":{"total_size":52},"weight_map":)" + weight_map + "}");
  }
  void expect_error(const std::vector<std::string> &texts) {
    try {
      SafetensorsCheckpoint checkpoint(dir_.path());
      FAIL() << "opened; expected " << texts.front();
    } catch (const FormatError &e) {
      for (const auto &text : texts)
        EXPECT_NE(std::string(e.what()).find(text), std::string::npos)
            << "'" << text << "' not in: " << e.what();
    }
  }
  TempDir dir_;
};

TEST_F(CheckpointTest, ReadsAValidShardedCheckpoint) {
  write_index(R"({"a":"one.safetensors","b":"one.safetensors","c":"two.safetensors"})");
  SafetensorsCheckpoint checkpoint(dir_.path());
  EXPECT_TRUE(checkpoint.sharded());
  EXPECT_EQ(checkpoint.names(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(checkpoint.file_of("c").path(), dir_ / "two.safetensors");
  EXPECT_TRUE(torch::equal(checkpoint.tensor("c"), torch::arange(4)));
  // The index file itself works as a location too.
  EXPECT_EQ(SafetensorsCheckpoint(dir_ / "model.safetensors.index.json").names().size(), 3u);
}

TEST_F(CheckpointTest, SingleFileIsPreferredAndFilesWorkAsLocations) {
  write_index(R"({"a":"one.safetensors","b":"one.safetensors","c":"two.safetensors"})");
  metaguard::save_safetensors(dir_ / "model.safetensors", {{"z", torch::ones({1})}});
  SafetensorsCheckpoint checkpoint(dir_.path());
  EXPECT_FALSE(checkpoint.sharded());
  EXPECT_EQ(checkpoint.names(), std::vector<std::string>{"z"});
  EXPECT_EQ(SafetensorsCheckpoint(dir_ / "two.safetensors").names(), std::vector<std::string>{"c"});
  EXPECT_EQ(SafetensorsCheckpoint(dir_ / "two.safetensors").folder(), dir_.path());
}

TEST_F(CheckpointTest, ReferencedShardMustExist) {
  write_index(R"({"a":"one.safetensors","b":"one.safetensors","c":"three.safetensors"})");
  expect_error({"model.safetensors.index.json", "tensor 'c' is mapped to 'three.safetensors', which does not exist"});
}

TEST_F(CheckpointTest, ATensorInTwoShardsIsAnError) {
  metaguard::save_safetensors(dir_ / "two.safetensors", {{"c", torch::arange(4)}, {"a", torch::ones({2})}});
  write_index(R"({"a":"one.safetensors","b":"one.safetensors","c":"two.safetensors"})");
  expect_error({"tensor 'a' is in two shards, 'one.safetensors' and 'two.safetensors'"});
}

TEST_F(CheckpointTest, ShardNamesMayNotLeaveTheFolder) {
  write_index(R"({"a":"../one.safetensors"})");
  expect_error({"tensor 'a' is mapped to file '../one.safetensors', which is not a file name inside the checkpoint folder"});
  write_index(R"({"a":"/etc/passwd"})");
  expect_error({"'/etc/passwd', which is not a file name inside"});
  write_index(R"({"a":"sub/../../x.safetensors"})");
  expect_error({"not a file name inside"});
  write_index(R"({"a":""})");
  expect_error({"not a file name inside"});
}

TEST_F(CheckpointTest, IndexAndShardsMustAgree) {
  write_index(R"({"a":"two.safetensors","b":"one.safetensors","c":"two.safetensors"})");
  expect_error({"tensor 'a' is mapped to 'two.safetensors', which does not hold it ('one.safetensors' does)"});
  write_index(R"({"a":"one.safetensors","c":"two.safetensors"})");
  expect_error({"shard 'one.safetensors' holds tensor 'b', which the index does not list"});
}

TEST_F(CheckpointTest, MalformedIndexes) {
  write_index(R"("not an object")");
  expect_error({"has no \"weight_map\" object"});
  write_index(R"({"a":1})");
  expect_error({"tensor 'a' is mapped to 1, not to a file name"});
  metaguard_test::write_bytes(dir_ / "model.safetensors.index.json", "{\"weight_map\": {");
  expect_error({"model.safetensors.index.json", "invalid JSON"});
  write_index(R"({"a":"one.safetensors","a":"one.safetensors"})");
  expect_error({"duplicate key \"a\""});
}

TEST_F(CheckpointTest, ShardProblemsNameTheShard) {
  metaguard_test::write_bytes(dir_ / "two.safetensors",
                              "version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 99\n");
  write_index(R"({"a":"one.safetensors","b":"one.safetensors","c":"two.safetensors"})");
  expect_error({"two.safetensors", "git-lfs pointer"});
}

TEST_F(CheckpointTest, UnknownTensorNamesTheCheckpoint) {
  SafetensorsCheckpoint checkpoint(dir_ / "one.safetensors");
  EXPECT_FALSE(checkpoint.contains("c"));
  try {
    checkpoint.tensor("c");
    FAIL();
  } catch (const FormatError &e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'c': not in the checkpoint"), std::string::npos);
  }
}

} // namespace checkpoint_test
} // namespace
