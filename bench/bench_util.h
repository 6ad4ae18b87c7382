// Measurement helpers shared by the loading benchmarks: wall time, peak RSS
// from /proc, cold page cache, and the checkpoint files a benchmark reads.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace metaguard_bench {

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The median of samples (0 for none).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Median seconds of `runs` calls of `timed`; `after` (untimed) cleans up.
inline double median_seconds(int runs, const std::function<void()> &timed,
                             const std::function<void()> &after = [] {}) {
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    timed();
    times.push_back(seconds_since(start));
    after();
  }
  return median(std::move(times));
}

// A "VmHWM:"-style field of /proc/self/status, kB -> bytes.
inline std::int64_t proc_status_bytes(const char *field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind(field, 0) == 0)
      return std::stoll(line.substr(std::strlen(field))) * 1024;
  return 0;
}

// Starts a new peak-RSS (VmHWM) window.
inline void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

// median_seconds with `before` (untimed) ahead of every run, e.g. dropping
// the page cache, and the peak RSS over the runs.
struct Measured {
  double seconds = 0;
  std::int64_t peak_rss = 0;
};
inline Measured median_seconds_and_peak_rss(int runs, const std::function<void()> &timed,
                                            const std::function<void()> &before = [] {}) {
  before();
  reset_peak_rss();
  Measured m;
  m.seconds = median_seconds(runs, timed, before);
  m.peak_rss = proc_status_bytes("VmHWM:");
  return m;
}

// Empties the page cache of `files` for a cold run: all of it through
// /proc/sys/vm/drop_caches when that can be written (root), else
// POSIX_FADV_DONTNEED on each file. Returns which ran, for the report.
inline const char *drop_page_cache(const std::vector<std::filesystem::path> &files) {
  for (const auto &file : files) { // dirty pages are not dropped
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      ::fsync(fd);
      ::close(fd);
    }
  }
  {
    std::ofstream drop("/proc/sys/vm/drop_caches");
    if (drop << "1" << std::flush)
      return "drop_caches";
  }
  for (const auto &file : files) {
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
      ::close(fd);
    }
  }
  return "posix_fadvise(DONTNEED)";
}

// The .safetensors files of a checkpoint folder, sorted.
inline std::vector<std::filesystem::path> safetensors_files(const std::filesystem::path &dir) {
  std::vector<std::filesystem::path> files;
  for (const auto &item : std::filesystem::directory_iterator(dir))
    if (item.path().extension() == ".safetensors")
      files.push_back(item.path());
  std::sort(files.begin(), files.end());
  return files;
}

inline std::int64_t files_size(const std::vector<std::filesystem::path> &files) {
  std::int64_t total = 0;
  for (const auto &f : files)
    total += static_cast<std::int64_t>(std::filesystem::file_size(f));
  return total;
}

} // namespace metaguard_bench
