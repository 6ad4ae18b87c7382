// PyTorch checkpoints (torch.save's pytorch_model.bin) behind the reader
// interface: files written by real PyTorch (test/data/pytorch-reference), the
// folder's one rule for which weights a load reads, and the refusals of the
// restricted pickle reader (inputs of the fuzz corpus).
#include <metaguard/metaguard.h>

#include "expect_text.h"
#include "loading_test_util.h"
#include "test_paths.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {
namespace pytorch_checkpoint_test {

using metaguard::CheckpointFormat;
using metaguard::FormatError;
using metaguard_test::TempDir;

const std::filesystem::path kReference = std::filesystem::path(METAGUARD_TEST_DATA) / "pytorch-reference";
const std::filesystem::path kCorpus =
    std::filesystem::path(METAGUARD_TEST_DATA) / ".." / ".." / "fuzz" / "corpus" / "pytorch_bin";

// The values the reference files were written with.
torch::Tensor w() { return torch::arange(12, torch::kFloat32).reshape({3, 4}) / 8; }


std::filesystem::path copy_into(const TempDir &dir, const std::filesystem::path &file,
                                const std::string &name = metaguard::kPytorchWeightsName) {
  std::filesystem::copy_file(file, dir / name, std::filesystem::copy_options::overwrite_existing);
  return dir / name;
}

TEST(PytorchCheckpoint, ReadsAStateDictThatTorchSaveWrote) {
  const auto checkpoint = metaguard::open_checkpoint(kReference / "pytorch_model.bin");
  EXPECT_STREQ(checkpoint->format(), "pytorch");
  EXPECT_FALSE(checkpoint->sharded());
  EXPECT_EQ(checkpoint->names(), (std::vector<std::string>{"fc.weight", "fc.bias", "head.weight",
                                                           "transposed", "tail", "half", "steps",
                                                           "mask"}));
  EXPECT_TRUE(torch::equal(checkpoint->tensor("fc.weight"), w()));
  EXPECT_TRUE(torch::equal(checkpoint->tensor("head.weight"), w()));
  EXPECT_TRUE(torch::equal(checkpoint->tensor("fc.bias"), torch::tensor({0.5f, -0.5f, 0.25f})));
  EXPECT_TRUE(torch::equal(checkpoint->tensor("steps"), torch::arange(5, torch::kInt64)));
  EXPECT_TRUE(torch::equal(checkpoint->tensor("mask"), torch::tensor({true, false, true})));
  EXPECT_EQ(checkpoint->info("half").dtype, "BF16");
  EXPECT_EQ(checkpoint->info("mask").dtype, "BOOL");
  EXPECT_EQ(checkpoint->info("transposed").shape, (std::vector<std::int64_t>{4, 3}));
}

TEST(PytorchCheckpoint, ViewsReadAsTheirValues) {
  const auto checkpoint = metaguard::open_checkpoint(kReference / "pytorch_model.bin");
  const auto transposed = checkpoint->tensor("transposed");
  EXPECT_TRUE(transposed.is_contiguous());
  EXPECT_TRUE(torch::equal(transposed, w().t()));
  EXPECT_TRUE(torch::equal(checkpoint->tensor("tail"), w().reshape(-1).slice(0, 4)));
  EXPECT_TRUE(torch::equal(checkpoint->private_tensor("transposed"), w().t()));
}

TEST(PytorchCheckpoint, ConvertsAndPlacesOnRead) {
  const auto checkpoint = metaguard::open_checkpoint(kReference / "pytorch_model.bin");
  EXPECT_TRUE(torch::equal(checkpoint->tensor("half", torch::kFloat32), torch::arange(4) / 4.0));
  EXPECT_TRUE(torch::equal(checkpoint->tensor("transposed", torch::kFloat64), w().t().to(torch::kFloat64)));
  EXPECT_EQ(checkpoint->tensor("fc.weight", torch::kBFloat16).scalar_type(), torch::kBFloat16);
}

TEST(PytorchCheckpoint, PrivateTensorsShareNothing) {
  const auto checkpoint = metaguard::open_checkpoint(kReference / "pytorch_model.bin");
  auto mine = checkpoint->private_tensor("fc.weight");
  mine.fill_(7);
  EXPECT_TRUE(torch::equal(checkpoint->tensor("fc.weight"), w()));
  EXPECT_TRUE(torch::equal(checkpoint->private_tensor("head.weight"), w()));
}

TEST(PytorchCheckpoint, ReadsShardsThroughTheirIndex) {
  TempDir dir;
  for (const char *name : {"pytorch_model.bin.index.json", "pytorch_model-00001-of-00002.bin",
                           "pytorch_model-00002-of-00002.bin"})
    copy_into(dir, kReference / name, name);
  const auto checkpoint = metaguard::open_checkpoint(dir.path());
  EXPECT_TRUE(checkpoint->sharded());
  EXPECT_EQ(checkpoint->file_paths().size(), 3u);
  EXPECT_EQ(checkpoint->path_of("steps"), dir / "pytorch_model-00002-of-00002.bin");
  EXPECT_TRUE(torch::equal(checkpoint->tensor("fc.weight"), w()));
  EXPECT_EQ(checkpoint->metadata().size(), 0u); // total_size is a number, not a string
  std::filesystem::remove(dir / "pytorch_model-00002-of-00002.bin");
  EXPECT_CONTAINS(metaguard_test::format_error_of([&] { metaguard::open_checkpoint(dir.path()); }),
                  "pytorch_model-00002-of-00002.bin', which does not exist");
}

TEST(PytorchCheckpoint, AFolderPrefersSafetensorsAsTransformersDoes) {
  TempDir dir;
  copy_into(dir, kReference / "pytorch_model.bin");
  EXPECT_EQ(metaguard::find_checkpoint(dir.path())->format, CheckpointFormat::Pytorch);
  metaguard::save_safetensors(dir / "model.safetensors", {{"fc.weight", torch::zeros({3, 4})}});
  const auto layout = metaguard::find_checkpoint(dir.path());
  EXPECT_EQ(layout->format, CheckpointFormat::Safetensors);
  EXPECT_EQ(layout->file, dir / "model.safetensors");
  EXPECT_STREQ(metaguard::open_checkpoint(dir.path())->format(), "safetensors");
  EXPECT_TRUE(torch::equal(metaguard::open_checkpoint(dir.path())->tensor("fc.weight"), torch::zeros({3, 4})));
  TempDir empty;
  EXPECT_FALSE(metaguard::find_checkpoint(empty.path()).has_value());
}

struct Net : torch::nn::Module {
  Net() { fc = register_module("fc", torch::nn::Linear(4, 3)); }
  torch::nn::Linear fc{nullptr};
};

TEST(PytorchCheckpoint, LoadsIntoAModel) {
  TempDir dir;
  copy_into(dir, kReference / "pytorch_model-00001-of-00002.bin");
  Net net;
  metaguard::load_weights(net, dir.path());
  EXPECT_TRUE(torch::equal(net.fc->weight, w()));
  EXPECT_TRUE(torch::equal(net.fc->bias, torch::tensor({0.5f, -0.5f, 0.25f})));
  metaguard::LoadOptions to_bf16;
  to_bf16.dtype = torch::kBFloat16;
  metaguard::load_weights(net, dir.path(), to_bf16);
  EXPECT_TRUE(torch::equal(net.fc->weight, w().to(torch::kBFloat16)));
}

TEST(PytorchCheckpoint, OffloadedParametersAreReadFromTheArchive) {
  TempDir dir;
  copy_into(dir, kReference / "pytorch_model-00001-of-00002.bin");
  Net net;
  metaguard::LoadOptions options;
  options.device_map = metaguard::DeviceMap::on(metaguard::Placement::disk());
  metaguard::load_weights(net, dir.path(), options);
  EXPECT_TRUE(net.fc->weight.is_meta());
  EXPECT_TRUE(torch::allclose(net.fc->forward(torch::eye(4)), w().t() + torch::tensor({0.5f, -0.5f, 0.25f})));
}

TEST(PytorchCheckpoint, ReadsTheLegacyFormat) {
  // What PyTorch before 1.6 wrote, and many published pytorch_model.bin are.
  const auto legacy = metaguard::open_checkpoint(kReference / "legacy.bin");
  const auto current = metaguard::open_checkpoint(kReference / "pytorch_model.bin");
  EXPECT_STREQ(legacy->format(), "pytorch");
  EXPECT_EQ(legacy->names(), current->names());
  for (const auto &name : current->names()) {
    EXPECT_EQ(legacy->info(name).dtype, current->info(name).dtype) << name;
    EXPECT_TRUE(torch::equal(legacy->tensor(name), current->tensor(name))) << name;
    EXPECT_TRUE(torch::equal(legacy->private_tensor(name), current->tensor(name))) << name;
  }
  EXPECT_TRUE(torch::equal(legacy->tensor("transposed", torch::kFloat64), w().t().to(torch::kFloat64)));
}

TEST(PytorchCheckpoint, SafetensorsCheckpointSaysWhereAPickleIs) {
  TempDir dir;
  copy_into(dir, kReference / "pytorch_model.bin");
  EXPECT_CONTAINS(metaguard_test::format_error_of([&] { metaguard::SafetensorsCheckpoint checkpoint(dir.path()); }),
                  "a PyTorch pickle, not safetensors");
}

// What a pickle that is not a plain state dict gets: a FormatError naming the
// file and what is wrong, never a run of what it names.
struct Refusal {
  const char *seed;
  std::vector<const char *> says;
};

class PytorchRefusal : public testing::TestWithParam<Refusal> {};

TEST_P(PytorchRefusal, NamesTheFileAndTheReason) {
  TempDir dir;
  copy_into(dir, kCorpus / GetParam().seed);
  const auto error = metaguard_test::format_error_of([&] {
    const auto checkpoint = metaguard::open_checkpoint(dir.path());
    for (const auto &name : checkpoint->names())
      (void)checkpoint->tensor(name);
  });
  EXPECT_CONTAINS(error, (dir / "pytorch_model.bin").string());
  for (const char *text : GetParam().says)
    EXPECT_CONTAINS(error, text);
}

INSTANTIATE_TEST_SUITE_P(
    Seeds, PytorchRefusal,
    testing::Values(
        Refusal{"os_system", {"'posix.system'", "weights_only=True", "does not run it"}},
        Refusal{"training_checkpoint", {"'epoch' holds an int, not a tensor", "model.state_dict()"}},
        Refusal{"not_a_dict", {"holds an int, not a state dict"}},
        Refusal{"view_past_storage", {"tensor 'a' reads element 6 of storage '0', which has 6"}},
        Refusal{"storage_larger_than_record", {"storage '0' claims 1073741824 elements"}},
        Refusal{"missing_storage", {"storage '7', which the archive does not hold"}},
        Refusal{"truncated_pickle", {"data.pkl", "truncated"}},
        Refusal{"memo_read_before_write", {"memo entry 5 is read before it is written"}},
        Refusal{"deep_nesting", {"holds a tuple, not a state dict"}},
        Refusal{"list_holding_itself", {"holds a list, not a state dict"}},
        Refusal{"big_endian", {"big-endian"}},
        Refusal{"legacy_truncated_header", {"truncated"}},
        Refusal{"legacy_big_endian", {"big-endian"}},
        Refusal{"legacy_count_mismatch", {"storage '0' holds 5 elements where its tensors say 6"}},
        Refusal{"legacy_truncated_storage", {"storage '1' runs past the end of the file"}},
        Refusal{"git_lfs_pointer", {"git-lfs pointer", "git lfs pull"}},
        Refusal{"truncated_archive", {"not a readable torch.save archive"}},
        Refusal{"bfloat16_and_bool", {"tensor 'm'"}}),
    [](const testing::TestParamInfo<Refusal> &info) { return std::string(info.param.seed); });

} // namespace pytorch_checkpoint_test
} // namespace
