#include "io/staging_pool.h"

#include "io/mappings.h"
#include "io/posix_file.h"

#include <c10/util/accumulate.h>

#include <map>
#include <mutex>
#include <utility>
#include <sys/mman.h>
#include <unistd.h>

namespace metaguard::detail {

struct StagingPool::State {
  std::mutex mutex;
  std::size_t max_idle = 0;
  std::size_t idle = 0;
  std::size_t reuses = 0;
  std::multimap<std::size_t, void *> free; // capacity -> buffer
  ~State() {
    for (const auto &[capacity, buffer] : free)
      ::munmap(buffer, capacity);
  }
};

namespace {

// A window may take a kept buffer up to 1/kWindowSlack larger than it asks.
constexpr std::size_t kWindowSlack = 16;

std::size_t capacity_for(std::size_t bytes) {
  std::size_t capacity = StagingPool::kSmallest;
  while (capacity < bytes)
    capacity <<= 1;
  return capacity;
}

// A kept buffer of `capacity` to `most` bytes (the smallest such), else a
// fresh one of `capacity`; with the capacity it has, or null when refused.
std::pair<void *, std::size_t> take(StagingPool::State &state, std::size_t capacity, std::size_t most) {
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    const auto it = state.free.lower_bound(capacity);
    if (it != state.free.end() && it->first <= most) {
      const std::pair<void *, std::size_t> kept{it->second, it->first};
      state.free.erase(it);
      state.idle -= kept.second;
      ++state.reuses;
      return kept;
    }
  }
  return {map_anonymous(capacity, /*prefault=*/false), capacity};
}

void give_back(StagingPool::State &state, void *buffer, std::size_t capacity) {
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    if (state.idle + capacity <= state.max_idle) {
      state.free.emplace(capacity, buffer);
      state.idle += capacity;
      return;
    }
  }
  ::munmap(buffer, capacity);
}

} // namespace

StagingPool::StagingPool(std::size_t max_idle_bytes) : state_(std::make_shared<State>()) {
  state_->max_idle = max_idle_bytes;
}

StagingPool &StagingPool::shared() {
  // Never destroyed: tensors may return buffers during static destruction.
  static auto *pool = new StagingPool(std::size_t{64} << 20);
  return *pool;
}

namespace {

// A tensor `offset` bytes into `taken` (a buffer and its capacity) that gives
// the buffer back to `state` when it dies; undefined when nothing was taken.
// The deleter holds the state, not the pool: a buffer outliving a local pool
// is still returned (and freed with the state).
torch::Tensor adopt(const std::shared_ptr<StagingPool::State> &state, std::pair<void *, std::size_t> taken,
                    std::size_t offset, const std::vector<std::int64_t> &shape, torch::Dtype dtype) {
  const auto [buffer, capacity] = taken;
  if (buffer == nullptr)
    return {};
  return torch::from_blob(
      static_cast<char *>(buffer) + offset, shape,
      [state, buffer = buffer, capacity = capacity](void *) { give_back(*state, buffer, capacity); },
      torch::TensorOptions().dtype(dtype));
}

} // namespace

torch::Tensor StagingPool::empty(const std::vector<std::int64_t> &shape, torch::Dtype dtype) {
  const auto bytes = static_cast<std::size_t>(c10::multiply_integers(shape)) * c10::elementSize(dtype);
  const std::size_t capacity = capacity_for(bytes);
  if (bytes <= kLargest)
    if (torch::Tensor pooled = adopt(state_, take(*state_, capacity, capacity), 0, shape, dtype); pooled.defined())
      return pooled;
  return torch::empty(shape, torch::TensorOptions().dtype(dtype));
}

torch::Tensor StagingPool::window(std::size_t capacity, std::size_t offset, const std::vector<std::int64_t> &shape,
                                  torch::Dtype dtype) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  capacity = (capacity + page - 1) / page * page;
  // Ranges of one tensor start at different offsets of their first page in
  // different files: a kept buffer a little larger serves as well.
  return adopt(state_, take(*state_, capacity, capacity + capacity / kWindowSlack), offset, shape, dtype);
}

std::size_t StagingPool::idle_bytes() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->idle;
}

std::size_t StagingPool::reuses() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->reuses;
}

torch::Tensor read_staged(int fd, const std::filesystem::path &path, const std::vector<std::int64_t> &shape,
                          torch::Dtype dtype, std::int64_t offset) {
  const auto bytes = static_cast<std::size_t>(c10::multiply_integers(shape)) * c10::elementSize(dtype);
  torch::Tensor out = bytes >= StagingPool::kSmallest ? StagingPool::shared().empty(shape, dtype)
                                                      : torch::empty(shape, torch::TensorOptions().dtype(dtype));
  read_exact(fd, path, out.data_ptr(), bytes, offset);
  return out;
}

} // namespace metaguard::detail
