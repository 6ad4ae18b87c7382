// save_pretrained of a model dispatched with dispatch_model (offload folder
// behind the hooks): every tensor is written, offloaded ones loaded through
// their hooks, and a model whose hooks were stripped is refused before
// anything is written.
#include "tiny_lm.h"

#include <metaguard/loading.h>
#include <metaguard/saving.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

namespace {
namespace offload_save_test {

namespace fs = std::filesystem;

class OffloadSaveTest : public ::testing::Test {
protected:
  void SetUp() override {
    torch::manual_seed(9);
    dir_ = fs::temp_directory_path() / ("metaguard_offload_save_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    tiny::copy_parameters(reference_, model_);
    metaguard::dispatch_model(model_, {{"", "cpu"}, {"blocks.1", "disk"}, {"blocks.2", "disk"}, {"head", "disk"}},
                              dir_ / "offload");
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  tiny::TinyLM reference_{50, 16, 3};
  tiny::TinyLM model_{50, 16, 3};
};

TEST_F(OffloadSaveTest, SavedDispatchedModelReloadsEqualToTheOriginal) {
  // Small shards: offloaded tensors are loaded shard by shard.
  metaguard::save_pretrained(model_, dir_ / "saved", {"16KB", {}});
  EXPECT_TRUE(fs::exists(dir_ / "saved" / "model.safetensors.index.json"));
  tiny::TinyLM reloaded(50, 16, 3);
  metaguard::load_weights(reloaded, dir_ / "saved");
  auto ref = reference_.named_parameters(true);
  for (const auto &item : reloaded.named_parameters(true))
    EXPECT_TRUE(torch::equal(item.value(), ref[item.key()])) << item.key();
  // Saving changed nothing in the dispatched model.
  EXPECT_TRUE(model_.named_parameters(true)["blocks.1.attn.weight"].is_meta());
  metaguard::verify_dispatch(model_);
  torch::NoGradGuard no_grad;
  const auto ids = torch::randint(0, 50, {2, 3}, torch::kLong);
  EXPECT_TRUE(torch::equal(reloaded.forward(ids), model_.forward(ids)));
}

TEST_F(OffloadSaveTest, StrippedHooksAreRefusedBeforeWriting) {
  metaguard::remove_hook_from_module(*model_.head);
  try {
    metaguard::save_pretrained(model_, dir_ / "saved");
    FAIL() << "expected OffloadError";
  } catch (const metaguard::OffloadError &e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("head.weight: its offloading hook was removed"), std::string::npos) << what;
    EXPECT_NE(what.find("head.bias"), std::string::npos) << what;
  }
  EXPECT_FALSE(fs::exists(dir_ / "saved" / "model.safetensors"));
  EXPECT_FALSE(fs::exists(dir_ / "saved" / "model.safetensors.index.json"));
}

} // namespace offload_save_test
} // namespace
