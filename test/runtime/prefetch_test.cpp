// Reading offloaded blocks ahead (OffloadOptions::prefetch_depth): outputs
// are bit-equal with and without it, for guarded blocks and transparent
// offload, offload folders and checkpoint shards; each parameter is read
// once per forward even when the forward catches up with the reader; the
// order is learned from the first forward, and the next forward's first
// block is read after the last one; a block no one read ahead is read by
// the forward and the reader together, and one the reader is reading is
// waited for; a read that fails in the
// background is raised, typed and naming the file, when the block is used;
// two threads running forwards of one model get the right outputs; a block
// is read in the order its bytes lie in storage; at most depth + 1 blocks
// are in memory, and between forwards the reader reads one block further.
#include <metaguard/metaguard.h>

#include "offload/offload_registry.h"
#include "expect_text.h"
#include "loading_test_util.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <unistd.h>

namespace {
namespace prefetch_test {

using metaguard_test::TempDir;

constexpr std::int64_t kWidth = 96;
constexpr int kBlocks = 6;

struct BlockImpl : torch::nn::Module {
  explicit BlockImpl(std::int64_t d)
      : up(register_module("up", torch::nn::Linear(d, 2 * d))),
        down(register_module("down", torch::nn::Linear(2 * d, d))) {}
  torch::Tensor forward(torch::Tensor x) {
    metaguard::OnloadGuard onload(*this);
    return x + down(torch::relu(up(x)));
  }
  torch::nn::Linear up, down;
};
TORCH_MODULE(Block);

// Blocks run in registration order, or in reverse when `reverse` is set
// (so that registration order is the wrong guess).
struct StackImpl : metaguard::PreTrainedModel {
  explicit StackImpl(const metaguard::Config &config) : blocks(register_module("blocks", torch::nn::ModuleList())) {
    for (int i = 0; i < config.at("blocks").get<int>(); ++i)
      blocks->push_back(Block(config.at("d").get<std::int64_t>()));
  }
  torch::Tensor forward(torch::Tensor x) {
    const auto n = static_cast<int>(blocks->size());
    for (int i = 0; i < n; ++i)
      x = (*blocks)[reverse ? n - 1 - i : i]->as<BlockImpl>()->forward(x);
    return x;
  }
  torch::nn::ModuleList blocks;
  bool reverse = false;
};
TORCH_MODULE(Stack);

metaguard::Config stack_config() { return {{"d", kWidth}, {"blocks", kBlocks}}; }

// Blocks 1.. on disk, block 0 in memory.
metaguard::DeviceMap disk_map() {
  metaguard::DeviceMap map{{"", "cpu"}};
  for (int i = 1; i < kBlocks; ++i)
    map.set("blocks." + std::to_string(i), metaguard::Placement::disk());
  return map;
}

metaguard::OffloadOptions depth(int n) {
  metaguard::OffloadOptions options;
  options.prefetch_depth = n;
  return options;
}

// Without reading the next forward's first blocks at the end of a forward,
// so that each forward's reads are its own and can be counted per pass.
metaguard::OffloadOptions within_forward(int n) {
  metaguard::OffloadOptions options = depth(n);
  options.prefetch_next_forward = false;
  return options;
}

// Counts the reads of each tensor and can slow them down, so the forward
// catches up with the reader.
class CountingWeights : public metaguard::WeightsMap {
public:
  CountingWeights(std::shared_ptr<const metaguard::WeightsMap> inner, std::chrono::milliseconds delay)
      : inner_(std::move(inner)), delay_(delay) {}
  bool contains(const std::string &name) const override { return inner_->contains(name); }
  std::vector<std::string> names() const override { return inner_->names(); }
  torch::Tensor load(const std::string &name) const override {
    std::this_thread::sleep_for(delay_);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++reads_[name];
      ++all_[name];
      threads_[name.substr(0, name.rfind('.'))].insert(std::this_thread::get_id());
    }
    return inner_->load(name);
  }
  // The threads that read the tensors of module `prefix` ("blocks.1.up").
  std::size_t threads_of(const std::string &prefix) const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::set<std::thread::id> threads;
    for (const auto &[module, ids] : threads_)
      if (module.rfind(prefix, 0) == 0)
        threads.insert(ids.begin(), ids.end());
    return threads.size();
  }
  std::map<std::string, int> take_reads() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::exchange(reads_, {});
  }
  // Reads of `name` since construction; waits up to `patience` for `want`.
  int reads_of(const std::string &name, int want, std::chrono::milliseconds patience) const {
    const auto until = std::chrono::steady_clock::now() + patience;
    for (;;) {
      int count = 0;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        count = all_[name];
      }
      if (count >= want || std::chrono::steady_clock::now() >= until)
        return count;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

private:
  std::shared_ptr<const metaguard::WeightsMap> inner_;
  std::chrono::milliseconds delay_;
  mutable std::mutex mutex_;
  mutable std::map<std::string, int> reads_, all_;
  mutable std::map<std::string, std::set<std::thread::id>> threads_;
};

