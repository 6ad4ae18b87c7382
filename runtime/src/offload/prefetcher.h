// Private to the library: reading the next offloaded blocks while the
// current one computes.
//
// A block is what one device-map entry places on "disk" (the parameters of
// every hook under it). When a block is used, the reader thread reads the
// next `depth` blocks in execution order into tensors of their own (the
// weights map's load: pooled buffers for small tensors, private mappings for
// large ones); the use of a prefetched parameter takes its tensor, so no
// block is read twice. A forward that needs a block no one has started (the
// block in use when nothing read it ahead, or one still queued) reads it
// itself, tensor by tensor, and the reader joins it when free, so two
// threads work on the block the forward waits for; a block the reader is
// already reading is waited for. A read that failed is rethrown when the
// parameter is used, as the synchronous load would have thrown it. Blocks
// outside the window are dropped, so at most `depth` blocks are held ahead
// of the one in use: `depth` + 1 blocks in memory. Once every tensor taken
// from the block in use is freed, that block no longer counts and the
// window reaches one block further, so the memory bound stays and the
// reader keeps working while the forward computes in-memory layers (in
// particular the ones before the first offloaded block, after the last one
// read the next forward's first). A block's tensors are read in the order
// their bytes lie in storage (the weights map's StorageLocation), and small
// tensors that lie next to each other in one file are read together (the
// weights map's load_together: one mapping instead of a copy each).
#pragma once

#include <metaguard/offload_options.h>
#include <metaguard/weights_map.h>

#include <torch/types.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace metaguard::detail {

class Prefetcher : public std::enable_shared_from_this<Prefetcher> {
public:
  // What one block reads: the weights-map keys of its parameters, in the
  // order of the slots given to them.
  struct Block {
    std::shared_ptr<const WeightsMap> weights;
    std::vector<std::string> keys;
    // Filled by the constructor: the slots in storage order, cut into runs
    // read in one go (a run of small neighbours, or one slot).
    std::vector<std::vector<std::size_t>> runs;
  };

  // `blocks` in registration order. From `options`: the depth (at least 1),
  // whether the blocks after the last one are the first ones again once the
  // order is learned (prefetch_next_forward), and whether small neighbours
  // may share memory (not when their pages are to be dropped one by one:
  // the kernel keeps pages that are still mapped).
  Prefetcher(std::vector<Block> blocks, const OffloadOptions &options);
  ~Prefetcher();
  Prefetcher(const Prefetcher &) = delete;
  Prefetcher &operator=(const Prefetcher &) = delete;

  // Block `block` is being used: learns the execution order from the first
  // forward and queues the blocks that follow it.
  void on_use(std::size_t block);
  // The value of parameter `slot` of `block` (the caller's from now on),
  // read with the rest of its block if no one had; an undefined tensor when
  // the block was dropped meanwhile: the caller reads it itself. Rethrows
  // the parameter's read error. When the prefetcher is owned by a
  // shared_ptr, freeing the value tells it the block's memory is back.
  torch::Tensor take(std::size_t block, std::size_t slot);

  // For tests and benchmarks: blocks whose read the reader thread started.
  std::size_t blocks_read() const;
  // For tests: tensors read by threads other than the reader (forwards
  // reading a block they need).
  std::size_t tensors_read_by_users() const;

private:
  enum class State { Queued, Reading, Done };
  struct Held {
    State state = State::Queued;
    std::vector<torch::Tensor> values;
    std::vector<std::exception_ptr> errors;
    std::size_t next = 0;    // the next run no one has started reading
    std::size_t reading = 0; // runs started and not finished
    std::size_t left = 0;    // values not yet taken
  };

  void learn(std::size_t block);
  void schedule_after(std::size_t block);
  std::vector<std::size_t> window_after(std::size_t block, std::size_t depth) const;
  torch::Tensor counted(std::size_t block, torch::Tensor value);
  void released(std::size_t block);
  void run();
  void hold_in_use(std::size_t block);
  void start(Held &held, std::size_t block);
  void share_read(std::size_t block, Held &held, std::unique_lock<std::mutex> &lock);
  static void read_run(const Block &source, const std::vector<std::size_t> &run, Held &into);
  void start_reader();
  void call_reader(std::size_t block);

  const std::vector<Block> blocks_;
  const std::size_t depth_;
  const bool wrap_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::size_t> order_;    // execution order (registration until learned)
  std::vector<std::size_t> position_; // block -> index in order_
  std::vector<std::size_t> seen_;     // first forward, in first-use order
  std::vector<bool> was_seen_;
  bool learned_ = false;
  std::size_t last_used_;
  std::map<std::size_t, std::shared_ptr<Held>> held_;
  std::map<std::size_t, std::size_t> alive_; // block -> its taken tensors not yet freed
  std::deque<std::size_t> queue_;
  std::size_t blocks_read_ = 0;
  std::size_t tensors_read_by_users_ = 0;
  bool stop_ = false;
  std::thread reader_;
};

} // namespace metaguard::detail
