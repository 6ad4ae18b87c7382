// A checkpoint truncated (or rewritten in place) by another process while
// metaguard has it mapped: every read metaguard does itself gives a
// FormatError naming the file instead of killing the process with SIGBUS;
// SafetensorsOptions::copy_on_load makes loaded tensors independent of the
// file; a SIGBUS outside metaguard's reads still reaches the process as
// before (the handler hands it back).
#include <metaguard/metaguard.h>

#include "expect_text.h"
#include "io/mapped_read.h"
#include "loading_test_util.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <csignal>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {
namespace truncated_file_test {

using metaguard::FormatError;
using metaguard_test::TempDir;


struct BlockImpl : torch::nn::Module {
  explicit BlockImpl(int64_t d) : fc(register_module("fc", torch::nn::Linear(d, d))) {}
  torch::Tensor forward(torch::Tensor x) {
    metaguard::OnloadGuard onload(*this);
    return fc(x);
  }
  torch::nn::Linear fc;
};
TORCH_MODULE(Block);

struct TwoImpl : metaguard::PreTrainedModel {
  explicit TwoImpl(const metaguard::Config &config)
      : first(register_module("first", Block(config.at("d").get<int64_t>()))),
        second(register_module("second", Block(config.at("d").get<int64_t>()))) {}
  torch::Tensor forward(torch::Tensor x) { return second->forward(first->forward(x)); }
  Block first, second;
};
TORCH_MODULE(Two);

void truncate_to_half(const std::filesystem::path &file) {
  ASSERT_EQ(::truncate(file.c_str(), static_cast<off_t>(std::filesystem::file_size(file) / 2)), 0);
}

// d = 1536: 9 MiB weights, loaded through mappings of their own.
class TruncatedFileTest : public testing::Test {
protected:
  void SetUp() override {
    torch::manual_seed(5);
    metaguard::Config config = {{"d", 1536}};
    auto model = metaguard::from_config<Two>(config); // remembers its config
    metaguard::SaveOptions save;
    save.max_shard_size = "10MB"; // one shard per block
    metaguard::save_pretrained(*model, dir_.path(), save);
    const auto index = nlohmann::json::parse(metaguard_test::read_bytes(dir_ / "model.safetensors.index.json"));
    second_shard_ = dir_ / index["weight_map"]["second.fc.weight"].get<std::string>();
  }
  TempDir dir_;
  std::filesystem::path second_shard_;
};

TEST_F(TruncatedFileTest, AnOffloadedForwardAfterTruncationIsAFormatErrorNamingTheFile) {
  metaguard::LoadOptions options;
  options.device_map = {{"first", "cpu"}, {"second", "disk"}};
  auto model = metaguard::from_pretrained<Two>(dir_.path(), options);
  truncate_to_half(second_shard_);
  torch::NoGradGuard no_grad;
  try {
    model->forward(torch::ones({1, 1536}));
    FAIL() << "the forward ran on a truncated file";
  } catch (const FormatError &e) {
    EXPECT_CONTAINS(e.what(), second_shard_.string());
    EXPECT_CONTAINS(e.what(), "truncated or rewrote the file");
  }
  EXPECT_THROW(metaguard::load_offloaded_parameter(*model, "second.fc.weight"), FormatError);
}

TEST_F(TruncatedFileTest, ReadingATensorOfATruncatedFileIsAFormatError) {
  metaguard::SafetensorsFile file(second_shard_);
  truncate_to_half(second_shard_);
  for (const auto &read : std::vector<std::function<void()>>{
           [&] { file.tensor("second.fc.weight"); },
           [&] { file.private_tensor("second.fc.weight"); },
           [&] { file.private_tensors({"second.fc.weight", "second.fc.bias"}); },
           [&] { file.tensor("second.fc.weight", torch::kFloat64); }}) {
    try {
      read();
      FAIL() << "read a truncated file";
    } catch (const FormatError &e) {
      EXPECT_CONTAINS(e.what(), second_shard_.string());
      EXPECT_CONTAINS(e.what(), "tensor 'second.fc.weight'");
    }
  }
}

// The race the size check cannot close: the file shrinks after the check,
// between mapping and reading. metaguard's reads of mapped bytes go through
// the SIGBUS guard.
TEST(MappedReadTest, ASigbusInAGuardedReadIsAFormatErrorNamingTheFile) {
  TempDir dir;
  const auto file = dir / "data.bin";
  metaguard_test::write_bytes(file, std::string(64 * 1024, 'x'));
  const int fd = ::open(file.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  void *address = ::mmap(nullptr, 64 * 1024, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  ASSERT_NE(address, MAP_FAILED);
  ASSERT_EQ(::truncate(file.c_str(), 4096), 0);
  try {
    metaguard::detail::probe_mapped(file, "tensor 'w'", address, 64 * 1024);
    FAIL() << "no error";
  } catch (const FormatError &e) {
    EXPECT_CONTAINS(e.what(), file.string());
    EXPECT_CONTAINS(e.what(), "tensor 'w'");
  }
  // The guard is reusable, and bytes the file still has read fine.
  EXPECT_NO_THROW(metaguard::detail::probe_mapped(file, "tensor 'w'", address, 4096));
  EXPECT_THROW(metaguard::detail::probe_mapped(file, "tensor 'w'", address, 8192), FormatError);
  ::munmap(address, 64 * 1024);
}

TEST(MappedReadTest, ASigbusOutsideMetaguardsReadsStillReachesTheProcess) {
  TempDir dir;
  const auto file = dir / "data.bin";
  metaguard_test::write_bytes(file, std::string(64 * 1024, 'x'));
  metaguard::detail::install_sigbus_handler();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const int fd = ::open(file.c_str(), O_RDONLY);
    auto *bytes = static_cast<const volatile char *>(::mmap(nullptr, 64 * 1024, PROT_READ, MAP_PRIVATE, fd, 0));
    if (::truncate(file.c_str(), 0) != 0)
      ::_exit(2);
    const char c = bytes[32 * 1024]; // user code touching a lost page
    ::_exit(c == 'x' ? 3 : 4);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS) << "status " << status;
}

TEST_F(TruncatedFileTest, CopyOnLoadMakesLoadedWeightsIndependentOfTheFile) {
  metaguard::LoadOptions options;
  options.safetensors.copy_on_load = true;
  auto model = metaguard::from_pretrained<Two>(dir_.path(), options);
  const auto expected = metaguard::from_pretrained<Two>(dir_.path(), options)->second->fc->weight.clone();
  truncate_to_half(second_shard_);
  EXPECT_TRUE(torch::equal(model->second->fc->weight, expected)); // no SIGBUS: a copy
}

} // namespace truncated_file_test
} // namespace