class PrefetchTest : public testing::Test {
protected:
  void SetUp() override {
    torch::manual_seed(11);
    reference_ = metaguard::from_config<Stack>(stack_config());
    metaguard::save_pretrained(*reference_, checkpoint_.path());
    input_ = torch::randn({3, kWidth});
    torch::NoGradGuard no_grad;
    expected_ = reference_->forward(input_);
  }
  Stack dispatched(const metaguard::OffloadOptions &options) {
    auto model = metaguard::from_config<Stack>(stack_config());
    metaguard::load_weights(*model, checkpoint_.path());
    metaguard::dispatch_model(*model, disk_map(), folder_.path(), options);
    return model;
  }
  // Hooks that read through `weights` (a map around the folder that counts,
  // slows or watches the reads) in place of the model's own.
  static void read_through(Stack &model, const std::shared_ptr<const metaguard::WeightsMap> &weights,
                           const metaguard::OffloadOptions &options) {
    metaguard::attach_offload_hooks(*model, metaguard::resolve_device_map(*model, disk_map()), weights, options);
  }
  torch::Tensor run(Stack &model) {
    torch::NoGradGuard no_grad;
    return model->forward(input_);
  }
  std::size_t blocks_read(const torch::nn::Module &module) {
    return metaguard::detail::find_hook(module)->prefetcher->blocks_read();
  }

  TempDir checkpoint_, folder_;
  Stack reference_{nullptr};
  torch::Tensor input_, expected_;
};

TEST_F(PrefetchTest, GuardedBlocksFromAnOffloadFolderGiveTheSameBits) {
  for (int n : {0, 1, 2, kBlocks + 3}) {
    Stack model = dispatched(depth(n));
    for (int pass = 0; pass < 3; ++pass)
      EXPECT_TRUE(torch::equal(run(model), expected_)) << "depth " << n << " pass " << pass;
  }
}

TEST_F(PrefetchTest, TheReaderThreadReadsTheBlocksAhead) {
  Stack model = dispatched(depth(1));
  const auto &up = *(*model->blocks)[1]->as<BlockImpl>()->up;
  // A block the reader has not started when it is needed is read by the
  // forward instead, so on a busy machine one pass may prefetch nothing.
  for (int pass = 0; pass < 200 && blocks_read(up) == 0; ++pass)
    EXPECT_TRUE(torch::equal(run(model), expected_));
  EXPECT_GT(blocks_read(up), 0u);
  Stack off = dispatched(depth(0));
  EXPECT_EQ(metaguard::detail::find_hook(*(*off->blocks)[1]->as<BlockImpl>()->up)->prefetcher, nullptr);
}

// {"": "disk"} is one map entry, but each numbered block is read ahead.
TEST_F(PrefetchTest, AWholeModelOnDiskIsReadAheadBlockByBlock) {
  auto model = metaguard::from_config<Stack>(stack_config());
  metaguard::load_weights(*model, checkpoint_.path());
  metaguard::dispatch_model(*model, {{"", "disk"}}, folder_.path(), depth(1));
  const auto &up = *(*model->blocks)[0]->as<BlockImpl>()->up;
  for (int pass = 0; pass < 200 && blocks_read(up) == 0; ++pass)
    EXPECT_TRUE(torch::equal(run(model), expected_));
  EXPECT_GT(blocks_read(up), 0u);
}

