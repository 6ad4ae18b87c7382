#include "io/direct_read.h"

#include "io/posix_file.h"
#include "io/staging_pool.h"

#include <metaguard/errors.h>

#include <c10/util/accumulate.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

namespace metaguard::detail {
namespace fs = std::filesystem;

DirectBufferPool::DirectBufferPool(std::size_t buffer_bytes, std::size_t max_buffers)
    : buffer_bytes_(buffer_bytes), max_buffers_(std::max<std::size_t>(max_buffers, 1)) {}

DirectBufferPool::~DirectBufferPool() {
  for (void *buffer : idle_)
    std::free(buffer);
}

DirectBufferPool &DirectBufferPool::shared() {
  // Never destroyed: reader threads may still return buffers at exit.
  static auto *pool = new DirectBufferPool(kDirectChunkBytes, kDirectPoolBuffers);
  return *pool;
}

void *DirectBufferPool::acquire() {
  std::unique_lock<std::mutex> lock(mutex_);
  freed_.wait(lock, [&] { return !idle_.empty() || allocated_ < max_buffers_; });
  void *buffer = nullptr;
  if (!idle_.empty()) {
    buffer = idle_.back();
    idle_.pop_back();
  } else {
    if (::posix_memalign(&buffer, kDirectDefaultAlignment, buffer_bytes_) != 0)
      return nullptr;
    ++allocated_;
  }
  peak_in_use_ = std::max(peak_in_use_, ++in_use_);
  return buffer;
}

void DirectBufferPool::release(void *buffer) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    idle_.push_back(buffer);
    --in_use_;
  }
  freed_.notify_one();
}

std::size_t DirectBufferPool::allocated() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return allocated_;
}

std::size_t DirectBufferPool::peak_in_use() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peak_in_use_;
}

namespace {

std::atomic<std::size_t> g_direct_reads{0};
std::atomic<std::size_t> g_direct_fallbacks{0};
std::atomic<DirectOpenHook> g_open_hook{nullptr};

// Filesystems (by device) that refused O_DIRECT: later reads there go cached
// at once, and the warning is printed once for each.
std::mutex g_refused_mutex;
std::set<dev_t> g_refused;

bool known_refused(const fs::path &file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0)
    return false;
  std::lock_guard<std::mutex> lock(g_refused_mutex);
  return g_refused.count(st.st_dev) != 0;
}

torch::Tensor fall_back(const fs::path &file, const char *step, int error) {
  ++g_direct_fallbacks;
  struct stat st {};
  const dev_t device = ::stat(file.c_str(), &st) == 0 ? st.st_dev : 0;
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(g_refused_mutex);
    first = g_refused.insert(device).second;
  }
  if (first)
    std::fprintf(stderr,
                 "metaguard: warning: the filesystem of %s does not support O_DIRECT (%s: %s); offloaded "
                 "tensors on it are read through the page cache (OffloadReadMode::cached)\n",
                 file.c_str(), step, errno_text(error).c_str());
  return {};
}

// A buffer of the pool for one read and one copy.
class Borrowed {
public:
  explicit Borrowed(DirectBufferPool &pool) : pool_(pool), buffer_(pool.acquire()) {}
  ~Borrowed() {
    if (buffer_)
      pool_.release(buffer_);
  }
  Borrowed(const Borrowed &) = delete;
  Borrowed &operator=(const Borrowed &) = delete;
  char *get() const { return static_cast<char *>(buffer_); }

private:
  DirectBufferPool &pool_;
  void *buffer_;
};

torch::Tensor empty_for(const std::vector<std::int64_t> &shape, torch::Dtype dtype, std::size_t bytes) {
  if (bytes >= StagingPool::kSmallest && bytes <= StagingPool::kLargest)
    return StagingPool::shared().empty(shape, dtype);
  return torch::empty(shape, torch::TensorOptions().dtype(dtype));
}

// Memory of in-place reads, kept when their tensors die for the next
// block's reads: no page faults, no zeroing, forward after forward.
StagingPool &in_place_pool() {
  // Never destroyed: tensors may return buffers during static destruction.
  static auto *pool = new StagingPool(kDirectIdleBytes);
  return *pool;
}

bool power_of_two(std::size_t n) { return n != 0 && (n & (n - 1)) == 0; }

std::optional<std::uint64_t> read_number_file(const fs::path &file) {
  std::ifstream in(file);
  std::string text;
  if (!(in >> text) || text == "max")
    return std::nullopt;
  try {
    return std::stoull(text);
  } catch (...) {
    return std::nullopt;
  }
}

// The value of `key` (in kB) in a "Key: value kB" file such as /proc/meminfo.
std::optional<std::uint64_t> read_kib_field(const char *file, const std::string &key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line))
    if (line.compare(0, key.size() + 1, key + ":") == 0) {
      std::istringstream fields(line.substr(key.size() + 1));
      std::uint64_t kib = 0;
      if (fields >> kib)
        return kib * 1024;
    }
  return std::nullopt;
}

