// Reading offloaded tensors with O_DIRECT (OffloadReadMode::direct): outputs
// are bit-equal with the direct and the cached path, for offload folders and
// safetensors checkpoints; tensors at any offset and of any length (not
// aligned to the block size) read right, across the pool's chunks; a file
// truncated while in use raises the typed error naming it; a filesystem
// that refuses O_DIRECT falls back to the cached path with one warning; the
// pool never holds more buffers than its bound; automatic picks direct only
// when the offloaded bytes exceed the page cache budget, and
// METAGUARD_OFFLOAD_READ overrides the option.
#include <metaguard/metaguard.h>

#include "io/direct_read.h"
#include "expect_text.h"
#include "loading_test_util.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cerrno>
#include <cstdlib>
#include <random>
#include <thread>
#include <unistd.h>

namespace {
namespace direct_read_test {

using metaguard::OffloadReadMode;
using metaguard_test::TempDir;
namespace detail = metaguard::detail;

constexpr std::int64_t kWidth = 96;
constexpr int kBlocks = 5;

struct BlockImpl : torch::nn::Module {
  explicit BlockImpl(std::int64_t d)
      : norm(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})))),
        up(register_module("up", torch::nn::Linear(d, 2 * d))),
        down(register_module("down", torch::nn::Linear(2 * d, d))) {}
  torch::Tensor forward(torch::Tensor x) {
    metaguard::OnloadGuard onload(*this);
    return x + down(torch::relu(up(norm(x))));
  }
  torch::nn::LayerNorm norm;
  torch::nn::Linear up, down;
};
TORCH_MODULE(Block);

struct StackImpl : metaguard::PreTrainedModel {
  explicit StackImpl(const metaguard::Config &config) : blocks(register_module("blocks", torch::nn::ModuleList())) {
    for (int i = 0; i < config.at("blocks").get<int>(); ++i)
      blocks->push_back(Block(config.at("d").get<std::int64_t>()));
  }
  torch::Tensor forward(torch::Tensor x) {
    for (const auto &block : *blocks)
      x = block->as<BlockImpl>()->forward(x);
    return x;
  }
  torch::nn::ModuleList blocks;
};
TORCH_MODULE(Stack);

metaguard::Config stack_config() { return {{"d", kWidth}, {"blocks", kBlocks}}; }

metaguard::DeviceMap disk_map() {
  metaguard::DeviceMap map{{"", "cpu"}};
  for (int i = 1; i < kBlocks; ++i)
    map.set("blocks." + std::to_string(i), metaguard::Placement::disk());
  return map;
}

metaguard::OffloadOptions reading(OffloadReadMode mode, int depth = 1) {
  metaguard::OffloadOptions options;
  options.read_mode = mode;
  options.prefetch_depth = depth;
  return options;
}

int inject_einval(const std::filesystem::path &) { return EINVAL; }

// The environment must not choose for the tests (a developer may have set it).
class DirectReadTest : public testing::Test {
protected:
  void SetUp() override {
    ::unsetenv("METAGUARD_OFFLOAD_READ");
    torch::manual_seed(5);
    reference_ = metaguard::from_config<Stack>(stack_config());
    metaguard::save_pretrained(*reference_, checkpoint_.path());
    input_ = torch::randn({3, kWidth});
    torch::NoGradGuard no_grad;
    expected_ = reference_->forward(input_);
  }
  void TearDown() override {
    detail::set_direct_open_hook(nullptr);
    ::unsetenv("METAGUARD_OFFLOAD_READ");
  }
  Stack dispatched(const metaguard::OffloadOptions &options) {
    auto model = metaguard::from_config<Stack>(stack_config());
    metaguard::load_weights(*model, checkpoint_.path());
    metaguard::dispatch_model(*model, disk_map(), folder_.path(), options);
    return model;
  }
  Stack loaded(const metaguard::OffloadOptions &options, const std::filesystem::path &from) {
    metaguard::LoadOptions load;
    load.device_map = disk_map();
    load.offload = options;
    return metaguard::from_pretrained<Stack>(from, load);
  }
  torch::Tensor run(Stack &model) {
    torch::NoGradGuard no_grad;
    return model->forward(input_);
  }

