// The C++ side of bench/run_side_by_side.sh (a program, not a timed test):
// metaguard on a checkpoint written by transformers' save_pretrained, with
// the Llama of test/interop/models/llama.h (transformers' LlamaForCausalLM,
// same names and math). One measurement per process; each prints one JSON
// line with its figures (seconds, peak RSS in bytes).
//
//   bench_side_by_side forward <checkpoint> <device_map.json|-> <ids> <out> <runs> <warm|cold|steady> [threads] [depth]
//       from_pretrained with the device map ("-": all in memory) and the
//       prefetch depth (OffloadOptions' default when left out), one
//       untimed forward, then the median of <runs> forwards; cold drops the
//       page cache before each (untimed); steady drops it once, and drops
//       each used tensor's pages (a model bigger than memory, forward after
//       forward). Saves the last logits to <out>.
//   bench_side_by_side overhead <checkpoint> <device_map.json> <ids> <runs> [threads] [depth]
//       the offload overhead warm, in one process: the model all in memory
//       and the model with the map, one untimed forward each, then <runs>
//       pairs of forwards in turns (which goes first alternates); the median
//       of each and the median of the pairs' differences. Two medians taken
//       in different processes differ by more than the overhead itself.
//   bench_side_by_side read <checkpoint> <device_map.json> <runs> <warm|cold> [pread|load|load-model-order]
//       pread of the bytes of the tensors the map puts on disk, from the
//       shards, into one reused buffer: what loading them costs at least;
//       `load` reads them one after the other the way the offload reader
//       does (SafetensorsFile::private_tensor, each freed before the next),
//       in the files' order or in the model's parameter order.
//   bench_side_by_side load <checkpoint>
//       one from_pretrained of the whole checkpoint into memory, timed (the
//       caller drops the page cache before the process for a cold load).
//   bench_side_by_side direct <file>...
//       the files read once with O_DIRECT into one reused aligned buffer
//       (the disk's floor for a cold load; no page cache involved).
#include "models/llama.h"

#include "bench_util.h"
#include "io/direct_read.h"

#include <metaguard/metaguard.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

std::ifstream open_text(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("cannot read " + path);
  return in;
}

// A JSON object of module prefix -> "cpu" / "disk", as transformers takes it.
nlohmann::json map_json(const std::string &path) {
  auto in = open_text(path);
  return nlohmann::json::parse(in);
}

metaguard::DeviceMap device_map_of(const nlohmann::json &entries) {
  metaguard::DeviceMap map;
  for (const auto &[prefix, placement] : entries.items())
    map.set(prefix, placement.get<std::string>());
  return map;
}

bool under(const std::string &name, const std::string &prefix) {
  return prefix.empty() || name == prefix || name.rfind(prefix + ".", 0) == 0;
}

// The tensors whose longest matching prefix in the map is "disk".
bool on_disk(const std::string &name, const nlohmann::json &entries) {
  std::string best;
  bool disk = false, found = false;
  for (const auto &[prefix, placement] : entries.items())
    if (under(name, prefix) && (!found || prefix.size() > best.size())) {
      best = prefix;
      found = true;
      disk = placement.get<std::string>() == "disk";
    }
  return disk;
}

std::vector<fs::path> checkpoint_files(const fs::path &dir) { return metaguard_bench::safetensors_files(dir); }

void print(const nlohmann::json &figures) { std::cout << figures.dump() << std::endl; }