TEST_F(PrefetchTest, CheckpointShardsThroughLoadOptionsGiveTheSameBits) {
  for (int n : {0, 1, 3}) {
    metaguard::LoadOptions options;
    options.device_map = disk_map();
    options.offload = depth(n);
    auto model = metaguard::from_pretrained<Stack>(checkpoint_.path(), options);
    for (int pass = 0; pass < 2; ++pass)
      EXPECT_TRUE(torch::equal(run(model), expected_)) << "depth " << n;
  }
}

TEST_F(PrefetchTest, TransparentOffloadGivesTheSameBits) {
  torch::manual_seed(3);
  torch::nn::Sequential reference(torch::nn::Linear(16, 32), torch::nn::ReLU(), torch::nn::Linear(32, 32),
                                  torch::nn::ReLU(), torch::nn::Linear(32, 32), torch::nn::Linear(32, 8));
  const torch::Tensor x = torch::randn({4, 16});
  torch::NoGradGuard no_grad;
  const torch::Tensor want = reference->forward(x);
  for (int n : {0, 1, 2}) {
    torch::nn::Sequential model(torch::nn::Linear(16, 32), torch::nn::ReLU(), torch::nn::Linear(32, 32),
                                torch::nn::ReLU(), torch::nn::Linear(32, 32), torch::nn::Linear(32, 8));
    torch::nn::Module &copy_into = *model;
    for (const auto &item : reference->named_parameters())
      copy_into.named_parameters()[item.key()].copy_(item.value());
    TempDir folder;
    metaguard::dispatch_model(*model, {{"", "cpu"}, {"0", "disk"}, {"2", "disk"}, {"4", "disk"}, {"5", "disk"}},
                              folder.path(), depth(n));
    for (int pass = 0; pass < 3; ++pass)
      EXPECT_TRUE(torch::equal(model->forward(x), want)) << "depth " << n << " pass " << pass;
  }
}

// Slow reads: the forward reaches blocks the reader has not finished, waits
// for them, and no parameter is read twice.
TEST_F(PrefetchTest, EachParameterIsReadOncePerForwardEvenWhenTheForwardCatchesUp) {
  Stack model = dispatched(depth(0));
  auto folder = std::make_shared<metaguard::OffloadFolder>(folder_.path());
  auto counting = std::make_shared<CountingWeights>(folder, std::chrono::milliseconds(5));
  read_through(model, counting, within_forward(2));
  for (int pass = 0; pass < 3; ++pass) {
    EXPECT_TRUE(torch::equal(run(model), expected_));
    const auto reads = counting->take_reads();
    EXPECT_EQ(reads.size(), static_cast<std::size_t>(4 * (kBlocks - 1)));
    for (const auto &[name, count] : reads)
      EXPECT_EQ(count, 1) << name << " in pass " << pass;
  }
}

// Blocks run in reverse registration order: after the first forward the
// reader follows that order, so nothing is read that is not used.
TEST_F(PrefetchTest, TheExecutionOrderIsLearnedFromTheFirstForward) {
  auto model = metaguard::from_config<Stack>(stack_config());
  model->reverse = true;
  metaguard::load_weights(*model, checkpoint_.path());
  metaguard::dispatch_model(*model, disk_map(), folder_.path(), depth(0));
  torch::NoGradGuard no_grad;
  reference_->reverse = true;
  const torch::Tensor want = reference_->forward(input_);
  auto counting = std::make_shared<CountingWeights>(
      std::make_shared<metaguard::OffloadFolder>(folder_.path()), std::chrono::milliseconds(0));
  metaguard::attach_offload_hooks(*model, metaguard::resolve_device_map(*model, disk_map()), counting,
                                 within_forward(1));
  for (int pass = 0; pass < 4; ++pass) {
    EXPECT_TRUE(torch::equal(model->forward(input_), want));
    const auto reads = counting->take_reads();
    if (pass < 2)
      continue; // the first forward guesses registration order
    EXPECT_EQ(reads.size(), static_cast<std::size_t>(4 * (kBlocks - 1)));
    for (const auto &[name, count] : reads)
      EXPECT_EQ(count, 1) << name << " in pass " << pass;
  }
}

