// Offloaded weights handed to user code or to a forward are the checkpoint's
// values at every load: a write through any tensor the user can get
// (load_offloaded_parameter's result, a parameter materialised inside an
// OnloadGuard, a tensor kept from one) never changes a later forward, a later
// load, or the file on disk. Checked for each source of offloaded bytes:
// safetensors shards (small tensors are copied, tensors from 8 MiB up get a
// mapping of their own), converted dtypes, and accelerate offload folders.
#include <metaguard/metaguard.h>

#include "loading_test_util.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {
namespace offload_isolation_test {

using metaguard::LoadOptions;
using metaguard_test::TempDir;

struct IsoBlockImpl : torch::nn::Module {
  explicit IsoBlockImpl(int64_t d) : fc(register_module("fc", torch::nn::Linear(d, d))) {}
  torch::Tensor forward(torch::Tensor x) {
    metaguard::OnloadGuard onload(*this);
    return x + torch::tanh(fc(x));
  }
  torch::nn::Linear fc;
};
TORCH_MODULE(IsoBlock);

struct IsoModelImpl : metaguard::PreTrainedModel {
  explicit IsoModelImpl(const metaguard::Config &config)
      : blocks(register_module("blocks", torch::nn::ModuleList())) {
    for (int i = 0; i < 3; ++i)
      blocks->push_back(IsoBlock(config.at("d").get<int64_t>()));
  }
  torch::Tensor forward(torch::Tensor x) {
    for (const auto &block : *blocks)
      x = block->as<IsoBlockImpl>()->forward(x);
    return x;
  }
  IsoBlockImpl &block(int i) { return *blocks[i]->as<IsoBlockImpl>(); }
  torch::nn::ModuleList blocks;
};
TORCH_MODULE(IsoModel);

void copy_parameters(const torch::nn::Module &from, torch::nn::Module &to) {
  torch::NoGradGuard no_grad;
  auto target = to.named_parameters(true);
  for (const auto &item : from.named_parameters(true))
    target[item.key()].copy_(item.value());
}

std::string all_bytes(const std::filesystem::path &dir) {
  std::string bytes;
  for (const auto &item : std::filesystem::directory_iterator(dir))
    bytes += item.path().filename().string() + ":" + metaguard_test::read_bytes(item.path());
  return bytes;
}

// d = 16: every weight is small (copied on load); d = 1536: the fc weights
// are 9 MiB, each loaded through a mapping of its own.
class OffloadIsolationTest : public testing::TestWithParam<int64_t> {
protected:
  void SetUp() override {
    torch::manual_seed(3);
    config_ = {{"d", GetParam()}};
    original_ = IsoModel(config_);
    metaguard::SaveOptions save;
    save.max_shard_size = "64KB"; // several shards
    save.config = config_;
    metaguard::save_pretrained(*original_, dir_.path(), save);
    files_before_ = all_bytes(dir_.path());
    input_ = torch::randn({2, GetParam()});
    torch::NoGradGuard no_grad;
    expected_ = original_->forward(input_);
  }
  IsoModel load(LoadOptions options = {}) {
    if (options.device_map.empty())
      options.device_map = {{"", "cpu"}, {"blocks.1", "disk"}, {"blocks.2", "disk"}};
    return metaguard::from_pretrained<IsoModel>(dir_.path(), options);
  }
  // The model still computes what the checkpoint says, loads give the
  // checkpoint's values, and the files are untouched.
  void expect_untouched(IsoModel &model) {
    torch::NoGradGuard no_grad;
    EXPECT_TRUE(torch::equal(model->forward(input_), expected_)) << "a later forward changed";
    for (const char *name : {"blocks.1.fc.weight", "blocks.2.fc.bias"})
      EXPECT_TRUE(torch::equal(metaguard::load_offloaded_parameter(*model, name),
                               original_->named_parameters()[name]))
          << "a later load of " << name << " changed";
    EXPECT_EQ(all_bytes(dir_.path()), files_before_) << "the checkpoint on disk changed";
  }
  TempDir dir_;
  metaguard::Config config_;
  IsoModel original_{nullptr};
  std::string files_before_;
  torch::Tensor input_, expected_;
};

TEST_P(OffloadIsolationTest, WritingToALoadedParameterChangesNoLaterLoadOrForward) {
  auto model = load();
  torch::NoGradGuard no_grad;
  auto weight = metaguard::load_offloaded_parameter(*model, "blocks.1.fc.weight");
  weight.add_(1);
  metaguard::load_offloaded_parameter(*model, "blocks.2.fc.bias").fill_(7);
  metaguard::parameter_value(*model, "blocks.1.fc.weight").mul_(3);
  expect_untouched(model);
  EXPECT_TRUE(torch::equal(weight, original_->block(1).fc->weight + 1)) << "the caller keeps its own write";
}

TEST_P(OffloadIsolationTest, WritingInsideAnOnloadGuardChangesNoLaterLoadOrForward) {
  auto model = load();
  torch::NoGradGuard no_grad;
  {
    metaguard::OnloadGuard onload(model->block(1));
    model->block(1).fc->weight.add_(1);
    model->block(1).fc->bias.zero_();
  }
  expect_untouched(model);
}

TEST_P(OffloadIsolationTest, WritingThroughATensorKeptFromAGuardChangesNothingLater) {
  auto model = load();
  torch::NoGradGuard no_grad;
  torch::Tensor kept;
  {
    metaguard::OnloadGuard onload(model->block(2));
    kept = model->block(2).fc->weight.view({-1}); // shares the materialised storage
  }
  kept.fill_(42);
  expect_untouched(model);
}

TEST_P(OffloadIsolationTest, ConvertedOffloadedWeightsAreFreshAtEveryLoad) {
  LoadOptions options;
  options.dtype = torch::kFloat64;
  auto model = load(options);
  torch::NoGradGuard no_grad;
  metaguard::load_offloaded_parameter(*model, "blocks.1.fc.weight").add_(1);
  {
    metaguard::OnloadGuard onload(model->block(2));
    model->block(2).fc->weight.add_(1);
  }
  EXPECT_TRUE(torch::equal(metaguard::load_offloaded_parameter(*model, "blocks.1.fc.weight"),
                           original_->block(1).fc->weight.to(torch::kFloat64)));
  EXPECT_TRUE(torch::equal(model->forward(input_.to(torch::kFloat64)),
                           [&] {
                             auto reference = load(options);
                             return reference->forward(input_.to(torch::kFloat64));
                           }()));
  EXPECT_EQ(all_bytes(dir_.path()), files_before_);
}

TEST_P(OffloadIsolationTest, ZeroCopyViewsOfTheFileDoNotReachPrivateTensors) {
  metaguard::SafetensorsCheckpoint checkpoint(dir_.path());
  const std::string name = "blocks.1.fc.weight";
  torch::NoGradGuard no_grad;
  checkpoint.tensor(name).add_(5); // the file's shared private mapping
  EXPECT_TRUE(torch::equal(checkpoint.file_of(name).private_tensor(name), original_->block(1).fc->weight));
  metaguard::CheckpointWeightsMap weights(dir_.path());
  weights.load(name).add_(1);
  EXPECT_TRUE(torch::equal(weights.load(name), original_->block(1).fc->weight));
  EXPECT_EQ(all_bytes(dir_.path()), files_before_);
}

TEST_P(OffloadIsolationTest, OffloadFolderWeightsAreFreshAtEveryLoad) {
  TempDir folder;
  auto model = IsoModel(config_);
  copy_parameters(*original_, *model);
  metaguard::dispatch_model(*model, {{"", "cpu"}, {"blocks.1", "disk"}, {"blocks.2", "disk"}},
                            folder.path());
  const std::string folder_before = all_bytes(folder.path());
  torch::NoGradGuard no_grad;
  metaguard::load_offloaded_parameter(*model, "blocks.1.fc.weight").add_(1);
  {
    metaguard::OnloadGuard onload(model->block(2));
    model->block(2).fc->weight.add_(1);
  }
  EXPECT_TRUE(torch::equal(model->forward(input_), expected_));
  EXPECT_TRUE(torch::equal(metaguard::load_offloaded_parameter(*model, "blocks.1.fc.weight"),
                           original_->block(1).fc->weight));
  EXPECT_EQ(all_bytes(folder.path()), folder_before);
}

INSTANTIATE_TEST_SUITE_P(SmallAndMappedTensors, OffloadIsolationTest, testing::Values(16, 1536));

} // namespace offload_isolation_test
} // namespace
