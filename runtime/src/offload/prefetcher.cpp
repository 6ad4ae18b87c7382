#include "offload/prefetcher.h"

#include "core/freed_callback.h"
#include "io/staging_pool.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <system_error>
#include <tuple>
#include <utility>

namespace metaguard::detail {
namespace {

// Tensors below this size are read together with their neighbours: copied
// one by one they cost a copy each, while large tensors get a mapping of
// their own anyway (the weights maps' private-mapping threshold).
constexpr std::int64_t kReadTogetherBelow = static_cast<std::int64_t>(StagingPool::kLargest);
// A run stays within this size: a block's small tensors, not a whole shard.
constexpr std::int64_t kLargestRun = std::int64_t{64} << 20;

bool small(const StorageLocation &where) {
  return !where.file.empty() && where.length > 0 && where.length < kReadTogetherBelow;
}

// Whether `next` continues the run that ended with `last` (of `bytes` so
// far): small, in the same file, right after it (a page of padding at most).
bool continues(const StorageLocation &last, const StorageLocation &next, std::int64_t bytes) {
  return small(last) && small(next) && next.file == last.file && next.offset >= last.offset + last.length &&
         next.offset <= last.offset + last.length + 4096 && bytes + next.length <= kLargestRun;
}

// A block's slots in the order its bytes lie in storage (slot order where
// the weights map cannot say), cut into runs of small neighbours. Slot
// order is registration order, and a checkpoint stores a layer's tensors by
// name: read that way, a block is read back and forth, and a disk with the
// page cache cold serves scattered requests more slowly than one sequential
// pass.
std::vector<Prefetcher::Block> in_storage_order(std::vector<Prefetcher::Block> blocks, bool together) {
  for (auto &block : blocks) {
    std::vector<StorageLocation> where;
    where.reserve(block.keys.size());
    for (const auto &key : block.keys)
      where.push_back(block.weights->location(key));
    std::vector<std::size_t> order(block.keys.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return std::tie(where[a].file, where[a].offset) < std::tie(where[b].file, where[b].offset);
    });
    std::int64_t bytes = 0;
    for (const std::size_t slot : order) {
      if (together && !block.runs.empty() && continues(where[block.runs.back().back()], where[slot], bytes)) {
        block.runs.back().push_back(slot);
        bytes += where[slot].length;
        continue;
      }
      block.runs.push_back({slot});
      bytes = where[slot].length;
    }
  }
  return blocks;
}

} // namespace

Prefetcher::Prefetcher(std::vector<Block> blocks, const OffloadOptions &options)
    : blocks_(in_storage_order(std::move(blocks), !options.drop_page_cache)),
      depth_(static_cast<std::size_t>(std::max(options.prefetch_depth, 1))), wrap_(options.prefetch_next_forward),
      order_(blocks_.size()), was_seen_(blocks_.size(), false), last_used_(blocks_.size()) {
  std::iota(order_.begin(), order_.end(), std::size_t{0});
  position_ = order_;
}

Prefetcher::~Prefetcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  if (reader_.joinable())
    reader_.join();
}

void Prefetcher::on_use(std::size_t block) {
  std::lock_guard<std::mutex> lock(mutex_);
  // Every parameter of a block calls this: only a change of block counts.
  if (block == last_used_ || block >= blocks_.size())
    return;
  last_used_ = block;
  learn(block);
  hold_in_use(block);
  schedule_after(block);
}

// The block in use, held for its read even when no one read it ahead: its
// first taker then reads all of it with the reader's help instead of each
// parameter being read alone, on one thread, when an operator needs it.
void Prefetcher::hold_in_use(std::size_t block) {
  std::shared_ptr<Held> &held = held_[block];
  if (!held)
    held = std::make_shared<Held>();
}

void Prefetcher::learn(std::size_t block) {
  if (learned_)
    return;
  if (!was_seen_[block]) {
    was_seen_[block] = true;
    seen_.push_back(block);
    return;
  }
  // A block used twice in one forward (shared weights) says nothing; the
  // first block used again means the first forward is over.
  if (block != seen_.front())
    return;
  order_ = seen_;
  for (std::size_t b = 0; b < blocks_.size(); ++b)
    if (!was_seen_[b])
      order_.push_back(b); // never used by that forward: registration order
  for (std::size_t i = 0; i < order_.size(); ++i)
    position_[order_[i]] = i;
  learned_ = true;
}

// The `depth` blocks that follow `block` in execution order; past the last
// one, the next forward's first blocks once the order is known (before that,
// the end of registration order says nothing about where a forward ends).
std::vector<std::size_t> Prefetcher::window_after(std::size_t block, std::size_t depth) const {
  std::vector<std::size_t> window;
  const std::size_t n = order_.size();
  for (std::size_t step = 1; step <= depth && step < n; ++step) {
    const std::size_t at = position_[block] + step;
    if (at >= n && !(wrap_ && learned_))
      break;
    window.push_back(order_[at % n]);
  }
  return window;
}

void Prefetcher::schedule_after(std::size_t block) {
  // The block in use counts against the memory bound until all it gave out
  // is freed; then the window takes its place.
  const bool done_with = held_.count(block) == 0 && alive_.count(block) == 0;
  const std::vector<std::size_t> ahead = window_after(block, depth_ + (done_with ? 1 : 0));
  const std::set<std::size_t> window(ahead.begin(), ahead.end());
  // Blocks held outside the window (behind the one in use, or queued by
  // another thread's forward) are dropped: memory stays within `depth`
  // blocks. A block being read is finished by the reader and then freed.
  for (auto it = held_.begin(); it != held_.end();) {
    if (it->first == block || window.count(it->first)) {
      ++it;
      continue;
    }
    queue_.erase(std::remove(queue_.begin(), queue_.end(), it->first), queue_.end());
    it = held_.erase(it);
  }
  for (const std::size_t next : ahead)
    if (held_.emplace(next, std::make_shared<Held>()).second)
      queue_.push_back(next);
  if (!queue_.empty())
    start_reader();
  changed_.notify_all();
}