  TempDir checkpoint_, folder_;
  Stack reference_{nullptr};
  torch::Tensor input_, expected_;
};

TEST_F(DirectReadTest, OffloadFolderGivesTheSameBitsDirectAndCached) {
  for (int depth : {0, 1, 2}) {
    // No read of the next forward's blocks after the last pass: the count of
    // direct reads must stand still once the direct model is gone.
    auto options = reading(OffloadReadMode::direct, depth);
    options.prefetch_next_forward = false;
    const std::size_t before = detail::direct_reads();
    {
      Stack direct = dispatched(options);
      for (int pass = 0; pass < 2; ++pass)
        EXPECT_TRUE(torch::equal(run(direct), expected_)) << "direct, depth " << depth;
    }
    EXPECT_GT(detail::direct_reads(), before) << "the direct path was not taken";

    const std::size_t direct_count = detail::direct_reads();
    options.read_mode = OffloadReadMode::cached;
    Stack cached = dispatched(options);
    for (int pass = 0; pass < 2; ++pass)
      EXPECT_TRUE(torch::equal(run(cached), expected_)) << "cached, depth " << depth;
    EXPECT_EQ(detail::direct_reads(), direct_count) << "the cached path read with O_DIRECT";
  }
}

TEST_F(DirectReadTest, SafetensorsShardsGiveTheSameBitsDirectAndCached) {
  // Small shards: tensors start at every kind of offset inside them.
  metaguard::SaveOptions save;
  save.max_shard_size = "60KB";
  TempDir sharded;
  metaguard::save_pretrained(*reference_, sharded.path(), save);
  for (const auto &from : {checkpoint_.path(), sharded.path()}) {
    const std::size_t before = detail::direct_reads();
    Stack direct = loaded(reading(OffloadReadMode::direct), from);
    for (int pass = 0; pass < 2; ++pass)
      EXPECT_TRUE(torch::equal(run(direct), expected_)) << from;
    EXPECT_GT(detail::direct_reads(), before);
    Stack cached = loaded(reading(OffloadReadMode::cached), from);
    EXPECT_TRUE(torch::equal(run(cached), expected_)) << from;
    // And a parameter read on its own, outside a forward.
    EXPECT_TRUE(torch::equal(metaguard::load_offloaded_parameter(*direct, "blocks.2.up.weight"),
                             (*reference_->blocks)[2]->as<BlockImpl>()->up->weight));
  }
}

TEST_F(DirectReadTest, ConvertedDtypesGiveTheSameBitsDirectAndCached) {
  metaguard::LoadOptions load;
  load.device_map = disk_map();
  load.dtype = torch::kFloat64;
  load.offload = reading(OffloadReadMode::direct);
  auto direct = metaguard::from_pretrained<Stack>(checkpoint_.path(), load);
  load.offload = reading(OffloadReadMode::cached);
  auto cached = metaguard::from_pretrained<Stack>(checkpoint_.path(), load);
  torch::NoGradGuard no_grad;
  const auto x = input_.to(torch::kFloat64);
  EXPECT_TRUE(torch::equal(direct->forward(x), cached->forward(x)));
}

