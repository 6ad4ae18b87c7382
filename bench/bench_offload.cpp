// Offload benchmark (a program, not a timed test). Generates a ~1 GiB
// decoder, measures in one process, page cache warm, median of several runs:
//  - forward of the model in memory;
//  - forward with every block on disk (OnloadGuard materialises each block
//    from the offload folder and returns it to meta);
//  - the floor for reading those bytes: read() of every .dat file into a
//    buffer allocated and touched once;
//  - per block: load throughput through the hook vs read() of the same bytes;
//  - hook bookkeeping: guards whose weights map hands out tensors already in
//    memory, so only registry lookups, checks and swaps are timed;
//  - transparent offload: every second block on disk, forward with the
//    blocks' OnloadGuard vs the same blocks without it (each operator loads
//    the parameters it uses);
//  - reading ahead: every block on disk, forward without prefetch
//    (prefetch_depth 0) and with it (1 and 2), against compute alone (the
//    in-memory forward) and read alone (read() of the same files into one
//    reused buffer); peak RSS of each. With --cold the page cache is dropped
//    before every run of these (drop_caches as root, else fadvise).
// Targets: offloaded forward <= 1.5 x (in-memory forward + raw read time);
// bookkeeping < 1% of the offloaded forward; without guards <= 1.5 x with.
//
// Usage: bench_offload [--cold] [work_dir] [hidden=1024] [blocks=28] [runs=5] [tokens=1]
#include <metaguard/metaguard.h>

#include "bench_util.h"

#include <torch/torch.h>

#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <vector>

namespace fs = std::filesystem;

namespace {

// Whether blocks open an OnloadGuard (false: a stock model's forward).
bool g_blocks_use_guard = true;

struct BlockImpl : torch::nn::Module {
  explicit BlockImpl(std::int64_t d)
      : norm(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})))),
        mix(register_module("mix", torch::nn::Linear(d, d))),
        up(register_module("up", torch::nn::Linear(d, 4 * d))),
        down(register_module("down", torch::nn::Linear(4 * d, d))) {}
  torch::Tensor forward(torch::Tensor x) {
    std::optional<metaguard::OnloadGuard> onload;
    if (g_blocks_use_guard)
      onload.emplace(*this);
    x = x + torch::tanh(mix(norm(x)));
    return x + down(torch::gelu(up(x)));
  }
  torch::nn::LayerNorm norm;
  torch::nn::Linear mix, up, down;
};
TORCH_MODULE(Block);

struct DecoderImpl : metaguard::PreTrainedModel {
  DecoderImpl(std::int64_t d, int n) : blocks(register_module("blocks", torch::nn::ModuleList())) {
    for (int i = 0; i < n; ++i)
      blocks->push_back(Block(d));
  }
  torch::Tensor forward(torch::Tensor x) {
    for (const auto &b : *blocks)
      x = b->as<BlockImpl>()->forward(x);
    return x;
  }
  torch::nn::ModuleList blocks;
};
TORCH_MODULE(Decoder);


// read() of whole files into `buffer` (allocated and touched by the caller).
void read_files(const std::vector<fs::path> &files, std::vector<char> &buffer) {
  for (const auto &f : files) {
    const int fd = ::open(f.c_str(), O_RDONLY);
    if (fd < 0)
      throw std::runtime_error("cannot open " + f.string());
    std::size_t done = 0;
    while (true) {
      const ssize_t n = ::read(fd, buffer.data() + done, buffer.size() - done);
      if (n <= 0)
        break;
      done += static_cast<std::size_t>(n);
    }
    ::close(fd);
  }
}

// Hands out tensors already in memory: guards then cost only bookkeeping.
struct InMemoryWeights : metaguard::WeightsMap {
  std::map<std::string, torch::Tensor> tensors;
  bool contains(const std::string &n) const override { return tensors.count(n) != 0; }
  torch::Tensor load(const std::string &n) const override { return tensors.at(n); }
  std::vector<std::string> names() const override {
    std::vector<std::string> out;
    for (const auto &[n, t] : tensors)
      out.push_back(n);
    return out;
  }
};

