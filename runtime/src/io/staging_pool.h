// Private to the library: reused memory for the bytes of small tensors.
//
// A tensor read from a file (a safetensors or pickle shard, an offload
// folder's .dat) needs memory of its own so that writes to it never reach a
// later load. Below the size where a copy-on-write mapping of the file is
// cheaper (8 MiB, see safetensors.cpp), the bytes are read with pread; giving
// each read a fresh anonymous mapping costs an mmap, a page fault per page
// and an munmap every time, which profiled as the main cost of loading
// offloaded blocks. The pool keeps the buffers of dead tensors (already
// faulted in) and hands them to the next reads, up to a bound on the bytes it
// keeps idle.
#pragma once

#include <torch/types.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <vector>

namespace metaguard::detail {

class StagingPool {
public:
  // Buffers come in power-of-two sizes from kSmallest up to kLargest; a
  // request above kLargest is refused (the caller maps instead).
  static constexpr std::size_t kSmallest = std::size_t{64} << 10;
  static constexpr std::size_t kLargest = std::size_t{8} << 20;

  // Keeps at most `max_idle_bytes` of returned buffers for reuse; buffers
  // returned beyond that are unmapped.
  explicit StagingPool(std::size_t max_idle_bytes);
  StagingPool(const StagingPool &) = delete;
  StagingPool &operator=(const StagingPool &) = delete;

  // The pool every reader of the library shares (64 MiB idle at most).
  static StagingPool &shared();

  // An uninitialised CPU tensor whose memory comes from the pool and goes
  // back to it when the last reference dies (the pool may be gone by then).
  // `bytes` must be at most kLargest.
  torch::Tensor empty(const std::vector<std::int64_t> &shape, torch::Dtype dtype);

  // An uninitialised CPU tensor of `shape` and `dtype` starting `offset`
  // bytes into a pooled, page-aligned buffer of `capacity` bytes (rounded up
  // to whole pages, not to a power of two: a reader of the same tensors
  // forward after forward asks for the same sizes again), for readers that
  // fill more than the tensor, as O_DIRECT's aligned ranges do. The buffer
  // starts at data_ptr() - offset. Undefined when the kernel refuses the
  // memory.
  torch::Tensor window(std::size_t capacity, std::size_t offset, const std::vector<std::int64_t> &shape,
                       torch::Dtype dtype);

  // Idle bytes kept now, and how many requests reused a kept buffer.
  std::size_t idle_bytes() const;
  std::size_t reuses() const;

  struct State;

private:
  std::shared_ptr<State> state_;
};

// The `shape`/`dtype` tensor stored at `offset` of the open file `fd`, read
// with pread into memory of its own: a pooled buffer when it fits one (and is
// at least StagingPool::kSmallest), else LibTorch's allocator. Throws
// FormatError naming `path` when the file is shorter than that.
torch::Tensor read_staged(int fd, const std::filesystem::path &path, const std::vector<std::int64_t> &shape,
                          torch::Dtype dtype, std::int64_t offset);

} // namespace metaguard::detail
