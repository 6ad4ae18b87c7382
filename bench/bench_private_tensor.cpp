// Which is cheaper for handing an offloaded tensor out privately (memory no
// other tensor shares): a fresh copy-on-write mapping of its bytes per load
// (populated read-only, then made writable), or a copy into fresh memory?
// SafetensorsFile::private_tensor copies below the size where the two meet
// and maps from there on. Prints the median of 9 runs per size, page cache
// warm, each including one read pass over the result (the consumer's).
//   build/bench/metaguard_bench_private_tensor [scratch file]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double read_pass(const char *bytes, std::size_t size) {
  double sum = 0;
  for (std::size_t i = 0; i < size; i += 64)
    sum += bytes[i];
  return sum;
}

double micros(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::micro>(to - from).count();
}

} // namespace

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : "/tmp/metaguard-bench-private-tensor";
  const std::size_t total = std::size_t{64} << 20;
  {
    const std::vector<char> bytes(total, 1);
    const int fd = ::open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ::write(fd, bytes.data(), total) != static_cast<ssize_t>(total)) {
      std::perror(path);
      return 1;
    }
    ::close(fd);
  }
  const int fd = ::open(path, O_RDONLY);
  auto *shared = static_cast<char *>(::mmap(nullptr, total, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0));
  volatile double sink = 0;
  for (const std::size_t kib : {4, 64, 1024, 4096, 8192, 16384, 36864}) {
    const std::size_t size = kib << 10;
    std::vector<double> mapped, copied;
    for (int run = 0; run < 9; ++run) {
      const auto t0 = Clock::now();
      void *map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
      ::mprotect(map, size, PROT_READ | PROT_WRITE);
      sink = sink + read_pass(static_cast<const char *>(map), size);
      ::munmap(map, size);
      const auto t1 = Clock::now();
      auto *copy = static_cast<char *>(std::malloc(size));
      std::memcpy(copy, shared, size);
      sink = sink + read_pass(copy, size);
      std::free(copy);
      const auto t2 = Clock::now();
      mapped.push_back(micros(t0, t1));
      copied.push_back(micros(t1, t2));
    }
    std::sort(mapped.begin(), mapped.end());
    std::sort(copied.begin(), copied.end());
    std::printf("%6zu KiB: own mapping %10.1f us, copy %12.1f us, copy / mapping %8.2f\n", kib, mapped[4],
                copied[4], copied[4] / mapped[4]);
  }
  ::munmap(shared, total);
  ::close(fd);
  ::unlink(path);
  return 0;
}