double mib(std::int64_t bytes) { return bytes / double(1 << 20); }

// Read alone: read() of every file into one buffer, reused.
void read_each(const std::vector<fs::path> &files, std::vector<char> &buffer) {
  for (const auto &f : files) {
    const int fd = ::open(f.c_str(), O_RDONLY);
    if (fd < 0)
      throw std::runtime_error("cannot open " + f.string());
    while (::read(fd, buffer.data(), buffer.size()) > 0) {
    }
    ::close(fd);
  }
}

// Every block on disk: forward without and with reading ahead, against
// compute alone and read alone. False when an output differs.
bool read_ahead(DecoderImpl &model, const torch::Tensor &x, const torch::Tensor &expected, const fs::path &folder,
                int runs, bool cold, const metaguard_bench::Measured &compute) {
  const metaguard::DeviceMap all_disk{{"", "disk"}};
  metaguard::dispatch_model(model, all_disk, folder);
  // The sections before freed ~2 GiB that glibc may keep in its heap; give
  // it back so peak RSS shows what these forwards hold.
  ::malloc_trim(0);
  std::printf("\nRSS before the read-ahead measurements (all parameters on disk): %.1f MiB\n",
              mib(metaguard_bench::proc_status_bytes("VmRSS:")));
  std::vector<fs::path> files;
  std::size_t largest = 0;
  for (const auto &name : metaguard::offloaded_parameter_names(model)) {
    files.push_back(folder / (name + ".dat"));
    largest = std::max<std::size_t>(largest, fs::file_size(files.back()));
  }
  const char *dropped = "none (warm: page cache kept)";
  const std::function<void()> before = [&] {
    if (cold)
      dropped = metaguard_bench::drop_page_cache(files);
  };
  std::vector<char> buffer(largest, 1);
  const auto read = metaguard_bench::median_seconds_and_peak_rss(runs, [&] { read_each(files, buffer); }, before);
  buffer = std::vector<char>();
  const auto resolved = metaguard::resolve_device_map(model, all_disk);
  std::map<int, metaguard_bench::Measured> forward;
  // Depths 0-2 read within each forward only; the last row also reads the
  // next forward's first block after the last one (the default), which a
  // run then finds held from the run before (read while the page cache was
  // being dropped: a little more overlap than a generation loop gets).
  constexpr int kNextForward = 3; // the row of depth 1 with the next forward's read
  for (const int row : {0, 1, 2, kNextForward}) {
    metaguard::OffloadOptions options;
    options.prefetch_depth = row == kNextForward ? 1 : row;
    options.prefetch_next_forward = row == kNextForward;
    metaguard::attach_offload_hooks(model, resolved, std::make_shared<metaguard::OffloadFolder>(folder), options);
    torch::Tensor got;
    // The order is learned when the second forward starts; the second one's
    // end reads ahead for the first timed one.
    model.forward(x);
    model.forward(x);
    forward[row] = metaguard_bench::median_seconds_and_peak_rss(runs, [&] { got = model.forward(x); }, before);
    if (!torch::equal(got, expected)) {
      std::printf("ERROR: the offloaded forward with prefetch row %d differs from the in-memory forward\n", row);
      return false;
    }
  }
  std::printf("reading ahead, every block on disk, %s; page cache dropped before each run: %s\n",
              cold ? "COLD" : "warm", dropped);
  std::printf("  compute alone (in memory)   %8.3f s  peak RSS %8.1f MiB\n", compute.seconds, mib(compute.peak_rss));
  std::printf("  read alone (read() files)   %8.3f s  peak RSS %8.1f MiB\n", read.seconds, mib(read.peak_rss));
  for (const int depth : {0, 1, 2})
    std::printf("  offloaded, prefetch depth %d %8.3f s  peak RSS %8.1f MiB\n", depth, forward[depth].seconds,
                mib(forward[depth].peak_rss));
  std::printf("  depth 1 + next forward's    %8.3f s  peak RSS %8.1f MiB\n", forward[kNextForward].seconds,
              mib(forward[kNextForward].peak_rss));
  const double floor = std::max(compute.seconds, read.seconds);
  std::printf("RATIO no prefetch / (compute + read)      = %.2f\n", forward[0].seconds / (compute.seconds + read.seconds));
  std::printf("RATIO prefetch 1 / no prefetch            = %.2f\n", forward[1].seconds / forward[0].seconds);
  std::printf("RATIO prefetch 2 / no prefetch            = %.2f\n", forward[2].seconds / forward[0].seconds);
  std::printf("RATIO prefetch 1 / max(compute, read)     = %.2f  (1.0: the shorter of the two fully hidden)\n",
              forward[1].seconds / floor);
  std::printf("RATIO next forward's / prefetch 1         = %.2f\n", forward[kNextForward].seconds / forward[1].seconds);
  return true;
}

} // namespace

