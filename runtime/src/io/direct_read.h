// Private to the library: reading offloaded tensors with O_DIRECT
// (OffloadReadMode::direct), past the page cache.
//
// O_DIRECT needs the file offset, the length and the buffer aligned to the
// filesystem's direct-I/O alignment, and a tensor's bytes rarely are (a
// safetensors header has any length). So the covering aligned range is read.
// A large tensor gets memory covering that whole range and starts inside it
// (read in place, nothing copied); that memory is reused by later reads once
// the tensor dies, so a model read forward after forward does not fault in
// and zero fresh pages each time. A small tensor's range is read chunk by
// chunk into buffers of a bounded pool of aligned buffers and its own bytes
// copied from there. The pool holds at most kDirectPoolBuffers buffers of
// kDirectChunkBytes; a reader that finds every buffer in use waits for one
// (a buffer is held for one read and one copy only, never while waiting for
// anything else).
#pragma once

#include <metaguard/offload_options.h>

#include <torch/types.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

namespace metaguard::detail {

// The bounds of the shared pool: 4 buffers of 8 MiB, 32 MiB in all.
constexpr std::size_t kDirectChunkBytes = std::size_t{8} << 20;
constexpr std::size_t kDirectPoolBuffers = 4;
// The buffers' alignment, and the direct-I/O alignment assumed when the
// filesystem does not say: a page.
constexpr std::size_t kDirectDefaultAlignment = 4096;
// Tensors from this size whose first byte falls on an element boundary of
// their aligned range are read in place, into memory of their own that
// covers the range; smaller ones are copied out of the pool's buffers (an
// aligned range of their own would double their memory).
constexpr std::size_t kDirectInPlaceFrom = std::size_t{64} << 10;
// The most one read call of an in-place read asks for.
constexpr std::size_t kDirectReadCallBytes = std::size_t{64} << 20;
// The memory of dead in-place tensors kept for later reads: enough for the
// blocks a forward reads ahead of a mid-sized model's.
constexpr std::size_t kDirectIdleBytes = std::size_t{256} << 20;

class DirectBufferPool {
public:
  DirectBufferPool(std::size_t buffer_bytes, std::size_t max_buffers);
  ~DirectBufferPool();
  DirectBufferPool(const DirectBufferPool &) = delete;
  DirectBufferPool &operator=(const DirectBufferPool &) = delete;

  static DirectBufferPool &shared();

  // A buffer of buffer_bytes() aligned to kDirectDefaultAlignment (or more);
  // waits while max_buffers() are in use. Null when memory is refused.
  void *acquire();
  void release(void *buffer);

  std::size_t buffer_bytes() const { return buffer_bytes_; }
  std::size_t max_buffers() const { return max_buffers_; }
  // Buffers allocated now (in use or idle), and the most ever in use at once.
  std::size_t allocated() const;
  std::size_t peak_in_use() const;

private:
  const std::size_t buffer_bytes_;
  const std::size_t max_buffers_;
  mutable std::mutex mutex_;
  std::condition_variable freed_;
  std::vector<void *> idle_;
  std::size_t allocated_ = 0;
  std::size_t in_use_ = 0;
  std::size_t peak_in_use_ = 0;
};

// A tensor of `shape` and `dtype` whose bytes are `length` bytes at `offset`
// of `file`, read with O_DIRECT through `pool`. An undefined tensor when the
// filesystem refuses O_DIRECT (EINVAL at open or read): the caller reads it
// cached; a warning on stderr says so once per filesystem. A file that
// cannot be opened or is shorter than offset + length raises `Error` (the
// caller's type: OffloadError for offload folders, FormatError for
// checkpoints), naming the file and `what` (the tensor).
template <class Error>
torch::Tensor read_direct(const std::filesystem::path &file, std::int64_t offset, std::int64_t length,
                          const std::vector<std::int64_t> &shape, torch::Dtype dtype, const std::string &what,
                          DirectBufferPool &pool = DirectBufferPool::shared());

// The direct-I/O alignment of the open file `fd`: statx's dio offset
// alignment when the kernel reports it, else the filesystem's block size
// (fstatvfs) when it is a power of two from 512 to 64 KiB, else 4096.
std::size_t direct_alignment(int fd);

// Tensors read with O_DIRECT, and reads that fell back to the cached path,
// since the process started (for tests and benchmarks).
std::size_t direct_reads();
std::size_t direct_fallbacks();

// Test seam: called before every O_DIRECT open with the file; a non-zero
// return is taken as the open's errno (EINVAL: a filesystem without
// O_DIRECT). Null (the default) costs one load per read.
using DirectOpenHook = int (*)(const std::filesystem::path &file);
void set_direct_open_hook(DirectOpenHook hook);

// The bytes the page cache can keep for this process, whose model keeps
// `kept_in_memory` bytes of weights in memory: the smaller of MemAvailable
// (/proc/meminfo) less those, and the memory cgroup's limit (v1
// memory.limit_in_bytes or v2 memory.max, the smallest along the process's
// cgroup path) less the larger of the process's resident memory and its
// anonymous memory plus those. The maximum std::uint64_t when neither can
// be read (then automatic stays cached).
std::uint64_t page_cache_budget(std::uint64_t kept_in_memory = 0);
// The mode to read with: `requested`, overridden by METAGUARD_OFFLOAD_READ
// when set (an unknown value raises Error naming it), and `automatic`
// resolved against `offloaded_bytes` and `budget`. Never automatic.
OffloadReadMode resolve_read_mode(OffloadReadMode requested, std::uint64_t offloaded_bytes,
                                  std::uint64_t budget);
const char *read_mode_name(OffloadReadMode mode);

} // namespace metaguard::detail