// Once the order is known, the last block of a forward reads the first one
// of the next forward ahead, and that forward takes it instead of reading it
// again.
TEST_F(PrefetchTest, TheNextForwardsFirstBlockIsReadAfterTheLastOne) {
  Stack model = dispatched(depth(0));
  auto counting = std::make_shared<CountingWeights>(
      std::make_shared<metaguard::OffloadFolder>(folder_.path()), std::chrono::milliseconds(0));
  read_through(model, counting, depth(1));
  const std::string first = "blocks.1.up.weight";
  const auto patience = std::chrono::seconds(20);
  for (int pass = 0; pass < 2; ++pass)
    EXPECT_TRUE(torch::equal(run(model), expected_));
  // The order is learned when the second forward starts; its end reads the
  // third forward's first block.
  EXPECT_EQ(counting->reads_of(first, 3, patience), 3);
  EXPECT_TRUE(torch::equal(run(model), expected_));
  // The third forward used that read; its own end read the fourth's.
  EXPECT_EQ(counting->reads_of(first, 4, patience), 4);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(counting->reads_of(first, 5, std::chrono::milliseconds(0)), 4);
}

// Between forwards no offloaded block is in use, so once the last block's
// tensors are freed the window reaches one block further: with depth 1 the
// next forward's first two blocks are read ahead while block 0 (in memory)
// computes.
TEST_F(PrefetchTest, WhileNoOffloadedBlockIsInUseTheReaderReadsOneBlockFurther) {
  Stack model = dispatched(depth(0));
  auto counting = std::make_shared<CountingWeights>(
      std::make_shared<metaguard::OffloadFolder>(folder_.path()), std::chrono::milliseconds(0));
  read_through(model, counting, depth(1));
  const auto patience = std::chrono::seconds(20);
  for (int pass = 0; pass < 2; ++pass)
    EXPECT_TRUE(torch::equal(run(model), expected_));
  // Read by both forwards, and once more for the third.
  EXPECT_EQ(counting->reads_of("blocks.1.up.weight", 3, patience), 3);
  EXPECT_EQ(counting->reads_of("blocks.2.up.weight", 3, patience), 3);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(counting->reads_of("blocks.3.up.weight", 3, std::chrono::milliseconds(0)), 2);
  EXPECT_TRUE(torch::equal(run(model), expected_));
  EXPECT_EQ(counting->reads_of("blocks.2.up.weight", 4, patience), 4);
}

// Tracks which blocks' read tensors are alive (held by the prefetcher or by
// the forward) and the most blocks alive at once.
class LiveBlocks : public metaguard::WeightsMap {
public:
  explicit LiveBlocks(std::shared_ptr<const metaguard::WeightsMap> inner) : inner_(std::move(inner)) {}
  bool contains(const std::string &name) const override { return inner_->contains(name); }
  std::vector<std::string> names() const override { return inner_->names(); }
  torch::Tensor load(const std::string &name) const override {
    torch::Tensor value = inner_->load(name);
    const std::string block = name.substr(0, name.find('.', name.find('.') + 1)); // "blocks.3"
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++alive_[block];
      peak_ = std::max(peak_, alive_.size());
    }
    void *data = value.data_ptr();
    const auto sizes = value.sizes().vec();
    const auto options = value.options();
    return torch::from_blob(
        data, sizes,
        [this, held = std::move(value), block](void *) mutable {
          held = torch::Tensor();
          std::lock_guard<std::mutex> lock(mutex_);
          if (--alive_[block] == 0)
            alive_.erase(block);
        },
        options);
  }
  std::size_t peak() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return peak_;
  }

private:
  std::shared_ptr<const metaguard::WeightsMap> inner_;
  mutable std::mutex mutex_;
  mutable std::map<std::string, int> alive_;
  mutable std::size_t peak_ = 0;
};

