// The staging pool: small tensors read from files get reused buffers of
// their own. A buffer returns to the pool only when its tensor dies, so two
// live tensors never share memory and a write never reaches a later read;
// idle memory is bounded; a file shorter than the tensor is a FormatError
// naming it (for offload folders and safetensors files alike).
#include <metaguard/metaguard.h>

#include "io/staging_pool.h"
#include "expect_text.h"
#include "loading_test_util.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fcntl.h>
#include <unistd.h>

namespace {
namespace staging_pool_test {

using metaguard::detail::StagingPool;
using metaguard_test::TempDir;

constexpr std::size_t kMiB = std::size_t{1} << 20;

TEST(StagingPoolTest, ABufferIsReusedOnlyAfterItsTensorDies) {
  StagingPool pool(16 * kMiB);
  void *first_address = nullptr;
  {
    torch::Tensor first = pool.empty({256, 1024}, torch::kFloat32); // 1 MiB
    first_address = first.data_ptr();
    torch::Tensor second = pool.empty({256, 1024}, torch::kFloat32);
    EXPECT_NE(second.data_ptr(), first_address); // both alive: distinct memory
    EXPECT_EQ(pool.reuses(), 0u);
  }
  EXPECT_EQ(pool.idle_bytes(), 2 * kMiB);
  torch::Tensor again = pool.empty({256, 1024}, torch::kFloat32);
  EXPECT_EQ(pool.reuses(), 1u);
  EXPECT_EQ(pool.idle_bytes(), kMiB);
}

TEST(StagingPoolTest, IdleMemoryStaysWithinTheBound) {
  StagingPool pool(3 * kMiB);
  {
    std::vector<torch::Tensor> live;
    for (int i = 0; i < 8; ++i)
      live.push_back(pool.empty({static_cast<std::int64_t>(kMiB)}, torch::kUInt8));
  }
  EXPECT_EQ(pool.idle_bytes(), 3 * kMiB); // the other five were unmapped
}

TEST(StagingPoolTest, ATensorMayOutliveItsPool) {
  torch::Tensor kept;
  {
    StagingPool pool(4 * kMiB);
    kept = pool.empty({static_cast<std::int64_t>(kMiB)}, torch::kUInt8);
  }
  kept.fill_(7);
  EXPECT_EQ(kept[0].item<std::uint8_t>(), 7);
  kept = torch::Tensor(); // returns the buffer to the pool's state, which frees it
}

TEST(StagingPoolTest, RequestsAboveTheLargestBufferUseTheAllocator) {
  StagingPool pool(64 * kMiB);
  { torch::Tensor big = pool.empty({static_cast<std::int64_t>(StagingPool::kLargest) + 1}, torch::kUInt8); }
  EXPECT_EQ(pool.idle_bytes(), 0u);
}

// Offload folder: many small tensors, read again and again; every read has
// the file's values even after the previous read was written to.
TEST(StagingPoolTest, OffloadFolderReadsAreFreshEveryTime) {
  TempDir dir;
  const torch::Tensor value = torch::arange(1 << 18, torch::kFloat32).reshape({512, 512}); // 1 MiB
  metaguard::offload_tensors(dir.path(), {{"w", value}});
  metaguard::OffloadFolder folder(dir.path());
  for (int i = 0; i < 4; ++i) {
    torch::Tensor loaded = folder.load("w");
    EXPECT_TRUE(torch::equal(loaded, value));
    loaded.fill_(-1); // dies with the write; the buffer is reused next round
  }
}

TEST(StagingPoolTest, ATruncatedDatIsAnErrorNamingTheFile) {
  TempDir dir;
  metaguard::offload_tensors(dir.path(), {{"w", torch::ones({512, 512})}});
  metaguard::OffloadFolder folder(dir.path());
  const auto file = dir / "w.dat";
  ASSERT_EQ(::truncate(file.c_str(), 1000), 0);
  try {
    folder.load("w");
    FAIL() << "a short .dat loaded";
  } catch (const metaguard::Error &e) {
    EXPECT_CONTAINS(e.what(), file.string());
  }
}

// read_staged itself: a file that ends before the tensor does.
TEST(StagingPoolTest, AShortReadIsAFormatErrorNamingTheFile) {
  TempDir dir;
  const auto file = dir / "short.bin";
  metaguard_test::write_bytes(file, std::string(100000, 'x'));
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  const std::string message = metaguard_test::format_error_of(
      [&] { metaguard::detail::read_staged(fd, file, {1 << 17}, torch::kUInt8, 0); });
  ::close(fd);
  EXPECT_CONTAINS(message, file.string());
  EXPECT_CONTAINS(message, "ended early");
}

TEST(StagingPoolTest, SafetensorsPrivateTensorsAreFreshEveryTime) {
  TempDir dir;
  const torch::Tensor value = torch::randn({512, 512});
  metaguard::save_safetensors(dir / "m.safetensors", {{"w", value}});
  metaguard::SafetensorsFile file(dir / "m.safetensors");
  for (int i = 0; i < 4; ++i) {
    torch::Tensor loaded = file.private_tensor("w");
    EXPECT_TRUE(torch::equal(loaded, value));
    loaded.fill_(0);
  }
}

} // namespace staging_pool_test
} // namespace
