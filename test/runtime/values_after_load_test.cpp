// After a load (load_weights, load_checkpoint_and_dispatch, from_pretrained,
// strict either way) no tensor is left silently on meta or holding
// to_empty's poison, whichever way the model was built empty:
//
// * computed buffers (non-persistent, filled by the constructor) keep or
//   get back their computed values; a model built with buffers on meta by
//   from_config has them recomputed, one built by hand that way is refused
//   with one error naming them (under the Policy);
// * missing keys under strict = false are named in the load's one warning
//   and become zeros;
// * ties the model declares hold (one tensor, equal values);
// * a device map splitting a tie between a device and "disk" loads, with a
//   warning naming the tie (tied_placements.h).
//
// A release translation unit: the checks that raise on use are not needed
// here, and the poison of floating tensors is recognised without them.
#include "empty_model_net.h"
#include "expect_text.h"
#include "loading_test_util.h"

#include <gtest/gtest.h>

namespace {
namespace values_after_load_test {

using empty_test::Net;
using metaguard::LoadOptions;
using metaguard_test::TempDir;

const metaguard::Config kConfig = empty_test::net_config(/*blocks=*/2, /*d=*/8);

// How the empty model is built, as users do.
enum class Build { InitEmptyWeights, BuffersOnMeta, BuffersOnMetaThenToEmpty, EmptyWeightsThenToEmpty };

std::string build_name(const testing::TestParamInfo<Build> &info) {
  switch (info.param) {
  case Build::InitEmptyWeights:
    return "InitEmptyWeights";
  case Build::BuffersOnMeta:
    return "BuffersOnMeta";
  case Build::BuffersOnMetaThenToEmpty:
    return "BuffersOnMetaThenToEmpty";
  case Build::EmptyWeightsThenToEmpty:
    return "EmptyWeightsThenToEmpty";
  }
  return "unknown";
}

Net build_empty(Build how) {
  Net net{nullptr};
  if (how == Build::InitEmptyWeights || how == Build::EmptyWeightsThenToEmpty) {
    auto scope = metaguard::init_empty_weights();
    net = metaguard::from_config<Net>(kConfig);
  } else {
    metaguard::MetaDeviceScope scope; // buffers on meta too
    net = metaguard::from_config<Net>(kConfig);
  }
  if (how == Build::BuffersOnMetaThenToEmpty || how == Build::EmptyWeightsThenToEmpty)
    metaguard::to_empty(*net, torch::kCPU);
  return net;
}

torch::Tensor computed_scale() { return torch::linspace(0.5, 1.5, 8); }

torch::Tensor logits_of(Net &net) {
  torch::NoGradGuard no_grad;
  return net->forward(empty_test::net_ids());
}

class ValuesAfterLoad : public testing::TestWithParam<Build> {
protected:
  void SetUp() override { saved_ = empty_test::saved_net(dir_.path(), kConfig); }
  TempDir dir_;
  Net saved_{nullptr};
};

TEST_P(ValuesAfterLoad, ComputedBufferHasItsValueAndNoWarningIsPrinted) {
  Net net = build_empty(GetParam());
  testing::internal::CaptureStderr();
  metaguard::load_weights(*net, dir_.path());
  const std::string printed = testing::internal::GetCapturedStderr();
  EXPECT_EQ(printed, "");
  ASSERT_FALSE(net->scale.is_meta());
  EXPECT_TRUE(torch::equal(net->scale, computed_scale())) << net->scale;
  EXPECT_TRUE(torch::equal(logits_of(net), logits_of(saved_)));
}

TEST_P(ValuesAfterLoad, LoadCheckpointAndDispatchWithDiskRecomputesToo) {
  Net net = build_empty(GetParam());
  LoadOptions options;
  options.device_map = {{"", "cpu"}, {"blocks.1", "disk"}};
  if (GetParam() == Build::BuffersOnMetaThenToEmpty || GetParam() == Build::EmptyWeightsThenToEmpty)
    options.device_map = {{"", "cpu"}}; // to_empty gave every tensor memory: nothing to offload
  metaguard::load_checkpoint_and_dispatch(*net, dir_.path(), options);
  EXPECT_TRUE(torch::equal(net->scale, computed_scale()));
  EXPECT_TRUE(torch::equal(logits_of(net), logits_of(saved_)));
}

TEST_P(ValuesAfterLoad, MissingKeyUnderStrictFalseIsNamedOnceAndZeroed) {
  auto state = metaguard::checkpoint_state(*saved_);
  state.erase(std::find_if(state.begin(), state.end(), [](auto &e) { return e.first == "head.bias"; }));
  TempDir odd;
  metaguard::save_safetensors(odd / "model.safetensors", state);
  Net net = build_empty(GetParam());
  LoadOptions lenient;
  lenient.strict = false;
  testing::internal::CaptureStderr();
  metaguard::load_weights(*net, odd.path(), lenient);
  const std::string printed = testing::internal::GetCapturedStderr();
  EXPECT_CONTAINS(printed, "missing keys (in the model, not in the checkpoint): head.bias;");
  const bool poisoned = GetParam() == Build::BuffersOnMetaThenToEmpty || GetParam() == Build::EmptyWeightsThenToEmpty;
  EXPECT_CONTAINS(printed, poisoned ? "held only to_empty's poison (memory nothing initialised) and are now zeros: head.bias"
                                    : "were on the meta device and are now zeros: head.bias");
  const auto first = printed.find("warning");
  EXPECT_EQ(printed.find("warning", first + 1), std::string::npos) << "one warning: " << printed;
  EXPECT_TRUE(torch::equal(net->head->bias, torch::zeros({30})));
  EXPECT_TRUE(torch::equal(net->scale, computed_scale()));
}

INSTANTIATE_TEST_SUITE_P(EveryEmptyBuild, ValuesAfterLoad,
                         testing::Values(Build::InitEmptyWeights, Build::BuffersOnMeta,
                                         Build::BuffersOnMetaThenToEmpty, Build::EmptyWeightsThenToEmpty),
                         build_name);

TEST(ValuesAfterLoadFromPretrained, ComputedBufferKeepsItsValue) {
  TempDir dir;
  Net saved = empty_test::saved_net(dir.path(), kConfig);
  for (const bool strict : {true, false}) {
    LoadOptions options;
    options.strict = strict;
    Net net = metaguard::from_pretrained<Net>(dir.path(), options);
    EXPECT_TRUE(torch::equal(net->scale, computed_scale()));
    EXPECT_TRUE(torch::equal(logits_of(net), logits_of(saved)));
  }
}

// With the debug checks on, the load leaves nothing marked empty or
// uninitialised: the forward and save_pretrained, which refuse such tensors,
// go through.
TEST(ValuesAfterLoadDebugChecks, NothingIsLeftMarkedEmptyOrUninitialised) {
  TempDir dir;
  Net saved = empty_test::saved_net(dir.path(), kConfig);
  const bool before = metaguard::empty_model_checks();
  metaguard::set_empty_model_checks(true);
  for (const Build how : {Build::InitEmptyWeights, Build::BuffersOnMeta, Build::BuffersOnMetaThenToEmpty,
                          Build::EmptyWeightsThenToEmpty}) {
    Net net = build_empty(how);
    metaguard::load_weights(*net, dir.path());
    EXPECT_TRUE(torch::equal(logits_of(net), logits_of(saved))) << build_name({how, 0});
    TempDir out;
    EXPECT_NO_THROW(metaguard::save_pretrained(*net, out.path())) << build_name({how, 0});
  }
  metaguard::set_empty_model_checks(before);
}

// Built by hand under a meta scope with buffers: metaguard cannot construct
// the model again, so the load names the buffer and says what to do.
Net built_by_hand_with_buffers_on_meta() {
  metaguard::MetaDeviceScope scope;
  return Net(kConfig);
}

template <class E> std::string error_of(const std::function<void()> &f) {
  try {
    f();
  } catch (const E &e) {
    return e.what();
  } catch (const std::exception &e) {
    return std::string("(another error) ") + e.what();
  }
  return "(no error)";
}

TEST(ValuesAfterLoadByHand, ComputedBufferOnMetaIsOneErrorBeforeAnythingChanges) {
  TempDir dir;
  empty_test::saved_net(dir.path(), kConfig);
  Net net = built_by_hand_with_buffers_on_meta();
  const std::string error =
      error_of<metaguard::MetaDeviceError>([&] { metaguard::load_weights(*net, dir.path()); });
  EXPECT_CONTAINS(error, "gives no values to non-persistent buffers, and nothing else has: 'scale' (Float [8], on meta)");
  EXPECT_CONTAINS(error, dir.path().string());
  EXPECT_CONTAINS(error, "init_empty_weights()");
  EXPECT_CONTAINS(error, "from_config<Model>(config)");
  EXPECT_TRUE(net->head->weight.is_meta()) << "nothing loaded";
}

TEST(ValuesAfterLoadByHand, ComputedBufferWithPoisonIsAnUninitializedMemoryError) {
  TempDir dir;
  empty_test::saved_net(dir.path(), kConfig);
  Net net = built_by_hand_with_buffers_on_meta();
  metaguard::to_empty(*net, torch::kCPU);
  const std::string error =
      error_of<metaguard::UninitializedMemoryError>([&] { metaguard::load_weights(*net, dir.path()); });
  EXPECT_CONTAINS(error, "'scale' (Float [8], holding only to_empty's poison)");
}

TEST(ValuesAfterLoadByHand, PolicyWarnPrintsTheSameMessageAndLoads) {
  TempDir dir;
  Net saved = empty_test::saved_net(dir.path(), kConfig);
  Net net = built_by_hand_with_buffers_on_meta();
  metaguard::set_policy(metaguard::Policy::Warn);
  testing::internal::CaptureStderr();
  metaguard::load_weights(*net, dir.path());
  const std::string printed = testing::internal::GetCapturedStderr();
  metaguard::set_policy(metaguard::Policy::Throw);
  EXPECT_CONTAINS(printed, "'scale' (Float [8], on meta)");
  EXPECT_CONTAINS(printed, "[policy warn: they are left as they are]");
  EXPECT_TRUE(torch::equal(net->head->weight, saved->head->weight));
  EXPECT_TRUE(net->scale.is_meta());
}

// --- ties ---

// An embedding and a head tied to it: made by the constructor (one tensor
// under two names, config "made": true) or only declared (two Parameters).
struct TiedNetImpl : metaguard::PreTrainedModel {
  explicit TiedNetImpl(const metaguard::Config &config) : metaguard::PreTrainedModel(config) {
    embed = register_module("embed", torch::nn::Embedding(30, 8));
    blocks = register_module("blocks", torch::nn::ModuleList(empty_test::Block(8), empty_test::Block(8)));
    head = register_module("head", std::make_shared<torch::nn::Module>());
    head_weight = head->register_parameter("weight", config.value("made", true) ? embed->weight : torch::randn({30, 8}));
    scale = register_buffer("scale", torch::linspace(0.5, 1.5, 8), /*persistent=*/false);
  }
  metaguard::TiedWeights tied_weights_keys() const override { return {{"head.weight", "embed.weight"}}; }
  torch::Tensor forward(const torch::Tensor &ids) {
    auto h = embed(ids) * scale;
    for (const auto &block : *blocks)
      h = block->as<empty_test::BlockImpl>()->forward(h);
    return torch::linear(h, head_weight);
  }
  torch::nn::Embedding embed{nullptr};
  torch::nn::ModuleList blocks{nullptr};
  std::shared_ptr<torch::nn::Module> head;
  torch::Tensor head_weight, scale;
};
TORCH_MODULE(TiedNet);

metaguard::Config tied_config(bool made) { return {{"made", made}}; }

TiedNet empty_tied(bool made, Build how) {
  TiedNet net{nullptr};
  if (how == Build::InitEmptyWeights || how == Build::EmptyWeightsThenToEmpty) {
    auto scope = metaguard::init_empty_weights();
    net = metaguard::from_config<TiedNet>(tied_config(made));
  } else {
    metaguard::MetaDeviceScope scope;
    net = metaguard::from_config<TiedNet>(tied_config(made));
  }
  if (how == Build::BuffersOnMetaThenToEmpty || how == Build::EmptyWeightsThenToEmpty)
    metaguard::to_empty(*net, torch::kCPU);
  return net;
}

// One tensor, or one memory: a tie.
bool tied(const TiedNet &net) {
  const torch::Tensor &a = net->embed->weight, &b = net->head_weight;
  return a.unsafeGetTensorImpl() == b.unsafeGetTensorImpl() ||
         (!a.is_meta() && a.data_ptr() == b.data_ptr() && a.sizes() == b.sizes());
}

class TiesAfterLoad : public testing::TestWithParam<Build> {
protected:
  void SetUp() override {
    saved_ = TiedNet(tied_config(true));
    metaguard::save_pretrained(*saved_, dir_.path());
  }
  TempDir dir_;
  TiedNet saved_{nullptr};
};

TEST_P(TiesAfterLoad, DeclaredTieHoldsAfterEmptyBuildAndLoad) {
  for (const bool made : {true, false}) {
    TiedNet net = empty_tied(made, GetParam());
    metaguard::load_weights(*net, dir_.path());
    EXPECT_TRUE(tied(net)) << "made " << made;
    EXPECT_TRUE(torch::equal(net->head_weight, saved_->embed->weight));
    EXPECT_TRUE(torch::equal(net->scale, computed_scale()));
    torch::NoGradGuard no_grad;
    EXPECT_TRUE(torch::equal(net->forward(empty_test::net_ids()), saved_->forward(empty_test::net_ids())));
  }
}

TEST_P(TiesAfterLoad, TieWithBothSidesMissingIsOneTensorOfZeros) {
  auto state = metaguard::checkpoint_state(*saved_);
  state.erase(std::find_if(state.begin(), state.end(), [](auto &e) { return e.first == "embed.weight"; }));
  TempDir odd;
  metaguard::save_safetensors(odd / "model.safetensors", state);
  TiedNet net = empty_tied(/*made=*/false, GetParam());
  LoadOptions lenient;
  lenient.strict = false;
  testing::internal::CaptureStderr();
  metaguard::load_weights(*net, odd.path(), lenient);
  const std::string printed = testing::internal::GetCapturedStderr();
  EXPECT_CONTAINS(printed, "embed.weight");
  EXPECT_TRUE(tied(net));
  EXPECT_TRUE(torch::equal(net->head_weight, torch::zeros({30, 8})));
}

INSTANTIATE_TEST_SUITE_P(EveryEmptyBuild, TiesAfterLoad,
                         testing::Values(Build::InitEmptyWeights, Build::BuffersOnMeta,
                                         Build::BuffersOnMetaThenToEmpty, Build::EmptyWeightsThenToEmpty),
                         build_name);

// --- a device map splitting a tie between the CPU and disk ---

TEST(SplitTie, HeadOnCpuEmbeddingsOnDiskLoadsOneTensorInMemoryWithAWarning) {
  TempDir dir;
  TiedNet saved(tied_config(true));
  metaguard::save_pretrained(*saved, dir.path());
  const metaguard::DeviceMap maps[] = {
      {{"", "cpu"}, {"embed", "disk"}, {"blocks", "cpu"}, {"head", "cpu"}},
      {{"", "cpu"}, {"embed", "cpu"}, {"blocks.0", "cpu"}, {"blocks.1", "disk"}, {"head", "disk"}},
  };
  for (const auto &map : maps) {
    for (const bool made : {true, false}) {
      TiedNet net = empty_tied(made, Build::InitEmptyWeights);
      LoadOptions options;
      options.device_map = map;
      testing::internal::CaptureStderr();
      metaguard::load_checkpoint_and_dispatch(*net, dir.path(), options);
      const std::string printed = testing::internal::GetCapturedStderr();
      EXPECT_CONTAINS(printed, "the device map puts tied parameters 'embed.weight' on");
      EXPECT_CONTAINS(printed, "'head.weight' on");
      EXPECT_CONTAINS(printed, "it stays in memory on cpu for all of them");
      EXPECT_TRUE(tied(net));
      EXPECT_TRUE(net->head_weight.device().is_cpu());
      const auto offloaded = metaguard::offloaded_parameter_names(*net);
      EXPECT_EQ(std::count(offloaded.begin(), offloaded.end(), "embed.weight"), 0);
      EXPECT_EQ(std::count(offloaded.begin(), offloaded.end(), "head.weight"), 0);
      torch::NoGradGuard no_grad;
      EXPECT_TRUE(torch::allclose(net->forward(empty_test::net_ids()), saved->forward(empty_test::net_ids())));
    }
  }
}

TEST(SplitTie, FromPretrainedLoadsTheSplitMapToo) {
  TempDir dir;
  TiedNet saved(tied_config(true));
  metaguard::save_pretrained(*saved, dir.path());
  LoadOptions options;
  options.device_map = {{"", "cpu"}, {"embed", "disk"}, {"head", "cpu"}};
  testing::internal::CaptureStderr();
  TiedNet net = metaguard::from_pretrained<TiedNet>(dir.path(), options);
  EXPECT_CONTAINS(testing::internal::GetCapturedStderr(), "tied parameters");
  EXPECT_TRUE(tied(net));
  EXPECT_TRUE(torch::equal(net->head_weight, saved->embed->weight));
}

} // namespace values_after_load_test
} // namespace