// The block in use and `depth` ahead, never more, forward after forward.
TEST_F(PrefetchTest, AtMostDepthPlusOneBlocksAreInMemory) {
  for (int n : {1, 2}) {
    Stack model = dispatched(depth(0));
    auto live = std::make_shared<LiveBlocks>(std::make_shared<metaguard::OffloadFolder>(folder_.path()));
    read_through(model, live, depth(n));
    for (int pass = 0; pass < 6; ++pass)
      EXPECT_TRUE(torch::equal(run(model), expected_));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_LE(live->peak(), static_cast<std::size_t>(n + 1)) << "depth " << n;
    EXPECT_GE(live->peak(), 2u) << "depth " << n; // something was read ahead
  }
}

// Truncated after dispatch: the reader's failure surfaces when the block is
// used, as the same typed error naming the file; the blocks before it run.
TEST_F(PrefetchTest, AReadErrorInTheBackgroundIsRaisedWhenTheBlockIsUsed) {
  Stack model = dispatched(depth(2));
  const auto file = folder_ / "blocks.3.up.weight.dat";
  ASSERT_EQ(::truncate(file.c_str(), 100), 0);
  torch::NoGradGuard no_grad;
  torch::Tensor h = input_;
  for (int i = 0; i < 3; ++i)
    h = (*model->blocks)[i]->as<BlockImpl>()->forward(h); // blocks 1 and 2 are read with 3 and 4 ahead
  try {
    (*model->blocks)[3]->as<BlockImpl>()->forward(h);
    FAIL() << "block 3 ran on a truncated file";
  } catch (const metaguard::OffloadError &e) {
    EXPECT_CONTAINS(e.what(), file.string());
  }
  // Still an error at the next use (read again, never a stale success).
  EXPECT_THROW((*model->blocks)[3]->as<BlockImpl>()->forward(h), metaguard::OffloadError);
}

TEST_F(PrefetchTest, AShardTruncatedAfterLoadingIsAFormatErrorNamingIt) {
  metaguard::SaveOptions save;
  save.max_shard_size = "100KB"; // about one block per shard
  TempDir sharded;
  metaguard::save_pretrained(*reference_, sharded.path(), save);
  metaguard::LoadOptions options;
  options.device_map = disk_map();
  options.offload = depth(2);
  auto model = metaguard::from_pretrained<Stack>(sharded.path(), options);
  const auto index = nlohmann::json::parse(metaguard_test::read_bytes(sharded / "model.safetensors.index.json"));
  const auto shard = sharded / index["weight_map"]["blocks.4.up.weight"].get<std::string>();
  ASSERT_EQ(::truncate(shard.c_str(), 1000), 0);
  try {
    run(model);
    FAIL() << "the forward ran on a truncated shard";
  } catch (const metaguard::FormatError &e) {
    EXPECT_CONTAINS(e.what(), shard.string());
  }
}

// One block on disk: no one reads it ahead, so its first parameter's use
// reads the whole block, and the reader thread, idle, reads beside the
// forward; each parameter is still read once.
TEST_F(PrefetchTest, ABlockNoOneReadAheadIsReadByTheForwardAndTheReaderTogether) {
  const metaguard::DeviceMap one_on_disk{{"", "cpu"}, {"blocks.1", metaguard::Placement::disk()}};
  auto model = metaguard::from_config<Stack>(stack_config());
  metaguard::load_weights(*model, checkpoint_.path());
  metaguard::dispatch_model(*model, one_on_disk, folder_.path(), depth(0));
  auto counting = std::make_shared<CountingWeights>(
      std::make_shared<metaguard::OffloadFolder>(folder_.path()), std::chrono::milliseconds(20));
  metaguard::attach_offload_hooks(*model, metaguard::resolve_device_map(*model, one_on_disk), counting,
                                 within_forward(1));
  for (int pass = 0; pass < 2; ++pass) {
    EXPECT_TRUE(torch::equal(run(model), expected_));
    const auto reads = counting->take_reads();
    EXPECT_EQ(reads.size(), 4u);
    for (const auto &[name, count] : reads)
      EXPECT_EQ(count, 1) << name << " in pass " << pass;
  }
  EXPECT_EQ(counting->threads_of("blocks.1."), 2u);
}