// The smallest memory limit along the process's cgroup path.
std::optional<std::uint64_t> cgroup_limit() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  std::optional<std::uint64_t> limit;
  // Limits of 2^62 and more are v1's "unlimited".
  constexpr std::uint64_t kUnlimited = std::uint64_t{1} << 62;
  const auto consider = [&](const fs::path &root, const std::string &path, const char *name) {
    fs::path dir = root / fs::path(path).relative_path();
    for (;;) {
      if (const auto value = read_number_file(dir / name); value && *value < kUnlimited)
        limit = std::min(limit.value_or(*value), *value);
      if (dir == root || !dir.has_parent_path() || dir.parent_path() == dir)
        break;
      dir = dir.parent_path();
    }
  };
  while (std::getline(in, line)) {
    const auto first = line.find(':');
    const auto second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos)
      continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (line.compare(0, first, "0") == 0 && controllers.empty()) {
      consider("/sys/fs/cgroup", path, "memory.max");
      continue;
    }
    std::istringstream list(controllers);
    std::string controller;
    while (std::getline(list, controller, ','))
      if (controller == "memory")
        consider("/sys/fs/cgroup/memory", path, "memory.limit_in_bytes");
  }
  return limit;
}

} // namespace

std::size_t direct_alignment(int fd) {
#if defined(STATX_DIOALIGN)
  struct statx sx {};
  if (::statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN) != 0 &&
      power_of_two(sx.stx_dio_offset_align))
    return std::max<std::size_t>(sx.stx_dio_offset_align, 512);
#endif
  struct statvfs vfs {};
  if (::fstatvfs(fd, &vfs) == 0 && power_of_two(vfs.f_bsize) && vfs.f_bsize >= 512 && vfs.f_bsize <= (64u << 10))
    return vfs.f_bsize;
  return kDirectDefaultAlignment;
}

// The caller's error type; FormatError also says which kind of failure.
template <class Error> Error read_error(FormatError::Kind kind, const std::string &what);
template <> OffloadError read_error<OffloadError>(FormatError::Kind, const std::string &what) {
  return OffloadError(what);
}
template <> FormatError read_error<FormatError>(FormatError::Kind kind, const std::string &what) {
  return FormatError(kind, what);
}

template <class Error>
torch::Tensor read_direct(const fs::path &file, std::int64_t offset, std::int64_t length,
                          const std::vector<std::int64_t> &shape, torch::Dtype dtype, const std::string &what,
                          DirectBufferPool &pool) {
  const std::string where = what + " (" + file.string() + ")";
  if (known_refused(file)) {
    ++g_direct_fallbacks;
    return {};
  }
  int fd = -1;
  const DirectOpenHook hook = g_open_hook.load();
  if (const int injected = hook != nullptr ? hook(file) : 0; injected != 0)
    errno = injected;
  else
    fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
  if (fd < 0) {
    const int error = errno;
    if (error == EINVAL || error == EOPNOTSUPP)
      return fall_back(file, "open", error);
    throw read_error<Error>(FormatError::Kind::io, "cannot open the data of " + where + " for a direct read: " + errno_text(error) +
                "; check that the file exists and is readable (or read cached: OffloadReadMode::cached)");
  }
  const UniqueFd owned(fd);
  const std::size_t align = direct_alignment(fd);
  if (!power_of_two(align) || align > pool.buffer_bytes() || align > kDirectDefaultAlignment * 16)
    return fall_back(file, "alignment", EINVAL);

  const auto a = static_cast<std::int64_t>(align);
  const std::int64_t want_end = offset + length;
  const std::int64_t begin = offset & ~(a - 1);
  const std::int64_t end = (want_end + a - 1) & ~(a - 1);
  // In place when the tensor can start where its bytes land in its aligned
  // range: O_DIRECT into the tensor's own (reused) memory, nothing copied.
  const std::int64_t lead = offset - begin;
  torch::Tensor out;
  if (length >= static_cast<std::int64_t>(kDirectInPlaceFrom) &&
      lead % static_cast<std::int64_t>(c10::elementSize(dtype)) == 0)
    out = in_place_pool().window(static_cast<std::size_t>(end - begin), static_cast<std::size_t>(lead), shape, dtype);
  const bool in_place = out.defined();
  if (!in_place)
    out = empty_for(shape, dtype, static_cast<std::size_t>(length));
  char *dest = static_cast<char *>(out.data_ptr());
  const std::int64_t call_bytes = in_place ? static_cast<std::int64_t>(kDirectReadCallBytes)
                                           : static_cast<std::int64_t>(pool.buffer_bytes() & ~(align - 1));

  std::int64_t pos = begin;
  while (pos < want_end) {
    std::optional<Borrowed> buffer;
    char *target = nullptr;
    if (in_place) {
      target = dest + (pos - offset); // at or after the buffer's start: pos >= begin
    } else {
      buffer.emplace(pool);
      if (buffer->get() == nullptr)
        throw read_error<Error>(FormatError::Kind::io, "cannot read " + where + ": no memory for a direct-read buffer of " +
                    std::to_string(pool.buffer_bytes()) + " bytes");
      target = buffer->get();
    }
    const std::int64_t want = std::min(call_bytes, end - pos);
    ssize_t got = -1;
    do
      got = ::pread(fd, target, static_cast<std::size_t>(want), pos);
    while (got < 0 && errno == EINTR);
    if (got < 0) {
      const int error = errno;
      if (error == EINVAL)
        return fall_back(file, "read", error);
      throw read_error<Error>(FormatError::Kind::io, "cannot read " + where + ": " + errno_text(error));
    }
    const std::int64_t lo = std::max(pos, offset);
    const std::int64_t hi = std::min(pos + static_cast<std::int64_t>(got), want_end);
    if (!in_place && hi > lo)
      std::memcpy(dest + (lo - offset), target + (lo - pos), static_cast<std::size_t>(hi - lo));
    pos += got;
    if (got < want || got % a != 0)
      break; // the end of the file: finished only if the tensor was all there
  }
  if (pos < want_end) {
    struct stat st {};
    const std::int64_t size = ::fstat(fd, &st) == 0 ? static_cast<std::int64_t>(st.st_size) : pos;
    std::ostringstream msg;
    msg << "the data of " << where << " ends at byte " << size << ", but the tensor needs bytes " << offset
        << " to " << want_end << ": the file was truncated or replaced while in use; restore it (or write "
        << "the model's files again) and load again";
    throw read_error<Error>(FormatError::Kind::truncated, msg.str());
  }
  ++g_direct_reads;
  return out;
}

