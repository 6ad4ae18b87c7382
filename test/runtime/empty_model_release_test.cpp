// The empty-model checks of a release build: off, so an empty model used
// before its weights are there behaves as LibTorch makes it (a forward with
// real inputs silently computes meta tensors, a copy to the CPU raises
// LibTorch's own error), at no cost. save_pretrained refuses meta tensors
// with MetaDeviceError in every build.
//
// This file is a release translation unit whatever the build type: the
// checks follow the program's translation units (debug_checks.h).
#ifndef NDEBUG
#define NDEBUG
#endif
#include "empty_model_net.h"
#include "expect_text.h"
#include "loading_test_util.h"

#include <gtest/gtest.h>

namespace {
namespace empty_model_release_test {

using empty_test::Net;

class EmptyModelReleaseTest : public testing::Test {
protected:
  void SetUp() override {
    // A library built without NDEBUG is a debug translation unit of this
    // program too, and turns the checks on.
    if (metaguard::empty_model_checks())
      GTEST_SKIP() << "libmetaguard itself was built without NDEBUG";
  }
};

TEST_F(EmptyModelReleaseTest, AForwardWithRealInputsIsLibTorchsSilentMetaResult) {
  empty_test::PlainNet model{nullptr};
  {
    auto scope = metaguard::init_empty_weights();
    model = metaguard::from_config<empty_test::PlainNet>(empty_test::net_config());
  }
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(model->forward(torch::ones({2, 16})).is_meta());
}

TEST_F(EmptyModelReleaseTest, ACopyToTheCpuIsLibTorchsOwnError) {
  Net model = empty_test::empty_net();
  try {
    model->head->weight.to(torch::kCPU);
    FAIL() << "LibTorch copies nothing out of a meta tensor";
  } catch (const metaguard::MetaDeviceError &e) {
    FAIL() << "no empty-model check in a release build: " << e.what();
  } catch (const c10::Error &e) {
    EXPECT_CONTAINS(e.what(), "meta");
  }
}

TEST_F(EmptyModelReleaseTest, EmptyModelsCarryNoMark) {
  Net model = empty_test::empty_net();
  for (const auto &item : model->named_parameters())
    EXPECT_EQ(item.value().key_set(), torch::empty({1}, torch::kMeta).key_set()) << item.key();
}

TEST_F(EmptyModelReleaseTest, SaveRefusesMetaTensorsInEveryBuild) {
  metaguard_test::TempDir dir;
  Net model = empty_test::empty_net();
  try {
    metaguard::save_pretrained(*model, dir / "out");
    FAIL() << "expected MetaDeviceError";
  } catch (const metaguard::MetaDeviceError &e) {
    EXPECT_CONTAINS(e.what(), "'embed.weight'");
    EXPECT_CONTAINS(e.what(), "Was the model built under a meta scope and never given weights?");
    EXPECT_CONTAINS(e.what(), "load_checkpoint_and_dispatch");
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "out"));
}

} // namespace empty_model_release_test
} // namespace