TEST_F(DirectReadTest, UnalignedOffsetsAndLengthsReadRightAcrossChunks) {
  TempDir dir;
  const auto file = dir / "bytes.bin";
  std::mt19937 random(7);
  std::string bytes(100000, '\0');
  for (auto &c : bytes)
    c = static_cast<char>(random());
  metaguard_test::write_bytes(file, bytes);
  // Chunks of two pages: most reads cross several.
  detail::DirectBufferPool pool(8192, 2);
  const std::vector<std::pair<std::int64_t, std::int64_t>> ranges = {
      {0, 1},     {1, 3},      {4095, 2},  {4096, 4096}, {4097, 8191}, {123, 40000},
      {0, 100000}, {99999, 1}, {8191, 8194}, {50001, 49999}, {1, 99999}, {4097, 70000}, {29999, 70001}};
  for (const auto &[offset, length] : ranges) {
    const torch::Tensor t = detail::read_direct<metaguard::OffloadError>(file, offset, length, {length}, torch::kUInt8,
                                                                          "tensor 'x'", pool);
    if (!t.defined())
      GTEST_SKIP() << "the test directory's filesystem refuses O_DIRECT";
    ASSERT_EQ(t.numel(), length);
    EXPECT_EQ(std::string(static_cast<const char *>(t.data_ptr()), static_cast<std::size_t>(length)),
              bytes.substr(static_cast<std::size_t>(offset), static_cast<std::size_t>(length)))
        << "offset " << offset << " length " << length;
  }
  EXPECT_LE(pool.allocated(), 2u);
}

TEST_F(DirectReadTest, LargeTensorsAreReadInPlaceIntoMemoryTheNextReadReuses) {
  TempDir dir;
  const auto file = dir / "floats.bin";
  constexpr std::int64_t kCount = 100000; // 400 KB of floats: above kDirectInPlaceFrom
  std::mt19937 random(11);
  std::string bytes(static_cast<std::size_t>(kCount * 4 + 8192), '\0');
  for (auto &c : bytes)
    c = static_cast<char>(random());
  metaguard_test::write_bytes(file, bytes);
  const auto expect_bytes = [&](const torch::Tensor &t, std::int64_t offset) {
    ASSERT_TRUE(t.defined()) << "the test directory's filesystem refuses O_DIRECT";
    EXPECT_EQ(std::string(static_cast<const char *>(t.data_ptr()), static_cast<std::size_t>(kCount * 4)),
              bytes.substr(static_cast<std::size_t>(offset), static_cast<std::size_t>(kCount * 4)))
        << "offset " << offset;
  };
  const auto read = [&](std::int64_t offset) {
    return detail::read_direct<metaguard::OffloadError>(file, offset, kCount * 4, {kCount}, torch::kFloat32,
                                                         "tensor 'w'");
  };
  if (!read(0).defined())
    GTEST_SKIP() << "the test directory's filesystem refuses O_DIRECT";
  // 4100: four bytes into its aligned range, a float boundary (in place).
  torch::Tensor first = read(4100);
  expect_bytes(first, 4100);
  const void *where = first.data_ptr();
  first.reset();
  torch::Tensor again = read(4100);
  expect_bytes(again, 4100);
  EXPECT_EQ(again.data_ptr(), where) << "the memory of a dead in-place tensor was not reused";
  // 4098: not on a float boundary of its range; copied out of the pool, right all the same.
  const torch::Tensor copied = read(4098);
  expect_bytes(copied, 4098);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(copied.data_ptr()) % alignof(float), 0u);
}

TEST_F(DirectReadTest, AFileShorterThanTheTensorIsATypedErrorNamingIt) {
  TempDir dir;
  const auto file = dir / "short.bin";
  metaguard_test::write_bytes(file, std::string(5000, 'x'));
  try {
    detail::read_direct<metaguard::FormatError>(file, 4000, 2000, {2000}, torch::kUInt8, "tensor 'w'");
    FAIL() << "a read past the end succeeded";
  } catch (const metaguard::FormatError &e) {
    EXPECT_CONTAINS(e.what(), file.string());
    EXPECT_CONTAINS(e.what(), "tensor 'w'");
    EXPECT_CONTAINS(e.what(), "truncated");
  }
  // The same past the end of a tensor read in place.
  EXPECT_THROW(detail::read_direct<metaguard::FormatError>(file, 100, 70000, {70000}, torch::kUInt8, "tensor 'w'"),
               metaguard::FormatError);
  EXPECT_THROW(detail::read_direct<metaguard::OffloadError>(dir / "missing.bin", 0, 10, {10}, torch::kUInt8, "t"),
               metaguard::OffloadError);
}

