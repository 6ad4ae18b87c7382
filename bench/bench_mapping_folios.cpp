// What a private load of warm bytes costs, by how the page cache holds the
// file: a copy (pread) against a copy-on-write mapping populated in one call
// (MADV_POPULATE_READ, what SafetensorsFile's private loads do), when the
// cache holds the file in 4 KiB pages and when it holds it in 2 MiB folios
// (read in through a mapping with MADV_HUGEPAGE, as metaguard's loads read
// a cold file). Prints the median of 15 loads of 64 MiB per case and the
// ratios. Needs a filesystem with large folios (ext4, XFS, tmpfs on recent
// kernels) for the second state; the page cache is set with
// posix_fadvise(DONTNEED) on the scratch file only.
//   build/bench/metaguard_bench_mapping_folios [scratch file]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kSize = std::size_t{64} << 20;
constexpr std::size_t kPage = 4096;

double millis(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

template <class Load> double median_ms(Load &&load) {
  std::vector<double> times;
  for (int i = 0; i < 15; ++i) {
    const auto start = Clock::now();
    load();
    times.push_back(millis(start, Clock::now()));
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// The file's pages, dropped and read in again one 4 KiB page at a time from
// the end (no readahead to grow folios): the cache holds small pages.
void cache_in_small_pages(int fd) {
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  char page[kPage];
  for (std::size_t offset = kSize; offset > 0; offset -= kPage)
    if (::pread(fd, page, kPage, static_cast<off_t>(offset - kPage)) != static_cast<ssize_t>(kPage))
      std::perror("pread");
}

// Dropped and read in again through a mapping that asks for huge pages.
void cache_in_huge_folios(int fd) {
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  void *address = ::mmap(nullptr, kSize, PROT_READ, MAP_PRIVATE, fd, 0);
  ::madvise(address, kSize, MADV_HUGEPAGE);
  ::madvise(address, kSize, MADV_POPULATE_READ);
  ::munmap(address, kSize);
}

void copy_load(int fd, char *into) {
  if (::pread(fd, into, kSize, 0) != static_cast<ssize_t>(kSize))
    std::perror("pread");
}

void mapped_load(int fd) {
  void *address = ::mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  ::madvise(address, kSize, MADV_HUGEPAGE);
  if (::madvise(address, kSize, MADV_POPULATE_READ) != 0)
    std::perror("madvise(MADV_POPULATE_READ)");
  ::munmap(address, kSize);
}

} // namespace

int main(int argc, char **argv) {
  const std::string path = argc > 1 ? argv[1] : "/tmp/metaguard-bench-mapping-folios";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    std::perror(path.c_str());
    return 1;
  }
  {
    const std::vector<char> bytes(kSize, 1);
    if (::write(fd, bytes.data(), kSize) != static_cast<ssize_t>(kSize) || ::fsync(fd) != 0) {
      std::perror("write");
      return 1;
    }
  }
  std::vector<char> buffer(kSize);
  std::memset(buffer.data(), 0, kSize); // reused memory: the staging pool's case
  cache_in_small_pages(fd);
  const double copy_small = median_ms([&] { copy_load(fd, buffer.data()); });
  const double map_small = median_ms([&] { mapped_load(fd); });
  cache_in_huge_folios(fd);
  const double copy_huge = median_ms([&] { copy_load(fd, buffer.data()); });
  const double map_huge = median_ms([&] { mapped_load(fd); });
  ::close(fd);
  ::unlink(path.c_str());
  std::printf("64 MiB, page cache warm    copy (pread)   private mapping   mapping / copy\n");
  std::printf("cache in 4 KiB pages       %8.2f ms    %8.2f ms       %.2f\n", copy_small, map_small,
              map_small / copy_small);
  std::printf("cache in 2 MiB folios      %8.2f ms    %8.2f ms       %.3f\n", copy_huge, map_huge,
              map_huge / copy_huge);
  std::printf("RATIO mapping, 2 MiB folios / 4 KiB pages: %.3f\n", map_huge / map_small);
  return 0;
}
