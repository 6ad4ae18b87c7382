// from_pretrained / load_weights with device maps that offload to disk: the
// disk parameters are read from the checkpoint shards on demand through
// CheckpointWeightsMap (nothing is copied to an offload folder), and the
// model computes exactly what the in-memory one does.
#include <metaguard/metaguard.h>

#include "loading_test_util.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {
namespace loading_offload_test {

using metaguard::LoadOptions;
using metaguard_test::TempDir;

struct OffBlockImpl : torch::nn::Module {
  explicit OffBlockImpl(int64_t d)
      : norm(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})))),
        fc(register_module("fc", torch::nn::Linear(d, d))) {}
  torch::Tensor forward(torch::Tensor x) {
    metaguard::OnloadGuard onload(*this);
    return x + torch::gelu(fc(norm(x)));
  }
  torch::nn::LayerNorm norm;
  torch::nn::Linear fc;
};
TORCH_MODULE(OffBlock);

struct OffModelImpl : metaguard::PreTrainedModel {
  explicit OffModelImpl(const metaguard::Config &config)
      : embed(register_module("embed", torch::nn::Embedding(config.at("vocab").get<int64_t>(),
                                                            config.at("d").get<int64_t>()))),
        blocks(register_module("blocks", torch::nn::ModuleList())),
        head(register_module("head", torch::nn::Linear(config.at("d").get<int64_t>(),
                                                       config.at("vocab").get<int64_t>()))) {
    for (int i = 0; i < config.at("blocks").get<int>(); ++i)
      blocks->push_back(OffBlock(config.at("d").get<int64_t>()));
  }
  torch::Tensor forward(const torch::Tensor &ids) {
    auto h = metaguard::run_onloaded(embed, ids);
    for (const auto &block : *blocks)
      h = block->as<OffBlockImpl>()->forward(h);
    return metaguard::run_onloaded(head, h);
  }
  torch::nn::Embedding embed;
  torch::nn::ModuleList blocks;
  torch::nn::Linear head;
};
TORCH_MODULE(OffModel);

const metaguard::Config kConfig = {{"vocab", 40}, {"d", 32}, {"blocks", 4}};

class LoadingOffloadTest : public testing::Test {
protected:
  void SetUp() override {
    torch::manual_seed(1);
    original_ = OffModel(kConfig);
    metaguard::SaveOptions save;
    save.config = kConfig;
    save.max_shard_size = "8KB"; // several shards
    metaguard::save_pretrained(*original_, dir_.path(), save);
  }
  torch::Tensor ids() const { return torch::tensor({{1, 5, 39}, {0, 7, 7}}); }
  torch::Tensor expected() {
    torch::NoGradGuard no_grad;
    return original_->forward(ids());
  }
  TempDir dir_;
  OffModel original_{nullptr};
};

metaguard::DeviceMap half_on_disk() {
  return {{"embed", "cpu"}, {"blocks.0", "cpu"}, {"blocks.1", "disk"}, {"blocks.2", "cpu"},
          {"blocks.3", "disk"}, {"head", "cpu"}};
}

TEST_F(LoadingOffloadTest, DiskBlocksAreReadFromTheCheckpointAndComputeTheSame) {
  LoadOptions options;
  options.device_map = half_on_disk();
  auto model = metaguard::from_pretrained<OffModel>(dir_.path(), options);
  EXPECT_TRUE(model->blocks[1]->as<OffBlockImpl>()->fc->weight.is_meta());
  EXPECT_FALSE(model->blocks[2]->as<OffBlockImpl>()->fc->weight.is_meta());
  EXPECT_EQ(metaguard::offloaded_parameter_names(*model).size(), 8u); // 2 blocks x 4 parameters
  EXPECT_TRUE(torch::equal(metaguard::load_offloaded_parameter(*model, "blocks.3.fc.weight"),
                           original_->blocks[3]->as<OffBlockImpl>()->fc->weight));
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(model->forward(ids()), expected()));
  EXPECT_TRUE(model->blocks[1]->as<OffBlockImpl>()->fc->weight.is_meta()) << "back to meta after forward";
  EXPECT_NO_THROW(metaguard::verify_dispatch(*model));
}

TEST_F(LoadingOffloadTest, NeedsNoOffloadFolderAndWritesNothing) {
  LoadOptions options;
  options.device_map = half_on_disk();
  const auto before = std::distance(std::filesystem::directory_iterator(dir_.path()),
                                    std::filesystem::directory_iterator());
  auto model = metaguard::from_pretrained<OffModel>(dir_.path(), options);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_.path()),
                          std::filesystem::directory_iterator()),
            before);
}

TEST_F(LoadingOffloadTest, ConvertedDtypeAppliesToDiskParametersToo) {
  LoadOptions in_memory;
  in_memory.dtype = torch::kFloat64;
  auto reference = metaguard::from_pretrained<OffModel>(dir_.path(), in_memory);
  LoadOptions offloaded = in_memory;
  offloaded.device_map = half_on_disk();
  auto model = metaguard::from_pretrained<OffModel>(dir_.path(), offloaded);
  EXPECT_EQ(metaguard::load_offloaded_parameter(*model, "blocks.1.fc.weight").scalar_type(),
            torch::kFloat64);
  torch::NoGradGuard no_grad;
  const auto out = model->forward(ids());
  EXPECT_EQ(out.scalar_type(), torch::kFloat64);
  EXPECT_TRUE(torch::equal(out, reference->forward(ids())));
}

TEST_F(LoadingOffloadTest, AutomaticMapWithASmallBudgetOffloadsAndStillMatches) {
  LoadOptions options;
  options.device_map = metaguard::DeviceMap::automatic();
  options.max_memory = {{"cpu", 12000}};
  options.no_split_modules = {"OffBlockImpl"};
  auto model = metaguard::from_pretrained<OffModel>(dir_.path(), options);
  EXPECT_FALSE(metaguard::offloaded_parameter_names(*model).empty());
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(model->forward(ids()), expected()));
}

TEST_F(LoadingOffloadTest, DispatchedModelSavesEveryTensor) {
  LoadOptions options;
  options.device_map = half_on_disk();
  auto model = metaguard::from_pretrained<OffModel>(dir_.path(), options);
  TempDir out;
  metaguard::SaveOptions save;
  save.config = kConfig;
  metaguard::save_pretrained(*model, out.path(), save);
  auto reloaded = metaguard::from_pretrained<OffModel>(out.path());
  for (const auto &item : original_->named_parameters())
    EXPECT_TRUE(torch::equal(*reloaded->named_parameters().find(item.key()), item.value())) << item.key();
}

TEST_F(LoadingOffloadTest, LoadWeightsUnderAMetaScopeWithAnExplicitMap) {
  OffModel model{nullptr};
  {
    metaguard::MetaDeviceScope scope;
    model = metaguard::from_config<OffModel>(kConfig);
    LoadOptions options;
    options.device_map = half_on_disk(); // an explicit map wins over the scope
    metaguard::load_weights(*model, dir_.path(), options);
  }
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(model->forward(ids()), expected()));
}

} // namespace loading_offload_test
} // namespace
