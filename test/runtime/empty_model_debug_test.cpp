// The empty-model checks of a debug build: a model built empty and used
// before its weights are there raises MetaDeviceError at the first forward
// with real inputs, copy to a device, set_data with real values and
// save_pretrained, naming the tensor, where the model was built empty and how
// to give it weights; giving it weights clears that, and work on shapes
// stays allowed.
//
// This file is a debug translation unit whatever the build type: the checks
// follow the program's translation units (debug_checks.h), not the library.
#undef NDEBUG
#include "empty_model_net.h"
#include "expect_text.h"
#include "loading_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

namespace {
namespace empty_model_debug_test {

using empty_test::Net;
using metaguard::MetaDeviceError;
using metaguard_test::TempDir;

template <class F> std::string meta_error_of(F &&f) {
  try {
    f();
  } catch (const MetaDeviceError &e) {
    return e.what();
  } catch (const std::exception &e) {
    ADD_FAILURE() << "expected MetaDeviceError, got: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected MetaDeviceError";
  return {};
}

void expect_advice(const std::string &what) {
  EXPECT_CONTAINS(what, "load_weights(model, checkpoint)");
  EXPECT_CONTAINS(what, "load_checkpoint_and_dispatch(model, checkpoint, options)");
  EXPECT_CONTAINS(what, "to_empty(model, device)");
}

class EmptyModelDebugTest : public testing::Test {
protected:
  void SetUp() override { torch::manual_seed(7); }
  void TearDown() override {
    metaguard::set_policy(metaguard::Policy::Throw);
    metaguard::reset_default_device();
  }
  TempDir dir_;
};

TEST_F(EmptyModelDebugTest, TheChecksAreOnInADebugTranslationUnit) {
  EXPECT_TRUE(metaguard::empty_model_checks());
}

TEST_F(EmptyModelDebugTest, AForwardWithRealInputsNamesTheParameterAndWhereTheModelWasBuilt) {
  Net model = empty_test::empty_net();
  const std::string what = meta_error_of([&] { empty_test::forward(model); });
  EXPECT_CONTAINS(what, "operator aten::embedding used 'embed.weight' (Float [30, 16]) together with real "
                        "tensors (on cpu), but it has no data: it belongs to a model built on the meta device "
                        "by from_config<empty_test::NetImpl> under init_empty_weights()");
  expect_advice(what);
}

TEST_F(EmptyModelDebugTest, ModelOfConfigBuiltDirectlyIsNamedThroughItsMetaguardBase) {
  Net model{nullptr};
  {
    metaguard::MetaDeviceScope scope;
    model = Net(empty_test::net_config());
  }
  const std::string what = meta_error_of([&] { empty_test::forward(model); });
  EXPECT_CONTAINS(what, "'embed.weight' (Float [30, 16])");
  EXPECT_CONTAINS(what, "(empty_test::NetImpl) under a meta scope (MetaDeviceScope");
}

TEST_F(EmptyModelDebugTest, APlainModuleBuiltDirectlyIsReportedByShape) {
  empty_test::PlainNet model{nullptr};
  {
    auto scope = metaguard::init_empty_weights();
    model = empty_test::PlainNet(empty_test::net_config());
  }
  const std::string what = meta_error_of([&] { model->forward(torch::ones({2, 16})); });
  EXPECT_CONTAINS(what, "operator aten::addmm used a tensor (Float [16]) of an empty model");
  EXPECT_CONTAINS(what, "under init_empty_weights()");
}

TEST_F(EmptyModelDebugTest, TheDefaultDeviceMetaIsNamedAsTheCause) {
  metaguard::set_default_device("meta");
  Net model(empty_test::net_config());
  metaguard::reset_default_device();
  const std::string what = meta_error_of([&] { empty_test::forward(model); });
  EXPECT_CONTAINS(what, "'embed.weight'");
  EXPECT_CONTAINS(what, "under set_default_device(\"meta\")");
}

TEST_F(EmptyModelDebugTest, MovingTheModelToADeviceIsRefusedBeforeAnythingMoves) {
  Net model = empty_test::empty_net();
  const std::string what = meta_error_of([&] { model->to(torch::kCPU); });
  EXPECT_CONTAINS(what, "cannot move the model to cpu");
  EXPECT_CONTAINS(what, "'blocks.0.fc.weight'");
  EXPECT_CONTAINS(what, "from_config<empty_test::NetImpl> under init_empty_weights()");
  EXPECT_CONTAINS(what, "Nothing was moved");
  expect_advice(what);
  EXPECT_TRUE(model->embed->weight.is_meta());
}

TEST_F(EmptyModelDebugTest, CopyingAParameterOutIsRefused) {
  Net model = empty_test::empty_net();
  std::string what = meta_error_of([&] { model->head->weight.to(torch::kCPU); });
  EXPECT_CONTAINS(what, "would copy 'head.weight' (Float [30, 16])");
  EXPECT_CONTAINS(what, "to cpu");
  // Printing a parameter copies it to the CPU; printing the structure does not.
  what = meta_error_of([&] {
    std::ostringstream out;
    out << model->head->bias;
  });
  EXPECT_CONTAINS(what, "'head.bias'");
  std::ostringstream structure;
  structure << *model->head;
  EXPECT_CONTAINS(structure.str(), "Linear(in_features=16, out_features=30");
}

TEST_F(EmptyModelDebugTest, APlainModuleToIsRefusedAtItsFirstParameter) {
  empty_test::PlainNet model{nullptr};
  {
    auto scope = metaguard::init_empty_weights();
    model = metaguard::from_config<empty_test::PlainNet>(empty_test::net_config());
  }
  const std::string what = meta_error_of([&] { model->to(torch::kCPU); });
  EXPECT_CONTAINS(what, "would copy 'fc.");
  EXPECT_CONTAINS(what, "from_config<empty_test::PlainNetImpl>");
}

TEST_F(EmptyModelDebugTest, SavingIsRefusedNamingTheTensorsAndNothingIsWritten) {
  Net model = empty_test::empty_net();
  const auto out = dir_ / "out";
  const std::string what = meta_error_of([&] { metaguard::save_pretrained(*model, out); });
  EXPECT_CONTAINS(what, "save_pretrained('" + out.string() + "') cannot save the model");
  EXPECT_CONTAINS(what, "'embed.weight'");
  EXPECT_CONTAINS(what, "'head.bias'");
  EXPECT_CONTAINS(what, "from_config<empty_test::NetImpl> under init_empty_weights()");
  EXPECT_CONTAINS(what, "Nothing was written");
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST_F(EmptyModelDebugTest, TorchLoadIntoAnEmptyModelSaysToCallToEmptyFirst) {
  Net saved(empty_test::net_config());
  torch::save(saved, (dir_ / "net.pt").string());
  Net model = empty_test::empty_net();
  const std::string what = meta_error_of([&] { torch::load(model, (dir_ / "net.pt").string()); });
  EXPECT_CONTAINS(what, "set_data (which torch::load and Module::to use) cannot give 'embed.weight' (Float "
                        "[30, 16]) the values of a real tensor");
  EXPECT_CONTAINS(what, "Call to_empty(model, device) first");
}

TEST_F(EmptyModelDebugTest, CopyingRealValuesIntoAnEmptyParameterIsRefused) {
  Net model = empty_test::empty_net();
  torch::NoGradGuard no_grad;
  const std::string what = meta_error_of([&] { model->head->bias.copy_(torch::ones({30})); });
  EXPECT_CONTAINS(what, "operator aten::copy_ used 'head.bias'");
}

TEST_F(EmptyModelDebugTest, WorkOnShapesStaysAllowed) {
  Net model = empty_test::empty_net();
  EXPECT_EQ(model->head->weight.numel(), 30 * 16);
  EXPECT_EQ(model->head->weight.sizes(), (std::vector<std::int64_t>{30, 16}));
  EXPECT_EQ(model->head->weight.scalar_type(), torch::kFloat32);
  std::ostringstream structure;
  structure << *model;
  // Shape inference: a layer run on meta inputs (LibTorch 1.13 has meta
  // kernels for linear layers, not for embeddings or layer norms).
  torch::Tensor h;
  {
    torch::NoGradGuard no_grad;
    h = model->head(torch::empty({2, 3, 16}, torch::kMeta));
  }
  EXPECT_TRUE(h.is_meta());
  EXPECT_EQ(h.sizes(), (std::vector<std::int64_t>{2, 3, 30}));
  // Planning a device map.
  const auto map = metaguard::resolve_device_map(*model, metaguard::DeviceMap::automatic(), {{"cpu", 4000}},
                                                 {"BlockImpl"});
  EXPECT_TRUE(map.has_disk());
  // Allocating tensors shaped like a parameter, and bookkeeping.
  EXPECT_TRUE(torch::zeros_like(model->head->weight, torch::kCPU).device().is_cpu());
  EXPECT_TRUE(model->head->weight.detach().is_meta());
  // A dtype-only conversion moves nothing: still empty, still checked.
  model->to(torch::kFloat64);
  EXPECT_EQ(model->head->weight.scalar_type(), torch::kFloat64);
  EXPECT_CONTAINS(meta_error_of([&] { empty_test::forward(model); }), "'embed.weight' (Double [30, 16])");
}

empty_test::PlainNet empty_plain_net() {
  auto scope = metaguard::init_empty_weights();
  return metaguard::from_config<empty_test::PlainNet>(empty_test::net_config());
}

TEST_F(EmptyModelDebugTest, InsideAMetaScopeNothingIsRefused) {
  empty_test::PlainNet model = empty_plain_net();
  const torch::Tensor x = torch::ones({2, 16});
  auto scope = metaguard::init_empty_weights();
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(model->forward(x).is_meta());
}

TEST_F(EmptyModelDebugTest, LoadingClearsTheMarks) {
  torch::manual_seed(8);
  Net saved = empty_test::saved_net(dir_.path());
  Net loaded = empty_test::empty_net();
  metaguard::load_weights(*loaded, dir_.path());
  EXPECT_TRUE(torch::equal(empty_test::forward(loaded), empty_test::forward(saved)));

  Net dispatched = empty_test::empty_net();
  metaguard::LoadOptions options;
  options.device_map = {{"", "cpu"}, {"blocks.1", "disk"}};
  metaguard::load_checkpoint_and_dispatch(*dispatched, dir_.path(), options);
  EXPECT_TRUE(torch::equal(empty_test::forward(dispatched), empty_test::forward(saved)));
  EXPECT_NO_THROW(metaguard::save_pretrained(*dispatched, dir_ / "resaved"));
  EXPECT_NO_THROW(dispatched->to(torch::kFloat64));
}

TEST_F(EmptyModelDebugTest, ToEmptyClearsTheMarks) {
  Net model = empty_test::empty_net();
  metaguard::to_empty(*model, torch::kCPU);
  // The memory is there, its values not yet: a read before any write is the
  // sibling error (uninitialised_memory_test.cpp), not MetaDeviceError.
  EXPECT_THROW(empty_test::forward(model), metaguard::UninitializedMemoryError);
  {
    torch::NoGradGuard no_grad;
    for (auto &parameter : model->parameters())
      parameter.normal_(0.0, 0.5);
  }
  EXPECT_EQ(empty_test::forward(model).sizes(), (std::vector<std::int64_t>{2, 3, 30}));
  EXPECT_NO_THROW(model->to(torch::kCPU));
  EXPECT_NO_THROW(metaguard::save_pretrained(*model, dir_ / "out"));
}

TEST_F(EmptyModelDebugTest, OffloadHooksClearTheMarksOfTheParametersTheyCover) {
  torch::manual_seed(9);
  Net saved = empty_test::saved_net(dir_.path());
  Net model = empty_test::empty_net();
  const metaguard::DeviceMap map = {{"", "cpu"}, {"blocks", "disk"}};
  metaguard::attach_offload_hooks(*model, metaguard::resolve_device_map(*model, map),
                                  std::make_shared<metaguard::CheckpointWeightsMap>(
                                      metaguard::open_checkpoint(dir_.path())));
  // The blocks load themselves from the checkpoint; the embedding and the
  // head were given nothing.
  const std::string what = meta_error_of([&] { empty_test::forward(model); });
  EXPECT_CONTAINS(what, "'embed.weight'");
  EXPECT_TRUE(torch::equal(metaguard::load_offloaded_parameter(*model, "blocks.0.fc.weight"),
                           saved->blocks[0]->as<empty_test::BlockImpl>()->fc->weight));
}

TEST_F(EmptyModelDebugTest, WarnPrintsAndLetsTheOperatorRunOffSaysNothing) {
  empty_test::PlainNet model = empty_plain_net();
  torch::NoGradGuard no_grad;
  metaguard::set_policy(metaguard::Policy::Warn);
  testing::internal::CaptureStderr();
  EXPECT_TRUE(model->forward(torch::ones({2, 16})).is_meta()) << "LibTorch's own result";
  const std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_CONTAINS(warning, "'fc.bias'");
  metaguard::set_policy(metaguard::Policy::Off);
  testing::internal::CaptureStderr();
  EXPECT_TRUE(model->forward(torch::ones({2, 16})).is_meta());
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST_F(EmptyModelDebugTest, ModelsBuiltWithTheChecksOffAreNotMarked) {
  metaguard::set_empty_model_checks(false);
  empty_test::PlainNet model = empty_plain_net();
  metaguard::set_empty_model_checks(true);
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(model->forward(torch::ones({2, 16})).is_meta()) << "LibTorch's own result";
}


// A constructor that computes a buffer (rotary frequencies, as Llama's). Its
// factories run on meta under a scope that includes buffers; arange makes an
// empty tensor and resizes it, and the checks' mark must not stop that.
struct RotaryImpl : metaguard::Module {
  explicit RotaryImpl(const metaguard::Config &config) {
    const auto d = config.at("d").get<std::int64_t>();
    register_buffer("inv_freq",
                    1.0 / torch::pow(10000.0, torch::arange(0, d, 2, torch::kFloat) / static_cast<double>(d)),
                    /*persistent=*/false);
    proj = register_module("proj", torch::nn::Linear(d, d));
  }
  torch::nn::Linear proj{nullptr};
};
TORCH_MODULE(Rotary);

TEST_F(EmptyModelDebugTest, AConstructorComputingABufferBuildsUnderAScopeWithBuffers) {
  const metaguard::Config config{{"d", 16}};
  {
    metaguard::DeviceScope scope(torch::kMeta);
    Rotary rotary = metaguard::from_config<Rotary>(config);
    EXPECT_TRUE(rotary->named_buffers()["inv_freq"].is_meta());
    EXPECT_EQ(rotary->named_buffers()["inv_freq"].sizes(), (std::vector<std::int64_t>{8}));
  }
  Rotary rotary{nullptr};
  {
    auto scope = metaguard::init_empty_weights(/*include_buffers=*/true);
    rotary = metaguard::from_config<Rotary>(config);
  }
  EXPECT_TRUE(rotary->proj->weight.is_meta());
  const torch::Tensor inv_freq = rotary->named_buffers()["inv_freq"];
  EXPECT_TRUE(inv_freq.is_meta());
  // Still an empty model's buffer: using it with real tensors is refused.
  const std::string what = meta_error_of([&] { (void)(inv_freq * torch::ones({8})); });
  EXPECT_CONTAINS(what, "'inv_freq' (Float [8])");
  EXPECT_CONTAINS(what, "RotaryImpl> under a meta scope (MetaDeviceScope");
  {
    auto scope = metaguard::init_empty_weights(); // buffers excluded: computed for real
    Rotary rotary = metaguard::from_config<Rotary>(config);
    EXPECT_FALSE(rotary->named_buffers()["inv_freq"].is_meta());
    EXPECT_FLOAT_EQ(rotary->named_buffers()["inv_freq"][1].item<float>(), std::pow(10000.0F, -2.0F / 16));
  }
}

} // namespace empty_model_debug_test
} // namespace
