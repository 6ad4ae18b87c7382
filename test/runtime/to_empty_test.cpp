// to_empty: an empty model's meta tensors get uninitialised memory on a
// device in place, so an optimizer built on the empty model steps the same
// parameters once they are initialised; offloaded parameters are refused.
#include "empty_model_net.h"
#include "expect_text.h"
#include "loading_test_util.h"
#include "offload_error_of.h"

#include <gtest/gtest.h>

#include <map>

namespace {
namespace to_empty_test {

using empty_test::Net;
using metaguard_test::TempDir;

std::map<std::string, const c10::TensorImpl *> identities(const torch::nn::Module &module) {
  std::map<std::string, const c10::TensorImpl *> found;
  for (const auto &item : module.named_parameters())
    found[item.key()] = item.value().unsafeGetTensorImpl();
  for (const auto &item : module.named_buffers())
    found[item.key()] = item.value().unsafeGetTensorImpl();
  return found;
}

void initialise(torch::nn::Module &module) {
  torch::manual_seed(7);
  torch::NoGradGuard no_grad;
  for (auto &parameter : module.parameters())
    parameter.normal_(0.0, 0.5);
}

TEST(ToEmpty, GivesEveryMetaTensorMemoryOnTheDeviceInPlace) {
  Net model = empty_test::empty_net();
  const auto before = identities(*model);
  const torch::Tensor scale = model->scale.clone();
  std::map<std::string, std::pair<std::vector<std::int64_t>, torch::Dtype>> shapes;
  for (const auto &item : model->named_parameters())
    shapes[item.key()] = {item.value().sizes().vec(), item.value().scalar_type()};

  metaguard::to_empty(*model, torch::kCPU);

  EXPECT_EQ(identities(*model), before) << "same Parameter objects";
  for (const auto &item : model->named_parameters()) {
    const torch::Tensor &p = item.value();
    EXPECT_FALSE(p.is_meta()) << item.key();
    EXPECT_TRUE(p.device().is_cpu()) << item.key();
    EXPECT_NE(p.data_ptr(), nullptr) << item.key();
    EXPECT_TRUE(p.requires_grad()) << item.key();
    EXPECT_EQ(p.sizes().vec(), shapes[item.key()].first) << item.key();
    EXPECT_EQ(p.scalar_type(), shapes[item.key()].second) << item.key();
  }
  EXPECT_TRUE(torch::equal(model->scale, scale)) << "a real buffer keeps its value";
  initialise(*model);
  EXPECT_EQ(empty_test::forward(model).sizes(), (std::vector<std::int64_t>{2, 3, 30}));
}

TEST(ToEmpty, AnOptimizerBuiltOnTheEmptyModelStepsTheSameParameters) {
  Net model = empty_test::empty_net();
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
  metaguard::to_empty(*model, torch::kCPU);
  initialise(*model);

  const auto &held = optimizer.param_groups().at(0).params();
  const auto parameters = model->parameters();
  ASSERT_EQ(held.size(), parameters.size());
  for (std::size_t i = 0; i < held.size(); ++i)
    EXPECT_EQ(held[i].unsafeGetTensorImpl(), parameters[i].unsafeGetTensorImpl());

  std::vector<torch::Tensor> before;
  for (const auto &p : parameters)
    before.push_back(p.detach().clone());
  optimizer.zero_grad();
  model->forward(empty_test::net_ids()).pow(2).mean().backward();
  optimizer.step();
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    ASSERT_TRUE(parameters[i].grad().defined()) << i;
    // SGD may fuse the multiply and the add (one rounding less than this
    // expression): where the step nearly cancels the value, the two differ by
    // an ulp of the operands, not of the result, hence the absolute tolerance.
    EXPECT_TRUE(torch::allclose(parameters[i], before[i] - 0.1 * parameters[i].grad(),
                                /*rtol=*/1e-5, /*atol=*/1e-6))
        << i;
    EXPECT_FALSE(torch::equal(parameters[i], before[i])) << i;
  }
}

TEST(ToEmpty, TorchLoadFillsTheModelAfterwards) {
  TempDir dir;
  torch::manual_seed(2);
  Net saved(empty_test::net_config());
  torch::save(saved, (dir / "net.pt").string());
  Net model = empty_test::empty_net();
  metaguard::to_empty(*model, torch::kCPU);
  torch::load(model, (dir / "net.pt").string());
  EXPECT_TRUE(torch::equal(empty_test::forward(model), empty_test::forward(saved)));
}

TEST(ToEmpty, WithoutRecursionOnlyTheModulesOwnTensorsChange) {
  Net model = empty_test::empty_net();
  metaguard::to_empty(*model, torch::kCPU, /*recurse=*/false);
  EXPECT_TRUE(model->head->weight.is_meta()) << "the model itself holds no parameter";
  metaguard::to_empty(*model->head, torch::kCPU, /*recurse=*/false);
  EXPECT_FALSE(model->head->weight.is_meta());
  EXPECT_FALSE(model->head->bias.is_meta());
  EXPECT_TRUE(model->embed->weight.is_meta());
}

// One tensor under two names, as LibTorch ties parameters.
struct TiedImpl : torch::nn::Module {
  TiedImpl() {
    a = register_parameter("a", torch::empty({2, 3}, torch::kMeta));
    register_parameter("b", a);
  }
  torch::Tensor a;
};

TEST(ToEmpty, ATiedParameterGetsOneTensor) {
  TiedImpl tied;
  metaguard::to_empty(tied, torch::kCPU);
  const auto parameters = tied.named_parameters();
  EXPECT_FALSE(parameters["a"].is_meta());
  EXPECT_EQ(parameters["a"].unsafeGetTensorImpl(), parameters["b"].unsafeGetTensorImpl());
  EXPECT_EQ(tied.a.unsafeGetTensorImpl(), parameters["a"].unsafeGetTensorImpl());
}

TEST(ToEmpty, OffloadedParametersAreRefusedBeforeAnythingChanges) {
  TempDir dir;
  torch::manual_seed(3);
  Net saved = empty_test::saved_net(dir.path());
  Net model = empty_test::empty_net();
  metaguard::LoadOptions options;
  options.device_map = {{"", "cpu"}, {"blocks.1", "disk"}};
  metaguard::load_checkpoint_and_dispatch(*model, dir.path(), options);

  const std::string what = offload_error_of([&] { metaguard::to_empty(*model, torch::kCPU); });
  EXPECT_CONTAINS(what, "blocks.1.fc.weight");
  EXPECT_CONTAINS(what, "on disk");
  EXPECT_CONTAINS(what, "Nothing was changed");
  EXPECT_TRUE(model->blocks[1]->as<empty_test::BlockImpl>()->fc->weight.is_meta());
  metaguard::verify_dispatch(*model);
  EXPECT_TRUE(torch::equal(empty_test::forward(model), empty_test::forward(saved)));

  // A subtree without offloaded parameters is fine.
  EXPECT_NO_THROW(metaguard::to_empty(*model->head, torch::kCPU));
}

} // namespace to_empty_test
} // namespace