int forward(const std::vector<std::string> &args) {
  const fs::path checkpoint = args.at(1);
  const std::string map_path = args.at(2);
  const int runs = std::stoi(args.at(5));
  const bool cold = args.at(6) == "cold";
  // steady: the model's files bigger than memory, forward after forward (a
  // generation loop): each used tensor's pages are dropped
  // (OffloadOptions::drop_page_cache), so every forward reads the offloaded
  // bytes from disk, and nothing else is dropped between forwards.
  const bool steady = args.at(6) == "steady";
  torch::set_num_threads(args.size() > 7 ? std::stoi(args.at(7)) : 2);
  metaguard::LoadOptions options;
  options.offload.drop_page_cache = steady;
  if (map_path != "-")
    options.device_map = device_map_of(map_json(map_path));
  if (args.size() > 8)
    options.offload.prefetch_depth = std::stoi(args.at(8));
  const auto ids = metaguard::SafetensorsFile(args.at(3)).private_tensor("input_ids");
  const auto files = checkpoint_files(checkpoint);
  torch::NoGradGuard no_grad;
  const auto start = Clock::now();
  auto model = metaguard::from_pretrained<models::LlamaForCausalLM>(checkpoint, options);
  const double load = metaguard_bench::seconds_since(start);
  const auto first_start = Clock::now();
  torch::Tensor logits = model->forward(ids); // warm-up; learns the block order
  const double first = metaguard_bench::seconds_since(first_start);
  const char *dropped = "none";
  if (steady) {
    logits = model->forward(ids); // the first forward to read ahead of the next one
    dropped = metaguard_bench::drop_page_cache(files);
  }
  const auto measured = metaguard_bench::median_seconds_and_peak_rss(
      runs, [&] { logits = model->forward(ids); },
      [&] {
        if (cold)
          dropped = metaguard_bench::drop_page_cache(files);
      });
  metaguard::save_safetensors(args.at(4), {{"logits", logits.contiguous()}});
  print({{"load_s", load},
         {"first_forward_s", first},
         {"forward_s", measured.seconds},
         {"peak_rss", metaguard_bench::proc_status_bytes("VmHWM:")},
         {"dropped", dropped},
         {"direct_reads", metaguard::detail::direct_reads()},
         {"threads", at::get_num_threads()}});
  return 0;
}

int overhead(const std::vector<std::string> &args) {
  const fs::path checkpoint = args.at(1);
  const int runs = std::stoi(args.at(4));
  torch::set_num_threads(args.size() > 5 ? std::stoi(args.at(5)) : 2);
  metaguard::LoadOptions offloaded_options;
  offloaded_options.device_map = device_map_of(map_json(args.at(2)));
  if (args.size() > 6)
    offloaded_options.offload.prefetch_depth = std::stoi(args.at(6));
  const auto ids = metaguard::SafetensorsFile(args.at(3)).private_tensor("input_ids");
  torch::NoGradGuard no_grad;
  auto in_memory = metaguard::from_pretrained<models::LlamaForCausalLM>(checkpoint);
  auto offloaded = metaguard::from_pretrained<models::LlamaForCausalLM>(checkpoint, offloaded_options);
  in_memory->forward(ids);
  offloaded->forward(ids); // learns the block order
  const auto time = [&](models::LlamaForCausalLM &model) {
    const auto start = Clock::now();
    model->forward(ids);
    return metaguard_bench::seconds_since(start);
  };
  std::vector<double> memory, disk, difference;
  for (int i = 0; i < runs; ++i) {
    const bool memory_first = i % 2 == 0;
    const double a = memory_first ? time(in_memory) : time(offloaded);
    const double b = memory_first ? time(offloaded) : time(in_memory);
    memory.push_back(memory_first ? a : b);
    disk.push_back(memory_first ? b : a);
    difference.push_back(disk.back() - memory.back());
  }
  print({{"memory_s", metaguard_bench::median(memory)},
         {"offloaded_s", metaguard_bench::median(disk)},
         {"overhead_s", metaguard_bench::median(difference)},
         {"threads", at::get_num_threads()}});
  return 0;
}