void Prefetcher::start_reader() {
  if (reader_.joinable())
    return;
  try {
    reader_ = std::thread([this] { run(); });
  } catch (const std::system_error &) {
    // No thread to be had (a process limit): every block is read by the
    // forward that uses it.
    queue_.clear();
    for (auto it = held_.begin(); it != held_.end();)
      it = it->second->state == State::Queued ? held_.erase(it) : std::next(it);
  }
}

// A forward reads `block` now: the reader, once it is free, reads beside it
// before going on with the blocks ahead, so both cores work on the block the
// forward waits for.
void Prefetcher::call_reader(std::size_t block) {
  queue_.erase(std::remove(queue_.begin(), queue_.end(), block), queue_.end());
  queue_.push_front(block);
  start_reader();
  changed_.notify_all();
}

torch::Tensor Prefetcher::take(std::size_t block, std::size_t slot) {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto it = held_.find(block);
  if (it == held_.end())
    return {};
  const std::shared_ptr<Held> held = it->second;
  // A block no one has started is read here, with the reader joining; one
  // the reader is reading is waited for. Joining it too was measured slower
  // with the page cache cold (two streams over one block's stretch of disk,
  // docs/benchmarks.md) and no faster warm.
  if (held->state == State::Queued) {
    start(*held, block);
    call_reader(block);
    share_read(block, *held, lock);
  }
  changed_.wait(lock, [&] { return held->state == State::Done; });
  const auto again = held_.find(block);
  if (again == held_.end() || again->second != held || slot >= held->values.size())
    return {}; // dropped meanwhile by another thread's forward
  const std::exception_ptr error = std::exchange(held->errors[slot], nullptr);
  torch::Tensor value = std::move(held->values[slot]);
  held->values[slot] = torch::Tensor();
  if ((value.defined() || error) && --held->left == 0)
    held_.erase(again);
  if (error)
    std::rethrow_exception(error);
  return counted(block, std::move(value));
}

// `value`, telling this prefetcher when it is freed (a tensor that outlives
// the prefetcher tells no one).
torch::Tensor Prefetcher::counted(std::size_t block, torch::Tensor value) {
  std::weak_ptr<Prefetcher> owner = weak_from_this();
  if (owner.expired() || !value.defined() || value.numel() == 0)
    return value;
  ++alive_[block];
  return calling_when_freed(std::move(value), [owner = std::move(owner), block] {
    if (const std::shared_ptr<Prefetcher> self = owner.lock())
      self->released(block);
  });
}

void Prefetcher::released(std::size_t block) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = alive_.find(block);
  if (it == alive_.end() || --it->second > 0)
    return;
  alive_.erase(it);
  if (block == last_used_ && held_.count(block) == 0)
    schedule_after(block);
}

std::size_t Prefetcher::blocks_read() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return blocks_read_;
}

std::size_t Prefetcher::tensors_read_by_users() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return tensors_read_by_users_;
}

void Prefetcher::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_)
      return;
    const std::size_t block = queue_.front();
    queue_.pop_front();
    const auto it = held_.find(block);
    if (it == held_.end())
      continue;
    const std::shared_ptr<Held> held = it->second;
    if (held->state == State::Queued) {
      start(*held, block);
      ++blocks_read_;
    }
    share_read(block, *held, lock); // or joins a forward reading a block no one read ahead
  }
}

void Prefetcher::start(Held &held, std::size_t block) {
  const std::size_t n = blocks_[block].keys.size();
  held.state = n == 0 ? State::Done : State::Reading;
  held.values.resize(n);
  held.errors.resize(n);
}

// Reads the runs of `block` no one has started, one at a time without the
// lock (takers wait for Done; droppers only forget `held`, and each run
// writes its own slots); whoever finishes the last one publishes the block.
void Prefetcher::share_read(std::size_t block, Held &held, std::unique_lock<std::mutex> &lock) {
  const Block &source = blocks_[block];
  const bool user = std::this_thread::get_id() != reader_.get_id();
  while (held.next < source.runs.size()) {
    const std::vector<std::size_t> &run = source.runs[held.next++];
    ++held.reading;
    lock.unlock();
    read_run(source, run, held);
    lock.lock();
    tensors_read_by_users_ += user ? run.size() : 0;
    if (--held.reading == 0 && held.next == source.runs.size()) {
      held.left = source.keys.size();
      held.state = State::Done;
      changed_.notify_all();
    }
  }
}

// Fills the slots of `run`, each with its value or the error its own load
// raised (to be raised when that parameter is used): a run read together
// that fails is read again one tensor at a time, so a bad tensor fails
// alone, with the error the synchronous load would raise.
void Prefetcher::read_run(const Block &source, const std::vector<std::size_t> &run, Held &into) {
  if (run.size() > 1) {
    std::vector<std::string> keys;
    for (const std::size_t slot : run)
      keys.push_back(source.keys[slot]);
    try {
      std::vector<torch::Tensor> values = source.weights->load_together(keys);
      if (values.size() == run.size()) {
        for (std::size_t i = 0; i < run.size(); ++i)
          into.values[run[i]] = std::move(values[i]);
        return;
      }
    } catch (...) {
    }
  }
  for (const std::size_t slot : run) {
    try {
      into.values[slot] = source.weights->load(source.keys[slot]);
    } catch (...) {
      into.errors[slot] = std::current_exception();
    }
  }
}

} // namespace metaguard::detail