int main(int raw_argc, char **raw_argv) {
  bool cold = false;
  std::vector<char *> positional{raw_argv[0]};
  for (int i = 1; i < raw_argc; ++i)
    if (std::string(raw_argv[i]) == "--cold")
      cold = true;
    else
      positional.push_back(raw_argv[i]);
  const int argc = static_cast<int>(positional.size());
  char **argv = positional.data();
  const fs::path work = argc > 1 ? fs::path(argv[1]) : fs::temp_directory_path() / "metaguard_bench_offload";
  const std::int64_t d = argc > 2 ? std::stoll(argv[2]) : 1024;
  const int n_blocks = argc > 3 ? std::stoi(argv[3]) : 28;
  const int runs = argc > 4 ? std::stoi(argv[4]) : 5;
  // One token per forward (generation): the forward is as light as it gets,
  // which makes the offload overhead as visible as it gets.
  const std::int64_t tokens = argc > 5 ? std::stoll(argv[5]) : 1;
  fs::remove_all(work);
  torch::NoGradGuard no_grad;

  torch::manual_seed(0);
  Decoder model(d, n_blocks);
  std::int64_t bytes = 0;
  for (const auto &p : model->parameters())
    bytes += p.nbytes();
  const auto x = torch::randn({1, tokens, d});
  std::printf("model: %d blocks, hidden %lld, %.2f GiB of parameters; input [1, %lld, %lld]; %d threads; %d runs, "
              "median\n",
              n_blocks, static_cast<long long>(d), bytes / double(1 << 30), static_cast<long long>(tokens),
              static_cast<long long>(d), at::get_num_threads(), runs);

  torch::Tensor expected;
  model->forward(x); // warm-up
  const auto compute = metaguard_bench::median_seconds_and_peak_rss(runs, [&] { expected = model->forward(x); });
  const double in_memory = compute.seconds;
  const torch::Tensor reference = expected;

  metaguard::dispatch_model(*model, {{"", "disk"}}, work);
  std::vector<fs::path> files;
  std::vector<std::vector<fs::path>> block_files(n_blocks);
  for (const auto &name : metaguard::offloaded_parameter_names(*model)) {
    files.push_back(work / (name + ".dat"));
    block_files[std::stoi(name.substr(7, name.find('.', 7) - 7))].push_back(files.back());
  }
  std::vector<char> buffer(static_cast<std::size_t>(bytes));
  std::fill(buffer.begin(), buffer.end(), 1); // touched: the floor excludes first-touch faults
  read_files(files, buffer);                   // page cache warm
  model->forward(x);

  torch::Tensor got;
  const double offloaded = metaguard_bench::median_seconds(runs, [&] { got = model->forward(x); });
  const double raw_read = metaguard_bench::median_seconds(runs, [&] { read_files(files, buffer); });
  if (!torch::equal(got, expected)) {
    std::printf("ERROR: offloaded forward differs from the in-memory forward\n");
    return 1;
  }

  // Per block: loading through the hook vs read() of the same bytes.
  auto &block0 = *model->blocks[0];
  std::int64_t block_bytes = 0;
  for (const auto &f : block_files[0])
    block_bytes += static_cast<std::int64_t>(fs::file_size(f));
  const double hook_load = metaguard_bench::median_seconds(runs * 4, [&] { metaguard::OnloadGuard onload(block0); });
  const double block_read = metaguard_bench::median_seconds(runs * 4, [&] { read_files(block_files[0], buffer); });

  // Bookkeeping: the same guards with the data already in memory.
  auto weights = std::make_shared<InMemoryWeights>();
  metaguard::OffloadFolder folder(work);
  for (const auto &name : folder.names())
    weights->tensors[name] = folder.load(name).clone();
  metaguard::attach_offload_hooks(*model, metaguard::DeviceMap{{"", "disk"}}, weights);
  const double bookkeeping = metaguard_bench::median_seconds(runs, [&] {
    for (const auto &b : *model->blocks)
      metaguard::OnloadGuard onload(*b);
  });

  const double gib = bytes / double(1 << 30);
  std::printf("in-memory forward           %8.3f s\n", in_memory);
  std::printf("offloaded forward           %8.3f s  (every block on disk)\n", offloaded);
  std::printf("raw read() of the %.2f GiB  %8.3f s  (%.2f GiB/s)\n", gib, raw_read, gib / raw_read);
  std::printf("per block (%.1f MiB): hook load %.2f ms (%.2f GiB/s), read() %.2f ms (%.2f GiB/s), ratio %.2f\n",
              block_bytes / double(1 << 20), hook_load * 1e3, block_bytes / double(1 << 30) / hook_load,
              block_read * 1e3, block_bytes / double(1 << 30) / block_read, hook_load / block_read);
  std::printf("hook bookkeeping per forward %8.5f s\n", bookkeeping);
  const double ratio = offloaded / (in_memory + raw_read);
  const double share = bookkeeping / offloaded;
  std::printf("RATIO offloaded / (in-memory + raw read) = %.2f  (target <= 1.5)  %s\n", ratio,
              ratio <= 1.5 ? "OK" : "MISSED");
  std::printf("RATIO bookkeeping / offloaded forward    = %.3f%% (target < 1%%)   %s\n", share * 100,
              share < 0.01 ? "OK" : "MISSED");

  // Transparent offload: half the blocks on disk, with and without guards.
  metaguard::DeviceMap half{{"", "cpu"}};
  for (int i = 1; i < n_blocks; i += 2)
    half.set("blocks." + std::to_string(i), "disk");
  metaguard::dispatch_model(*model, half, work / "half");
  ::sync(); // the folder just written: its writeback must not fall on one variant's runs
  // The two variants take turns, each run, so that the machine's drift and the
  // first runs' warm-up fall on both alike (measured one after the other, the
  // first variant came out slower in one run and faster in another).
  std::vector<double> with_guards, without_guards;
  for (int i = 0; i <= runs; ++i)
    for (const bool use_guard : {true, false}) {
      g_blocks_use_guard = use_guard;
      const auto start = std::chrono::steady_clock::now();
      (use_guard ? got : expected) = model->forward(x);
      if (i > 0) // the first turn of each is a warm-up
        (use_guard ? with_guards : without_guards).push_back(metaguard_bench::seconds_since(start));
    }
  g_blocks_use_guard = true;
  const double guarded = metaguard_bench::median(with_guards);
  const double unguarded = metaguard_bench::median(without_guards);
  if (!torch::equal(got, expected)) {
    std::printf("ERROR: the forward without guards differs from the one with guards\n");
    return 1;
  }
  std::printf("half the blocks on disk: with OnloadGuard %.3f s, without (self-loading) %.3f s\n", guarded,
              unguarded);
  const double transparent = unguarded / guarded;
  std::printf("RATIO without guards / with guards       = %.2f  (target <= 1.5)  %s\n", transparent,
              transparent <= 1.5 ? "OK" : "MISSED");
  buffer = std::vector<char>();
  weights.reset();
  if (!read_ahead(*model, x, reference, work / "prefetch", runs, cold, compute))
    return 1;
  fs::remove_all(work);
  return 0;
}