template torch::Tensor read_direct<OffloadError>(const fs::path &, std::int64_t, std::int64_t,
                                                 const std::vector<std::int64_t> &, torch::Dtype,
                                                 const std::string &, DirectBufferPool &);
template torch::Tensor read_direct<FormatError>(const fs::path &, std::int64_t, std::int64_t,
                                                const std::vector<std::int64_t> &, torch::Dtype,
                                                const std::string &, DirectBufferPool &);

std::size_t direct_reads() { return g_direct_reads.load(); }
std::size_t direct_fallbacks() { return g_direct_fallbacks.load(); }

void set_direct_open_hook(DirectOpenHook hook) {
  g_open_hook.store(hook);
  if (hook == nullptr) {
    // Tests end a simulated refusal: forget the filesystems it marked.
    std::lock_guard<std::mutex> lock(g_refused_mutex);
    g_refused.clear();
  }
}

std::uint64_t page_cache_budget(std::uint64_t kept_in_memory) {
  std::uint64_t budget = std::numeric_limits<std::uint64_t>::max();
  if (const auto available = read_kib_field("/proc/meminfo", "MemAvailable"))
    budget = *available > kept_in_memory ? *available - kept_in_memory : 0;
  if (const auto limit = cgroup_limit()) {
    // Weights mapped from a checkpoint are page-cache pages charged to the
    // cgroup, resident (VmRSS) or soon to be (kept_in_memory, on top of the
    // process's anonymous memory); they stay, so count the larger.
    const std::uint64_t resident = read_kib_field("/proc/self/status", "VmRSS").value_or(0);
    const std::uint64_t anonymous = read_kib_field("/proc/self/status", "RssAnon").value_or(0);
    const std::uint64_t own = std::max(resident, anonymous + kept_in_memory);
    budget = std::min(budget, *limit > own ? *limit - own : 0);
  }
  return budget;
}

const char *read_mode_name(OffloadReadMode mode) {
  switch (mode) {
  case OffloadReadMode::automatic:
    return "automatic";
  case OffloadReadMode::cached:
    return "cached";
  case OffloadReadMode::direct:
    return "direct";
  }
  return "?";
}

OffloadReadMode resolve_read_mode(OffloadReadMode requested, std::uint64_t offloaded_bytes, std::uint64_t budget) {
  if (const char *env = std::getenv("METAGUARD_OFFLOAD_READ"); env != nullptr && *env != '\0') {
    const std::string value = env;
    if (value == "automatic" || value == "auto")
      requested = OffloadReadMode::automatic;
    else if (value == "cached")
      requested = OffloadReadMode::cached;
    else if (value == "direct")
      requested = OffloadReadMode::direct;
    else
      throw metaguard::Error("METAGUARD_OFFLOAD_READ is \"" + value +
                             "\"; use automatic, cached or direct (or unset it for OffloadOptions::read_mode)");
  }
  if (requested != OffloadReadMode::automatic)
    return requested;
  return offloaded_bytes > budget ? OffloadReadMode::direct : OffloadReadMode::cached;
}

} // namespace metaguard::detail
