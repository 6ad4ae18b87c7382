// When another library registered the dispatch keys metaguard's scopes and
// transparent offload use, metaguard says so once and falls back: models
// from from_config are released to meta after construction, offloaded
// parameters load through load_offloaded_parameter / OnloadGuard. Each test
// takes its key before metaguard does: ctest runs every test in a process
// of its own.
#include <metaguard/device.h>
#include <metaguard/dispatch.h>
#include <metaguard/loading.h>
#include <metaguard/offload_hook.h>

#include <ATen/core/dispatch/Dispatcher.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <unistd.h>

namespace {
namespace fallback_taken_test {

namespace fs = std::filesystem;

struct NetImpl : torch::nn::Module {
  explicit NetImpl(const metaguard::Config &config)
      : fc(register_module("fc", torch::nn::Linear(config.at("width").get<int64_t>(), 2))),
        steps(register_buffer("steps", torch::zeros({1}))) {}
  torch::nn::Linear fc;
  torch::Tensor steps;
};
TORCH_MODULE(Net);

void other_library_kernel(const c10::OperatorHandle &, torch::jit::Stack *) {}

c10::RegistrationHandleRAII take(c10::DispatchKey key) {
  return c10::Dispatcher::singleton().registerFallback(
      key, c10::KernelFunction::makeFromBoxedFunction<&other_library_kernel>(), "another library");
}

TEST(FallbackTakenTest, MetaScopesStillGiveMetaParametersWhenTheScopeKeyIsTaken) {
  const c10::RegistrationHandleRAII other = take(c10::DispatchKey::TESTING_ONLY_GenericMode);
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(metaguard::meta_factories_available());
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("metaguard: warning: cannot make LibTorch factory functions follow meta scopes, another "
                      "library registered dispatch key"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("models that from_config and from_pretrained build under a meta scope allocate on the CPU "
                      "and are released after construction, and layers your code constructs directly under the "
                      "scope keep real parameters"),
            std::string::npos)
      << said;

  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(metaguard::meta_factories_available());
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "") << "said once per process";

  // What the warning says, both halves.
  auto guard = metaguard::init_empty_weights();
  auto model = metaguard::from_config<Net>(metaguard::Config{{"width", 4}});
  for (const auto &p : model->parameters())
    EXPECT_TRUE(p.is_meta());
  EXPECT_FALSE(model->steps.is_meta()) << "buffers stay real";
  torch::nn::Linear layer(8, 4);
  EXPECT_FALSE(layer->weight.is_meta());
}

TEST(FallbackTakenTest, OffloadedParametersStillLoadThroughTheirHookWhenTheOffloadKeyIsTaken) {
  const fs::path dir = fs::temp_directory_path() / ("metaguard_fallback_taken_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const c10::RegistrationHandleRAII other = take(c10::DispatchKey::TESTING_ONLY_GenericWrapper);
  torch::nn::Sequential model(torch::nn::Linear(4, 4), torch::nn::Linear(4, 2));
  const torch::Tensor weight = model->named_parameters(true)["1.weight"].clone();
  ::testing::internal::CaptureStderr();
  metaguard::dispatch_model(*model, {{"", "cpu"}, {"1", "disk"}}, dir);
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("metaguard: warning: cannot make offloaded parameters load themselves, another library "
                      "registered dispatch key"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("need OnloadGuard in their forward"), std::string::npos) << said;
  EXPECT_TRUE(model->named_parameters(true)["1.weight"].is_meta());
  EXPECT_TRUE(torch::equal(metaguard::load_offloaded_parameter(*model, "1.weight"), weight));
  fs::remove_all(dir);
}

} // namespace fallback_taken_test
} // namespace
