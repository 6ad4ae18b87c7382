// OffloadOptions::drop_page_cache: after a forward, the pages of the used
// offloaded tensors are no longer in the page cache (checked with mincore),
// with guards and without, for tensors read into buffers and for tensors
// large enough to be mapped; without the option they stay cached. Outputs do
// not change.
#include <metaguard/metaguard.h>

#include "loading_test_util.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fcntl.h>
#include <tuple>
#include <sys/mman.h>
#include <unistd.h>

namespace {
namespace page_cache_test {

namespace fs = std::filesystem;
using metaguard_test::TempDir;

// Writes the file's dirty pages (they cannot be dropped) to disk. Not
// sync(): on a machine busy writing elsewhere it can take minutes.
void flush(const fs::path &file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  ::fsync(fd);
  ::close(fd);
}

// Pages of `file` in the page cache.
std::size_t resident_pages(const fs::path &file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  const auto size = static_cast<std::size_t>(fs::file_size(file));
  void *map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in_core((size + page - 1) / page);
  ::mincore(map, size, in_core.data());
  ::munmap(map, size);
  std::size_t resident = 0;
  for (const unsigned char c : in_core)
    resident += c & 1;
  return resident;
}

std::size_t resident_pages(const std::vector<fs::path> &files) {
  std::size_t total = 0;
  for (const auto &f : files)
    total += resident_pages(f);
  return total;
}

// The middle layer's weight is width x width floats: 256 KiB is read into a
// staging buffer, 9 MiB (1536) gets a mapping of its own, whose pages the
// kernel keeps while it is mapped.
torch::nn::Sequential make_model(std::int64_t width) {
  torch::manual_seed(4);
  return torch::nn::Sequential(torch::nn::Linear(64, width), torch::nn::ReLU(), torch::nn::Linear(width, width),
                               torch::nn::ReLU(), torch::nn::Linear(width, 64));
}

// Parameters: guarded, and the middle layer's width.
class PageCacheTest : public testing::TestWithParam<std::tuple<bool, std::int64_t>> {
protected:
  // Dispatches layers 0, 2 and 4 to disk and runs one forward (with a guard
  // per layer when `guarded`); returns the files of the offloaded tensors.
  std::vector<fs::path> run(bool drop) {
    const auto [guarded, width] = GetParam();
    torch::nn::Sequential model = make_model(width);
    const torch::Tensor x = torch::randn({2, 64});
    torch::NoGradGuard no_grad;
    const torch::Tensor want = model->forward(x);
    metaguard::OffloadOptions options;
    options.drop_page_cache = drop;
    metaguard::dispatch_model(*model, {{"", "cpu"}, {"0", "disk"}, {"2", "disk"}, {"4", "disk"}}, folder_.path(),
                              options);
    std::vector<fs::path> files;
    for (const auto &name : metaguard::offloaded_parameter_names(*model)) {
      files.push_back(folder_ / (name + ".dat"));
      flush(files.back());
      // Read them into the cache: the forward must be what drops them.
      (void)metaguard_test::read_bytes(files.back());
    }
    if (guarded) {
      torch::Tensor h = x;
      for (std::size_t i = 0; i < model->size(); ++i) {
        const auto layer = model->ptr(i);
        metaguard::OnloadGuard onload(*layer);
        if (auto *linear = layer->as<torch::nn::LinearImpl>())
          h = linear->forward(h);
        else
          h = torch::relu(h);
      }
      EXPECT_TRUE(torch::equal(h, want));
    } else {
      EXPECT_TRUE(torch::equal(model->forward(x), want));
    }
    return files;
  }
  TempDir folder_;
};

// Whether this file system drops clean pages on POSIX_FADV_DONTNEED (tmpfs
// does not: its pages are the files).
bool dontneed_works(const fs::path &dir) {
  const fs::path file = dir / "probe";
  metaguard_test::write_bytes(file, std::string(1 << 16, 'x'));
  flush(file);
  (void)metaguard_test::read_bytes(file);
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
  const bool works = resident_pages(file) == 0;
  fs::remove(file);
  return works;
}

TEST_P(PageCacheTest, UsedTensorsLeaveThePageCache) {
  if (!dontneed_works(folder_.path()))
    GTEST_SKIP() << "this file system keeps pages on POSIX_FADV_DONTNEED";
  const auto files = run(/*drop=*/true);
  EXPECT_EQ(resident_pages(files), 0u);
}

TEST_P(PageCacheTest, WithoutTheOptionTheyStayCached) {
  const auto files = run(/*drop=*/false);
  EXPECT_GT(resident_pages(files), 0u);
}

INSTANTIATE_TEST_SUITE_P(GuardedAndTransparent, PageCacheTest,
                         testing::Combine(testing::Bool(), testing::Values(256, 1536)));

} // namespace page_cache_test
} // namespace
