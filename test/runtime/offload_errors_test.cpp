// The offload rule enforced: moving a dispatched model, replacing an
// offloaded parameter with set_data, and stripping hooks each raise
// OffloadError at the documented point, naming every affected parameter.
#include "tiny_lm.h"

#include "offload_error_of.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

namespace {
namespace offload_errors_test {

namespace fs = std::filesystem;
using metaguard::OffloadError;

class OffloadErrorsTest : public ::testing::Test {
protected:
  void SetUp() override {
    torch::manual_seed(5);
    dir_ = fs::temp_directory_path() / ("metaguard_offload_errors_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    tiny::copy_parameters(reference_, model_);
    ids_ = torch::randint(0, 50, {2, 5}, torch::kLong);
  }
  void TearDown() override {
    metaguard::set_policy(metaguard::Policy::Throw);
    fs::remove_all(dir_);
  }
  void dispatch() { metaguard::dispatch_model(model_, {{"", "cpu"}, {"blocks.2", "disk"}, {"blocks.3", "disk"}}, dir_); }
  torch::Tensor param(const std::string &name) { return model_.named_parameters(true)[name]; }

  fs::path dir_;
  tiny::TinyLM reference_{50, 16, 4};
  tiny::TinyLM model_{50, 16, 4};
  torch::Tensor ids_;
};

TEST_F(OffloadErrorsTest, MovingADispatchedModelIsRefusedAtTo) {
  dispatch();
  for (auto move : std::vector<std::function<void()>>{
           [&] { model_.to(torch::kCPU); },
           [&] { model_.to(torch::Device(torch::kCPU), torch::kFloat64); }}) {
    const std::string what = offload_error_of(move);
    EXPECT_TRUE(has(what, "cannot move the model")) << what;
    EXPECT_TRUE(has(what, "16 parameter(s) are offloaded")) << what;
    EXPECT_TRUE(has(what, "blocks.2.attn.weight")) << what;
    EXPECT_TRUE(has(what, "blocks.3.mlp_out.bias")) << what;
    EXPECT_TRUE(has(what, "dispatch_model with a new device map")) << what;
  }
  // Refused before anything moved: the model still works.
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(model_.forward(ids_), reference_.forward(ids_)));
  EXPECT_EQ(param("embed.weight").scalar_type(), torch::kFloat32);
}

TEST_F(OffloadErrorsTest, ADtypeOnlyToConvertsADispatchedModelWithoutMovingIt) {
  dispatch();
  model_.to(torch::kFloat64);
  // Offloaded parameters stay on disk (meta), now with the new dtype...
  EXPECT_TRUE(param("blocks.2.attn.weight").is_meta());
  EXPECT_EQ(param("blocks.2.attn.weight").scalar_type(), torch::kFloat64);
  EXPECT_EQ(param("embed.weight").scalar_type(), torch::kFloat64);
  EXPECT_NO_THROW(metaguard::verify_dispatch(model_));
  // ...and are loaded converted: same output as the in-memory model converted.
  EXPECT_EQ(metaguard::load_offloaded_parameter(model_, "blocks.3.mlp_in.bias").scalar_type(),
            torch::kFloat64);
  torch::NoGradGuard no_grad;
  reference_.to(torch::kFloat64);
  EXPECT_TRUE(torch::equal(model_.forward(ids_), reference_.forward(ids_)));
  EXPECT_TRUE(param("blocks.2.attn.weight").is_meta()) << "returned to disk after the forward";
}

TEST_F(OffloadErrorsTest, AModelWithoutOffloadMovesFreely) {
  model_.to(torch::kFloat64);
  EXPECT_EQ(param("head.weight").scalar_type(), torch::kFloat64);
}

TEST_F(OffloadErrorsTest, SetDataWithRealValuesIsRefusedAndChangesNothing) {
  dispatch();
  // set_data asks LibTorch's _has_compatible_shallow_copy_type operator,
  // which the offloaded parameter answers with an OffloadError.
  const std::string what =
      offload_error_of([&] { param("blocks.2.attn.weight").set_data(torch::zeros({16, 16})); });
  EXPECT_TRUE(has(what, "'blocks.2.attn.weight'")) << what;
  metaguard::verify_dispatch(model_);
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(model_.forward(ids_), reference_.forward(ids_)));
}

TEST_F(OffloadErrorsTest, SetDataWhileMaterialisedIsCaughtAfterwards) {
  dispatch();
  {
    metaguard::OnloadGuard onload(*model_.blocks[2]);
    for (auto &item : model_.named_parameters(true))
      if (item.key() == "blocks.2.attn.weight")
        item.value().set_data(torch::zeros({16, 16}));
  }
  // The replacement is not silently thrown away when the guard ends...
  EXPECT_FALSE(param("blocks.2.attn.weight").is_meta());
  EXPECT_TRUE(param("blocks.2.mlp_in.weight").is_meta());
  // ...and is reported by verify_dispatch (so by save_pretrained)...
  std::string what = offload_error_of([&] { metaguard::verify_dispatch(model_); });
  EXPECT_TRUE(has(what, "1 offloaded parameter(s)")) << what;
  EXPECT_TRUE(has(what, "blocks.2.attn.weight: was moved off the meta device (to cpu")) << what;
  // ...and at the next forward, when the block is materialised.
  torch::NoGradGuard no_grad;
  what = offload_error_of([&] { model_.forward(ids_); });
  EXPECT_TRUE(has(what, "blocks.2.attn.weight")) << what;
  EXPECT_TRUE(has(what, "load_offloaded_parameter")) << what;
  EXPECT_TRUE(param("blocks.2.mlp_in.weight").is_meta()) << "nothing left half-materialised";
  // Moving the model is still refused.
  EXPECT_THROW(model_.to(torch::kCPU), OffloadError);
}

TEST_F(OffloadErrorsTest, SetDataWithAnotherMetaShapeIsRefused) {
  dispatch();
  EXPECT_THROW(param("blocks.3.mlp_in.weight").set_data(torch::empty({2, 2}, torch::kMeta)), OffloadError);
  EXPECT_EQ(param("blocks.3.mlp_in.weight").sizes(), torch::IntArrayRef({64, 16}));
  metaguard::verify_dispatch(model_);
}

TEST_F(OffloadErrorsTest, RemovingHooksIsCaughtAtEveryUse) {
  dispatch();
  metaguard::remove_hook_from_module(*model_.blocks[2], /*recurse=*/true);
  std::string what = offload_error_of([&] { metaguard::load_offloaded_parameter(model_, "blocks.2.attn.weight"); });
  EXPECT_TRUE(has(what, "'blocks.2.attn.weight'")) << what;
  EXPECT_TRUE(has(what, "hook was removed")) << what;

  what = offload_error_of([&] { metaguard::verify_dispatch(model_); });
  EXPECT_TRUE(has(what, "8 offloaded parameter(s)")) << what;
  EXPECT_TRUE(has(what, "blocks.2.norm.weight: its offloading hook was removed")) << what;
  EXPECT_FALSE(has(what, "blocks.3.")) << what;

  torch::NoGradGuard no_grad;
  what = offload_error_of([&] { model_.forward(ids_); });
  EXPECT_TRUE(has(what, "blocks.2.mlp_out.bias") || has(what, "mlp_out.bias")) << what;

  // Still offloaded as far as moving goes, and block 3 still works.
  EXPECT_THROW(model_.to(torch::kCPU), OffloadError);
  EXPECT_TRUE(torch::equal(metaguard::load_offloaded_parameter(model_, "blocks.3.attn.weight"),
                           reference_.named_parameters(true)["blocks.3.attn.weight"]));
}

TEST_F(OffloadErrorsTest, RemovingOneModulesHookOrphansOnlyItsParameters) {
  dispatch();
  metaguard::remove_hook_from_module(*model_.blocks[2]); // the block itself owns no parameter
  metaguard::verify_dispatch(model_);
  metaguard::remove_hook_from_module(*model_.blocks[2]->as<tiny::BlockImpl>()->attn);
  const std::string what = offload_error_of([&] { metaguard::verify_dispatch(model_); });
  EXPECT_TRUE(has(what, "2 offloaded parameter(s)")) << what;
  EXPECT_TRUE(has(what, "blocks.2.attn.weight")) << what;
  EXPECT_TRUE(has(what, "blocks.2.attn.bias")) << what;
}

TEST_F(OffloadErrorsTest, LoadOffloadedParameterNeedsAHookedAncestor) {
  dispatch();
  std::string what = offload_error_of([&] { metaguard::load_offloaded_parameter(model_, "blocks.0.attn.weight"); });
  EXPECT_TRUE(has(what, "'blocks.0.attn.weight'")) << what;
  EXPECT_TRUE(has(what, "no module on its path has an offloading hook")) << what;
  what = offload_error_of([&] { metaguard::load_offloaded_parameter(model_, "blocks.9.nothing"); });
  EXPECT_TRUE(has(what, "no parameter named 'blocks.9.nothing'")) << what;
}

TEST_F(OffloadErrorsTest, AMetaModelThatWasNeverLoadedFailsVerification) {
  tiny::TinyLM empty(50, 16, 1);
  tiny::make_meta(empty);
  const std::string what = offload_error_of([&] { metaguard::verify_dispatch(empty); });
  EXPECT_TRUE(has(what, "embed.weight: is on the meta device and no offloading hook covers it")) << what;
  EXPECT_TRUE(has(what, "head.bias")) << what;
}

TEST_F(OffloadErrorsTest, MissingOffloadFolderIsAnErrorBeforeAnyChange) {
  const std::string what = offload_error_of(
      [&] { metaguard::dispatch_model(model_, {{"", "cpu"}, {"blocks.1", "disk"}}); });
  EXPECT_TRUE(has(what, "no offload_folder")) << what;
  EXPECT_TRUE(has(what, "blocks.1.attn.weight")) << what;
  for (const auto &item : model_.named_parameters(true))
    EXPECT_FALSE(item.value().is_meta()) << item.key();
  EXPECT_FALSE(metaguard::has_offloaded_parameters(model_));
}

TEST_F(OffloadErrorsTest, UncoveredParametersAreListedBeforeAnyChange) {
  try {
    metaguard::dispatch_model(model_, {{"blocks", "disk"}}, dir_);
    FAIL() << "expected Error";
  } catch (const metaguard::Error &e) {
    const std::string what = e.what();
    EXPECT_TRUE(has(what, "embed.weight")) << what;
    EXPECT_TRUE(has(what, "head.weight")) << what;
    EXPECT_TRUE(has(what, "head.bias")) << what;
  }
  EXPECT_FALSE(fs::exists(dir_));
  EXPECT_FALSE(param("blocks.0.attn.weight").is_meta());
}

TEST_F(OffloadErrorsTest, DispatchingAModelWithoutValuesIsRefused) {
  tiny::TinyLM empty(50, 16, 1);
  tiny::make_meta(empty);
  const std::string what = offload_error_of([&] { metaguard::dispatch_model(empty, {{"", "disk"}}, dir_); });
  EXPECT_TRUE(has(what, "meta device")) << what;
  EXPECT_FALSE(fs::exists(dir_));
}

TEST_F(OffloadErrorsTest, PoliciesWarnAndOffLetVerificationPass) {
  dispatch();
  metaguard::remove_hook_from_module(*model_.blocks[3], true);
  metaguard::set_policy(metaguard::Policy::Warn);
  testing::internal::CaptureStderr();
  metaguard::verify_dispatch(model_);
  EXPECT_TRUE(has(testing::internal::GetCapturedStderr(), "blocks.3.attn.weight"));
  metaguard::set_policy(metaguard::Policy::Off);
  metaguard::verify_dispatch(model_);
  metaguard::set_policy(metaguard::Policy::Throw);
  EXPECT_THROW(metaguard::verify_dispatch(model_), OffloadError);
}

TEST_F(OffloadErrorsTest, FullVerificationOnMaterialiseIsTheDebugDefault) {
#ifdef NDEBUG
  EXPECT_FALSE(metaguard::verify_on_materialise());
#else
  EXPECT_TRUE(metaguard::verify_on_materialise());
#endif
}

TEST_F(OffloadErrorsTest, FullVerificationOnMaterialiseReportsUnhookedMetaParameters) {
  dispatch();
  // A non-offloaded parameter of block 2 turned into a meta tensor by hand:
  // only the full check knows no hook covers it.
  auto *block = model_.blocks[2]->as<tiny::BlockImpl>();
  metaguard::remove_hook_from_module(*block->norm);
  torch::NoGradGuard no_grad;
  const bool before = metaguard::verify_on_materialise();
  metaguard::set_verify_on_materialise(true);
  const std::string what = offload_error_of([&] { model_.forward(ids_); });
  metaguard::set_verify_on_materialise(before);
  EXPECT_TRUE(has(what, "OnloadGuard")) << what;
  EXPECT_TRUE(has(what, "norm.weight")) << what;
}

} // namespace offload_errors_test
} // namespace