// Reads slower than the compute: the forward catches up with the reader at
// every block, and waits for the block the reader is reading instead of
// reading beside it (two threads over one block read slower with the page
// cache cold): only the first block, which no one read ahead, is read by the
// forward.
TEST_F(PrefetchTest, AForwardThatCatchesUpWithTheReaderWaitsForTheBlockItReads) {
  Stack model = dispatched(depth(0));
  auto counting = std::make_shared<CountingWeights>(
      std::make_shared<metaguard::OffloadFolder>(folder_.path()), std::chrono::milliseconds(50));
  read_through(model, counting, within_forward(1));
  EXPECT_TRUE(torch::equal(run(model), expected_));
  const auto &prefetcher = *metaguard::detail::find_hook(*(*model->blocks)[1]->as<BlockImpl>()->up)->prefetcher;
  EXPECT_GE(prefetcher.tensors_read_by_users(), 1u); // the first block's, the reader joining it
  EXPECT_LE(prefetcher.tensors_read_by_users(), 4u); // and none of the blocks read ahead
  EXPECT_GT(prefetcher.blocks_read(), 0u);
  for (const auto &[name, count] : counting->take_reads())
    EXPECT_EQ(count, 1) << name;
}

TEST_F(PrefetchTest, TwoThreadsRunningForwardsGetTheRightOutputs) {
  Stack model = dispatched(depth(2));
  std::atomic<int> wrong{0};
  auto work = [&] {
    for (int i = 0; i < 20; ++i)
      if (!torch::equal(run(model), expected_))
        ++wrong;
  };
  std::thread a(work), b(work);
  a.join();
  b.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST_F(PrefetchTest, AModelDestroyedWhileReadingAheadStopsItsReader) {
  for (int i = 0; i < 5; ++i) {
    Stack model = dispatched(depth(kBlocks));
    torch::NoGradGuard no_grad;
    (*model->blocks)[1]->as<BlockImpl>()->forward(input_); // queues every later block, then dies
  }
}

// Stands in for a checkpoint whose tensors lie in storage in another order
// than their slots (a layer's parameters are registered q, k, v, o and
// stored by name): records the order of the reads, a read together as its
// names joined by '+'. With `together_fails`, every read together throws.
class PlacedWeights : public metaguard::WeightsMap {
public:
  explicit PlacedWeights(std::map<std::string, metaguard::StorageLocation> where, bool together_fails = false)
      : where_(std::move(where)), together_fails_(together_fails) {}
  bool contains(const std::string &name) const override { return where_.count(name) != 0; }
  std::vector<std::string> names() const override {
    std::vector<std::string> names;
    for (const auto &entry : where_)
      names.push_back(entry.first);
    return names;
  }
  metaguard::StorageLocation location(const std::string &name) const override {
    const auto it = where_.find(name);
    return it == where_.end() ? metaguard::StorageLocation{} : it->second;
  }
  torch::Tensor load(const std::string &name) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    reads_.push_back(name);
    return torch::full({1}, static_cast<double>(name.size()));
  }
  std::vector<torch::Tensor> load_together(const std::vector<std::string> &names) const override {
    if (together_fails_)
      throw metaguard::FormatError(metaguard::FormatError::Kind::io, "no mapping today");
    std::string joined;
    std::vector<torch::Tensor> values;
    for (const auto &name : names) {
      joined += (joined.empty() ? "" : "+") + name;
      values.push_back(torch::full({1}, static_cast<double>(name.size())));
    }
    std::lock_guard<std::mutex> lock(mutex_);
    reads_.push_back(joined);
    return values;
  }
  std::vector<std::string> reads(std::size_t want) const {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (reads_.size() >= want || std::chrono::steady_clock::now() >= until)
          return reads_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

private:
  std::map<std::string, metaguard::StorageLocation> where_;
  bool together_fails_;
  mutable std::mutex mutex_;
  mutable std::vector<std::string> reads_;
};

// The reader goes through a block front to back in each file (files in name
// order; tensors the map cannot place first, in slot order), not in slot
// order: that is one sequential pass over the disk when the cache is cold.
TEST(PrefetcherReadOrder, ABlockIsReadInTheOrderItsBytesLieInStorage) {
  auto weights = std::make_shared<PlacedWeights>(std::map<std::string, metaguard::StorageLocation>{
      {"first", {"a.safetensors", 0}},
      {"q", {"b.safetensors", 3000}},
      {"k", {"b.safetensors", 1000}},
      {"v", {"b.safetensors", 2000}},
      {"o", {"a.safetensors", 500}},
      {"unplaced", {}}});
  metaguard::detail::Prefetcher prefetcher(
      {{weights, {"first"}, {}}, {weights, {"unplaced", "q", "k", "v", "o"}, {}}}, within_forward(1));
  prefetcher.on_use(0); // block 0 in use: the reader alone reads block 1
  EXPECT_EQ(weights->reads(5), (std::vector<std::string>{"unplaced", "o", "k", "v", "q"}));
}

constexpr std::int64_t kMiB = std::int64_t{1} << 20;

// A layer as a checkpoint stores it: a norm, the MLP's large matrices, the
// attention's small ones, and a tensor of another shard.
std::map<std::string, metaguard::StorageLocation> layer_in_storage() {
  return {{"norm", {"b.safetensors", 0, 4096}},
          {"k", {"b.safetensors", 4096, 2 * kMiB}},
          {"up", {"b.safetensors", 4096 + 2 * kMiB, 16 * kMiB}},
          {"q", {"b.safetensors", 4096 + 18 * kMiB, 4 * kMiB}},
          {"v", {"b.safetensors", 4096 + 22 * kMiB, 2 * kMiB}},
          {"bias", {"c.safetensors", 0, 4096}}};
}

const std::vector<std::string> kLayerSlots = {"q", "k", "v", "up", "norm", "bias"};

// Small neighbours in one file are read in one go (one mapping instead of a
// copy each); a large tensor, a gap or another file starts a new read.
TEST(PrefetcherReadOrder, SmallNeighboursInOneFileAreReadTogether) {
  auto weights = std::make_shared<PlacedWeights>(layer_in_storage());
  metaguard::detail::Prefetcher prefetcher({{weights, {"first"}, {}}, {weights, kLayerSlots, {}}},
                                           within_forward(1));
  prefetcher.on_use(0);
  EXPECT_EQ(weights->reads(4), (std::vector<std::string>{"norm+k", "up", "q+v", "bias"}));
}

// Pages that are still mapped cannot be dropped from the page cache, so
// with drop_page_cache every tensor has memory of its own.
TEST(PrefetcherReadOrder, WithDropPageCacheEachTensorIsReadAlone) {
  auto weights = std::make_shared<PlacedWeights>(layer_in_storage());
  metaguard::OffloadOptions options = within_forward(1);
  options.drop_page_cache = true;
  metaguard::detail::Prefetcher prefetcher({{weights, {"first"}, {}}, {weights, kLayerSlots, {}}}, options);
  prefetcher.on_use(0);
  EXPECT_EQ(weights->reads(6), (std::vector<std::string>{"norm", "k", "up", "q", "v", "bias"}));
}

// A read together that fails is done again tensor by tensor: every
// parameter still gets its own value (or its own error).
TEST(PrefetcherReadOrder, AFailedReadTogetherIsReadAgainTensorByTensor) {
  auto weights = std::make_shared<PlacedWeights>(layer_in_storage(), /*together_fails=*/true);
  auto prefetcher = std::make_shared<metaguard::detail::Prefetcher>(
      std::vector<metaguard::detail::Prefetcher::Block>{{weights, {"first"}, {}}, {weights, kLayerSlots, {}}},
      within_forward(1));
  prefetcher->on_use(1);
  for (std::size_t slot = 0; slot < kLayerSlots.size(); ++slot) {
    const torch::Tensor value = prefetcher->take(1, slot);
    ASSERT_TRUE(value.defined()) << kLayerSlots[slot];
    EXPECT_EQ(value.item<double>(), static_cast<double>(kLayerSlots[slot].size())) << kLayerSlots[slot];
  }
  std::vector<std::string> reads = weights->reads(6); // by two threads: in any order
  std::sort(reads.begin(), reads.end());
  EXPECT_EQ(reads, (std::vector<std::string>{"bias", "k", "norm", "q", "up", "v"}));
}

} // namespace prefetch_test
} // namespace