int read_offloaded(const std::vector<std::string> &args) {
  const fs::path checkpoint = args.at(1);
  const auto entries = map_json(args.at(2));
  const int runs = std::stoi(args.at(3));
  const bool cold = args.at(4) == "cold";
  struct Range {
    fs::path file;
    std::int64_t offset, bytes;
  };
  std::vector<Range> ranges;
  std::int64_t largest = 0, total = 0;
  const auto files = checkpoint_files(checkpoint);
  std::vector<metaguard::SafetensorsFile> shards;
  for (const auto &file : files)
    shards.emplace_back(file);
  // The offloaded tensors in the files' order: ranges for pread, names for load.
  std::vector<std::pair<const metaguard::SafetensorsFile *, std::string>> reads;
  for (const auto &shard : shards)
    for (const auto &name : shard.names())
      if (on_disk(name, entries)) {
        const auto &info = shard.info(name);
        ranges.push_back({shard.path(), shard.data_offset() + info.begin, info.nbytes()});
        reads.emplace_back(&shard, name);
        largest = std::max(largest, info.nbytes());
        total += info.nbytes();
      }
  std::vector<char> buffer(static_cast<std::size_t>(largest), 1);
  const std::string method = args.size() > 5 ? args.at(5) : "pread";
  const bool through_load = method != "pread";
  // load-model-order: the order of the model's parameters (how a block's
  // slots are numbered), not the files' order.
  if (method == "load-model-order") {
    metaguard::LoadOptions options;
    options.device_map = device_map_of(entries);
    auto model = metaguard::from_pretrained<models::LlamaForCausalLM>(checkpoint, options);
    reads.clear();
    for (const auto &name : metaguard::offloaded_parameter_names(*model))
      for (const auto &shard : shards)
        if (shard.contains(name))
          reads.emplace_back(&shard, name);
  }
  const char *dropped = "none";
  const auto measured = metaguard_bench::median_seconds_and_peak_rss(
      runs,
      [&] {
        if (through_load) {
          for (const auto &[shard, name] : reads)
            shard->private_tensor(name);
          return;
        }
        for (const auto &r : ranges) {
          const int fd = ::open(r.file.c_str(), O_RDONLY | O_CLOEXEC);
          std::int64_t done = 0;
          while (done < r.bytes) {
            const ssize_t n = ::pread(fd, buffer.data() + done, static_cast<std::size_t>(r.bytes - done),
                                      r.offset + done);
            if (n <= 0)
              throw std::runtime_error("short read of " + r.file.string());
            done += n;
          }
          ::close(fd);
        }
      },
      [&] {
        if (cold)
          dropped = metaguard_bench::drop_page_cache(files);
      });
  print({{"read_s", measured.seconds},
         {"bytes", total},
         {"tensors", ranges.size()},
         {"dropped", dropped},
         {"method", method}});
  return 0;
}

int load(const std::vector<std::string> &args) {
  const fs::path checkpoint = args.at(1);
  torch::set_num_threads(2);
  const std::int64_t before = metaguard_bench::proc_status_bytes("VmRSS:");
  const auto start = Clock::now();
  auto model = metaguard::from_pretrained<models::LlamaForCausalLM>(checkpoint);
  const double seconds = metaguard_bench::seconds_since(start);
  print({{"load_s", seconds},
         {"rss_added", metaguard_bench::proc_status_bytes("VmHWM:") - before},
         {"bytes", metaguard_bench::files_size(checkpoint_files(checkpoint))}});
  return 0;
}

int direct(const std::vector<std::string> &args) {
  constexpr std::size_t kChunk = std::size_t{16} << 20;
  void *buffer = ::mmap(nullptr, kChunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (buffer == MAP_FAILED)
    throw std::runtime_error("cannot allocate the buffer");
  std::memset(buffer, 1, kChunk); // faulted in: the floor excludes first-touch faults
  std::int64_t total = 0;
  const auto start = Clock::now();
  for (std::size_t i = 1; i < args.size(); ++i) {
    const int fd = ::open(args[i].c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
    if (fd < 0)
      throw std::runtime_error("cannot open " + args[i] + " with O_DIRECT");
    ssize_t n = 0;
    while ((n = ::read(fd, buffer, kChunk)) > 0)
      total += n;
    ::close(fd);
    if (n < 0)
      throw std::runtime_error("O_DIRECT read of " + args[i] + " failed");
  }
  print({{"direct_s", metaguard_bench::seconds_since(start)}, {"bytes", total}});
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    const std::string what = args.empty() ? "" : args[0];
    if (what == "forward")
      return forward(args);
    if (what == "overhead")
      return overhead(args);
    if (what == "read")
      return read_offloaded(args);
    if (what == "load")
      return load(args);
    if (what == "direct")
      return direct(args);
    std::cerr << "usage: see the comment at the top of bench_side_by_side.cpp\n";
  } catch (const std::exception &e) {
    std::cerr << "error: " << e.what() << '\n';
  }
  return 1;
}