TEST_F(DirectReadTest, ADatTruncatedWhileInUseIsAnOffloadErrorNamingIt) {
  Stack model = dispatched(reading(OffloadReadMode::direct, 0));
  EXPECT_TRUE(torch::equal(run(model), expected_));
  const auto file = folder_ / "blocks.3.up.weight.dat";
  ASSERT_EQ(::truncate(file.c_str(), 1000), 0);
  try {
    run(model);
    FAIL() << "the forward ran on a truncated .dat";
  } catch (const metaguard::OffloadError &e) {
    EXPECT_CONTAINS(e.what(), file.string());
  }
}

TEST_F(DirectReadTest, AShardTruncatedWhileInUseIsAFormatErrorNamingIt) {
  metaguard::SaveOptions save;
  save.max_shard_size = "100KB";
  TempDir sharded;
  metaguard::save_pretrained(*reference_, sharded.path(), save);
  Stack model = loaded(reading(OffloadReadMode::direct, 2), sharded.path());
  EXPECT_TRUE(torch::equal(run(model), expected_));
  const auto index = nlohmann::json::parse(metaguard_test::read_bytes(sharded / "model.safetensors.index.json"));
  const auto shard = sharded / index["weight_map"]["blocks.3.up.weight"].get<std::string>();
  ASSERT_EQ(::truncate(shard.c_str(), 1000), 0);
  try {
    run(model);
    FAIL() << "the forward ran on a truncated shard";
  } catch (const metaguard::FormatError &e) {
    EXPECT_CONTAINS(e.what(), shard.string());
  }
}

TEST_F(DirectReadTest, AFilesystemWithoutODirectFallsBackToTheCachedPathWithOneWarning) {
  detail::set_direct_open_hook(inject_einval);
  const std::size_t reads = detail::direct_reads();
  const std::size_t fallbacks = detail::direct_fallbacks();
  testing::internal::CaptureStderr();
  Stack folder_model = dispatched(reading(OffloadReadMode::direct));
  Stack shard_model = loaded(reading(OffloadReadMode::direct), checkpoint_.path());
  for (int pass = 0; pass < 2; ++pass) {
    EXPECT_TRUE(torch::equal(run(folder_model), expected_));
    EXPECT_TRUE(torch::equal(run(shard_model), expected_));
  }
  const std::string warnings = testing::internal::GetCapturedStderr();
  EXPECT_EQ(detail::direct_reads(), reads);
  EXPECT_GT(detail::direct_fallbacks(), fallbacks);
  // Both files live on one filesystem: one warning.
  const std::string warning = "does not support O_DIRECT";
  const auto first = warnings.find(warning);
  ASSERT_NE(first, std::string::npos) << warnings;
  EXPECT_EQ(warnings.find(warning, first + 1), std::string::npos) << warnings;
  EXPECT_CONTAINS(warnings, "page cache");
}

TEST_F(DirectReadTest, TmpfsEitherReadsDirectOrFallsBack) {
  const std::filesystem::path shm = "/dev/shm";
  if (!std::filesystem::is_directory(shm))
    GTEST_SKIP() << "no /dev/shm";
  const auto file = shm / ("metaguard-direct-" + std::to_string(::getpid()));
  metaguard_test::write_bytes(file, std::string(10000, 'q'));
  testing::internal::CaptureStderr();
  const torch::Tensor t = detail::read_direct<metaguard::OffloadError>(file, 3, 9000, {9000}, torch::kUInt8, "t");
  const std::string warnings = testing::internal::GetCapturedStderr();
  std::filesystem::remove(file);
  if (t.defined()) // tmpfs has O_DIRECT since Linux 6.6
    EXPECT_EQ(std::string(static_cast<const char *>(t.data_ptr()), 9000), std::string(9000, 'q'));
  else
    EXPECT_CONTAINS(warnings, "does not support O_DIRECT");
}

TEST_F(DirectReadTest, ThePoolNeverHoldsMoreBuffersThanItsBound) {
  TempDir dir;
  const auto file = dir / "bytes.bin";
  metaguard_test::write_bytes(file, std::string(1 << 20, 'z'));
  detail::DirectBufferPool pool(16384, 3);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        const std::int64_t offset = 17 * t + i, length = 200000 + 1000 * t;
        const torch::Tensor v =
            detail::read_direct<metaguard::OffloadError>(file, offset, length, {length}, torch::kUInt8, "t", pool);
        if (v.defined() && !torch::all(v == static_cast<std::uint8_t>('z')).item<bool>())
          ++wrong;
      }
    });
  for (auto &thread : threads)
    thread.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_LE(pool.allocated(), 3u);
  EXPECT_LE(pool.peak_in_use(), 3u);
  // The shared pool, after the forwards of the other tests or this one.
  Stack model = dispatched(reading(OffloadReadMode::direct, 2));
  EXPECT_TRUE(torch::equal(run(model), expected_));
  EXPECT_LE(detail::DirectBufferPool::shared().allocated(), detail::kDirectPoolBuffers);
  EXPECT_LE(detail::DirectBufferPool::shared().peak_in_use(), detail::kDirectPoolBuffers);
}

TEST_F(DirectReadTest, AutomaticIsDirectOnlyBeyondThePageCacheBudget) {
  EXPECT_EQ(detail::resolve_read_mode(OffloadReadMode::automatic, 2000, 1000), OffloadReadMode::direct);
  EXPECT_EQ(detail::resolve_read_mode(OffloadReadMode::automatic, 1000, 1000), OffloadReadMode::cached);
  EXPECT_EQ(detail::resolve_read_mode(OffloadReadMode::cached, 2000, 1000), OffloadReadMode::cached);
  EXPECT_EQ(detail::resolve_read_mode(OffloadReadMode::direct, 10, 1000), OffloadReadMode::direct);
  EXPECT_GT(detail::page_cache_budget(), 0u);
  // Weights the model keeps in memory come out of the budget: more than the
  // machine has leaves none.
  EXPECT_EQ(detail::page_cache_budget(std::uint64_t{1} << 62), 0u);

  ::setenv("METAGUARD_OFFLOAD_READ", "direct", 1);
  EXPECT_EQ(detail::resolve_read_mode(OffloadReadMode::cached, 10, 1000), OffloadReadMode::direct);
  ::setenv("METAGUARD_OFFLOAD_READ", "cached", 1);
  EXPECT_EQ(detail::resolve_read_mode(OffloadReadMode::direct, 2000, 1000), OffloadReadMode::cached);
  ::setenv("METAGUARD_OFFLOAD_READ", "auto", 1);
  EXPECT_EQ(detail::resolve_read_mode(OffloadReadMode::cached, 2000, 1000), OffloadReadMode::direct);
  ::setenv("METAGUARD_OFFLOAD_READ", "sideways", 1);
  try {
    detail::resolve_read_mode(OffloadReadMode::automatic, 1, 1);
    FAIL() << "an unknown METAGUARD_OFFLOAD_READ was accepted";
  } catch (const metaguard::Error &e) {
    EXPECT_CONTAINS(e.what(), "METAGUARD_OFFLOAD_READ");
    EXPECT_CONTAINS(e.what(), "sideways");
  }

  // The environment reaches dispatch_model: a model this small is cached
  // under automatic, and direct when the variable says so.
  ::setenv("METAGUARD_OFFLOAD_READ", "direct", 1);
  auto options = reading(OffloadReadMode::automatic);
  options.prefetch_next_forward = false;
  const std::size_t before = detail::direct_reads();
  Stack model = dispatched(options);
  EXPECT_TRUE(torch::equal(run(model), expected_));
  EXPECT_GT(detail::direct_reads(), before);
  ::unsetenv("METAGUARD_OFFLOAD_READ");
  const std::size_t after = detail::direct_reads();
  Stack small = dispatched(options);
  EXPECT_TRUE(torch::equal(run(small), expected_));
  EXPECT_EQ(detail::direct_reads(), after);
}

} // namespace direct_read_test
} // namespace
