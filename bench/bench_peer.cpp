// Peer benchmark: metaguard's from_pretrained against what a
// LibTorch user does without it (torch::save / torch::load, then ->to(dtype)),
// for two model styles over the same weights:
//   stock    built from torch::nn layers (Embedding, LayerNorm, Linear);
//   ambient  the same names and shapes, allocated through
//            metaguard::tensor_options();
// zero-copy (F32 -> F32) and converting (F32 -> BF16), single-file and
// sharded checkpoints, against the floors of the machine. Two modes:
//   fresh  every load in its own process, runs spaced `gap` seconds apart
//          (how users load; on VMs that return freed huge pages to the host
//          this is what decides the page size);
//   b2b    every path in one process, interleaved rounds, back to back.
// Each load reports its time, the resident memory it added at its peak and a
// hash of the loaded parameters; paths that should agree bit for bit are
// checked to.
//
//   metaguard_bench_peer generate <dir> [MiB=512]
//   metaguard_bench_peer fresh <dir> [runs=3] [gap-seconds=3]
//   metaguard_bench_peer b2b <dir> [runs=3]
//   metaguard_bench_peer run <dir> <path>          one load (used by fresh)
#include "bench_util.h"

#include <metaguard/metaguard.h>

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using namespace metaguard_bench;

int64_t cfg(const metaguard::Config &config, const char *key) {
  return config.at(key).get<int64_t>();
}

// --- stock style: torch::nn layers ------------------------------------------
struct StockBlockImpl : torch::nn::Module {
  explicit StockBlockImpl(int64_t d) {
    register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
    for (const char *name : {"q", "k", "v", "o"})
      register_module(name, torch::nn::Linear(d, d));
    register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
    register_module("up", torch::nn::Linear(d, 4 * d));
    register_module("down", torch::nn::Linear(4 * d, d));
  }
};
TORCH_MODULE(StockBlock);

struct StockNetImpl : torch::nn::Module {
  explicit StockNetImpl(const metaguard::Config &config) {
    const int64_t d = cfg(config, "hidden_size");
    register_module("embed", torch::nn::Embedding(cfg(config, "vocab_size"), d));
    auto layers = register_module("layers", torch::nn::ModuleList());
    for (int64_t i = 0; i < cfg(config, "num_layers"); ++i)
      layers->push_back(StockBlock(d));
  }
};
TORCH_MODULE(StockNet);

// --- ambient style: the same names through metaguard::tensor_options() ------
struct AmbientLinearImpl : torch::nn::Module {
  AmbientLinearImpl(int64_t in, int64_t out) {
    register_parameter("weight", torch::empty({out, in}, metaguard::tensor_options()));
    register_parameter("bias", torch::empty({out}, metaguard::tensor_options()));
  }
};
TORCH_MODULE(AmbientLinear);

struct AmbientEmbeddingImpl : torch::nn::Module {
  AmbientEmbeddingImpl(int64_t n, int64_t d) {
    register_parameter("weight", torch::empty({n, d}, metaguard::tensor_options()));
  }
};
TORCH_MODULE(AmbientEmbedding);

struct AmbientNormImpl : torch::nn::Module {
  explicit AmbientNormImpl(int64_t d) {
    register_parameter("weight", torch::empty({d}, metaguard::tensor_options()));
    register_parameter("bias", torch::empty({d}, metaguard::tensor_options()));
  }
};
TORCH_MODULE(AmbientNorm);

struct AmbientBlockImpl : torch::nn::Module {
  explicit AmbientBlockImpl(int64_t d) {
    register_module("norm1", AmbientNorm(d));
    for (const char *name : {"q", "k", "v", "o"})
      register_module(name, AmbientLinear(d, d));
    register_module("norm2", AmbientNorm(d));
    register_module("up", AmbientLinear(d, 4 * d));
    register_module("down", AmbientLinear(4 * d, d));
  }
};
TORCH_MODULE(AmbientBlock);

struct AmbientNetImpl : torch::nn::Module {
  explicit AmbientNetImpl(const metaguard::Config &config) {
    const int64_t d = cfg(config, "hidden_size");
    register_module("embed", AmbientEmbedding(cfg(config, "vocab_size"), d));
    auto layers = register_module("layers", torch::nn::ModuleList());
    for (int64_t i = 0; i < cfg(config, "num_layers"); ++i)
      layers->push_back(AmbientBlock(d));
  }
};
TORCH_MODULE(AmbientNet);

// --- measurement helpers ------------------------------------------------------

// 64-bit hash of every parameter's bytes, in registration order.
std::uint64_t parameters_hash(const torch::nn::Module &module) {
  std::uint64_t h = 0x9E3779B97F4A7C15ull;
  for (const auto &item : module.named_parameters()) {
    const auto t = item.value().contiguous();
    for (char c : item.key())
      h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
    const auto *bytes = static_cast<const unsigned char *>(t.data_ptr());
    const std::size_t n = t.nbytes();
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      std::uint64_t word;
      std::memcpy(&word, bytes + i, 8);
      h = ((h ^ word) * 0x100000001B3ull) ^ (h >> 29);
    }
    for (; i < n; ++i)
      h = (h ^ bytes[i]) * 0x100000001B3ull;
    h ^= static_cast<std::uint64_t>(t.scalar_type());
  }
  return h;
}

void warm_page_cache(const std::filesystem::path &dir) {
  std::vector<char> buffer(8 << 20);
  for (const auto &item : std::filesystem::recursive_directory_iterator(dir)) {
    if (!item.is_regular_file())
      continue;
    const int fd = ::open(item.path().c_str(), O_RDONLY);
    while (::read(fd, buffer.data(), buffer.size()) > 0) {
    }
    ::close(fd);
  }
}

// --- paths --------------------------------------------------------------------
struct Outcome {
  double seconds = 0;
  std::int64_t peak_bytes = 0;
  std::uint64_t hash = 0; // 0: not a model (floors)
};


template <class Model> std::shared_ptr<torch::nn::Module> torch_load(const std::filesystem::path &dir,
                                                                    std::optional<torch::Dtype> dtype) {
  Model model(metaguard::load_config(dir / "single"));
  torch::load(model, (dir / "model.pt").string());
  if (dtype)
    model->to(*dtype);
  return model.ptr();
}

template <class Model>
std::shared_ptr<torch::nn::Module> metaguard_load(const std::filesystem::path &checkpoint,
                                                  std::optional<torch::Dtype> dtype) {
  metaguard::LoadOptions options;
  options.dtype = dtype;
  return metaguard::from_pretrained<Model>(checkpoint, options).ptr();
}

// Floors: the fastest any loader could be. mmap: faulting in the page cache
// (zero-copy); touch: one write per 4 KiB page of fresh memory the size of
// the output (a loader that allocates); touch_thp: the same advised to use
// transparent huge pages; populate: the same prefaulted by the kernel
// (MAP_POPULATE) in 4 KiB pages.
std::shared_ptr<void> anonymous(std::size_t bytes, bool huge, bool populate) {
  void *p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | (populate ? MAP_POPULATE : 0), -1, 0);
  if (huge)
    ::madvise(p, bytes, MADV_HUGEPAGE);
  if (!populate) {
    auto *c = static_cast<volatile char *>(p);
    for (std::size_t i = 0; i < bytes; i += 4096)
      c[i] = 1;
  }
  return std::shared_ptr<void>(p, [bytes](void *q) { ::munmap(q, bytes); });
}

std::shared_ptr<void> mmap_files(const std::vector<std::filesystem::path> &files) {
  auto maps = std::make_shared<std::vector<std::pair<void *, std::size_t>>>();
  for (const auto &f : files) {
    const int fd = ::open(f.c_str(), O_RDONLY);
    const auto size = static_cast<std::size_t>(std::filesystem::file_size(f));
    maps->emplace_back(::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0), size);
    ::close(fd);
  }
  return std::shared_ptr<void>(maps.get(), [maps](void *) {
    for (auto [address, size] : *maps)
      ::munmap(address, size);
  });
}

struct PathSpec {
  std::string name;
  std::string group; // paths in one group must load bit-identical parameters
  std::function<std::shared_ptr<void>(const std::filesystem::path &)> run;
  std::function<std::uint64_t(const std::shared_ptr<void> &)> hash;
};

template <class Model> PathSpec model_path(std::string name, std::string group,
                                           std::function<std::shared_ptr<torch::nn::Module>(
                                               const std::filesystem::path &)> load) {
  return {std::move(name), std::move(group),
          [load](const std::filesystem::path &dir) -> std::shared_ptr<void> { return load(dir); },
          [](const std::shared_ptr<void> &p) {
            return parameters_hash(*static_cast<torch::nn::Module *>(p.get()));
          }};
}

std::vector<PathSpec> all_paths() {
  using Dt = std::optional<torch::Dtype>;
  const Dt f32 = std::nullopt, bf16 = torch::kBFloat16;
  std::vector<PathSpec> paths;
  auto floor = [&](std::string name, std::function<std::shared_ptr<void>(const std::filesystem::path &)> f) {
    paths.push_back({std::move(name), "", std::move(f), nullptr});
  };
  floor("floor/mmap_populate", [](const auto &dir) { return mmap_files(safetensors_files(dir / "single")); });
  floor("floor/touch_4k/f32", [](const auto &dir) {
    return anonymous(files_size(safetensors_files(dir / "single")), false, false);
  });
  floor("floor/touch_4k/bf16", [](const auto &dir) {
    return anonymous(files_size(safetensors_files(dir / "single")) / 2, false, false);
  });
  floor("floor/touch_thp/bf16", [](const auto &dir) {
    return anonymous(files_size(safetensors_files(dir / "single")) / 2, true, false);
  });
  floor("floor/populate_4k/bf16", [](const auto &dir) {
    return anonymous(files_size(safetensors_files(dir / "single")) / 2, false, true);
  });
  paths.push_back(model_path<StockNet>("torch_load/stock", "f32", [f32](const auto &d) { return torch_load<StockNet>(d, f32); }));
  paths.push_back(model_path<AmbientNet>("torch_load/ambient", "f32", [f32](const auto &d) { return torch_load<AmbientNet>(d, f32); }));
  paths.push_back(model_path<StockNet>("torch_load+to_bf16/stock", "bf16", [bf16](const auto &d) { return torch_load<StockNet>(d, bf16); }));
  paths.push_back(model_path<AmbientNet>("torch_load+to_bf16/ambient", "bf16", [bf16](const auto &d) { return torch_load<AmbientNet>(d, bf16); }));
  for (const char *layout : {"single", "sharded"}) {
    const std::string l = layout;
    paths.push_back(model_path<StockNet>("metaguard/stock/" + l, "f32", [l, f32](const auto &d) { return metaguard_load<StockNet>(d / l, f32); }));
    paths.push_back(model_path<AmbientNet>("metaguard/ambient/" + l, "f32", [l, f32](const auto &d) { return metaguard_load<AmbientNet>(d / l, f32); }));
    paths.push_back(model_path<StockNet>("metaguard_bf16/stock/" + l, "bf16", [l, bf16](const auto &d) { return metaguard_load<StockNet>(d / l, bf16); }));
    paths.push_back(model_path<AmbientNet>("metaguard_bf16/ambient/" + l, "bf16", [l, bf16](const auto &d) { return metaguard_load<AmbientNet>(d / l, bf16); }));
  }
  return paths;
}

Outcome run_once(const PathSpec &path, const std::filesystem::path &dir) {
  const std::int64_t before = proc_status_bytes("VmRSS:");
  reset_peak_rss();
  const auto start = std::chrono::steady_clock::now();
  auto result = path.run(dir);
  Outcome outcome;
  outcome.seconds = seconds_since(start);
  outcome.peak_bytes = proc_status_bytes("VmHWM:") - before;
  if (path.hash)
    outcome.hash = path.hash(result);
  return outcome;
}

// --- reporting ------------------------------------------------------------------
struct Samples {
  std::vector<double> seconds;
  std::int64_t peak_bytes = 0;
  std::vector<std::uint64_t> hashes;
};

void report(const std::vector<PathSpec> &paths, std::map<std::string, Samples> &samples,
            std::int64_t checkpoint_bytes) {
  std::printf("%-30s %9s %9s %9s %10s %8s\n", "path", "median s", "min s", "max s", "peak MiB",
              "/ckpt");
  for (const auto &p : paths) {
    auto &s = samples[p.name];
    std::printf("%-30s %9.3f %9.3f %9.3f %10.1f %8.2f\n", p.name.c_str(), median(s.seconds),
                *std::min_element(s.seconds.begin(), s.seconds.end()),
                *std::max_element(s.seconds.begin(), s.seconds.end()), s.peak_bytes / 1048576.0,
                double(s.peak_bytes) / checkpoint_bytes);
  }
  auto m = [&](const std::string &name) { return median(samples[name].seconds); };
  auto ratio = [&](const char *what, double value, double target, bool at_most = true) {
    std::printf("  %-62s %7.2fx", what, value);
    if (target > 0)
      std::printf("  (target %s %.1fx) %s", at_most ? "<=" : ">=", target,
                  (at_most ? value <= target : value >= target) ? "ok" : "MISSED");
    std::printf("\n");
  };
  std::printf("ratios (medians):\n");
  for (const char *l : {"single", "sharded"}) {
    const std::string s = l;
    ratio(("stock zero-copy / ambient zero-copy, " + s).c_str(),
          m("metaguard/stock/" + s) / m("metaguard/ambient/" + s), 2.0);
    ratio(("stock zero-copy peak RSS / checkpoint, " + s).c_str(),
          double(samples["metaguard/stock/" + s].peak_bytes) / checkpoint_bytes, 1.1);
    ratio(("ambient zero-copy / mmap floor, " + s).c_str(),
          m("metaguard/ambient/" + s) / m("floor/mmap_populate"), 0);
    for (const char *style : {"stock", "ambient"}) {
      const std::string st = style;
      ratio(("converting " + st + " / 4 KiB first-touch of its output, " + s).c_str(),
            m("metaguard_bf16/" + st + "/" + s) / m("floor/touch_4k/bf16"), 1.2);
      ratio(("converting " + st + " / torch::load+to(bf16) " + st + ", " + s).c_str(),
            m("metaguard_bf16/" + st + "/" + s) / m("torch_load+to_bf16/" + st), 1.0);
    }
  }
  ratio("torch::load stock / metaguard zero-copy stock (speed-up)",
        m("torch_load/stock") / m("metaguard/stock/single"), 0);
  ratio("torch::load+to(bf16) stock / metaguard converting stock (speed-up)",
        m("torch_load+to_bf16/stock") / m("metaguard_bf16/stock/single"), 0);
  ratio("THP first-touch / 4 KiB first-touch (bf16 output size)",
        m("floor/touch_thp/bf16") / m("floor/touch_4k/bf16"), 0);
  ratio("MAP_POPULATE 4 KiB / 4 KiB first-touch (bf16 output size)",
        m("floor/populate_4k/bf16") / m("floor/touch_4k/bf16"), 0);
  // Bit-identity: every load of a group, every run, one hash.
  std::map<std::string, std::map<std::uint64_t, std::vector<std::string>>> groups;
  for (const auto &p : paths)
    for (auto h : samples[p.name].hashes)
      if (!p.group.empty())
        groups[p.group][h].push_back(p.name);
  bool identical = true;
  for (const auto &[group, hashes] : groups) {
    std::printf("bit-identity, %s paths: %s\n", group.c_str(),
                hashes.size() == 1 ? "identical" : "DIFFER");
    if (hashes.size() != 1) {
      identical = false;
      for (const auto &[h, names] : hashes)
        std::printf("    %016llx: %s ...\n", static_cast<unsigned long long>(h), names[0].c_str());
    }
  }
  if (!identical)
    std::printf("loaded parameters DIFFER between paths\n");
}

int generate(const std::filesystem::path &dir, std::int64_t mib) {
  const int64_t d = 1024; // 48 MiB per block, 32 MiB embedding
  const int64_t layers = std::max<int64_t>(1, (mib - 32) / 48);
  const metaguard::Config config = {{"hidden_size", d}, {"vocab_size", 8192}, {"num_layers", layers}};
  torch::manual_seed(0);
  StockNet model(config);
  metaguard::SaveOptions save;
  save.config = config;
  save.max_shard_size = "100GB";
  metaguard::save_pretrained(*model, dir / "single", save);
  save.max_shard_size = "200MB";
  metaguard::save_pretrained(*model, dir / "sharded", save);
  torch::save(model, (dir / "model.pt").string());
  std::printf("generated %zu tensors, %.1f MiB; %zu shards; torch::save archive %.1f MiB\n",
              model->parameters().size(), files_size(safetensors_files(dir / "single")) / 1048576.0,
              safetensors_files(dir / "sharded").size(),
              std::filesystem::file_size(dir / "model.pt") / 1048576.0);
  return 0;
}

void header(const std::filesystem::path &dir, const char *mode, int runs) {
  std::printf("%s mode: checkpoint %.1f MiB F32, %d runs per path, %d intra-op threads, page "
              "cache warm\n",
              mode, files_size(safetensors_files(dir / "single")) / 1048576.0, runs,
              torch::get_num_threads());
}

int fresh(const char *self, const std::filesystem::path &dir, int runs, int gap) {
  const auto paths = all_paths();
  warm_page_cache(dir);
  header(dir, "fresh-process", runs);
  std::map<std::string, Samples> samples;
  for (int r = 0; r < runs; ++r)
    for (const auto &p : paths) {
      std::this_thread::sleep_for(std::chrono::seconds(gap));
      const std::string command = std::string(self) + " run '" + dir.string() + "' '" + p.name + "'";
      FILE *pipe = ::popen(command.c_str(), "r");
      char line[512];
      bool found = false;
      while (pipe && std::fgets(line, sizeof line, pipe)) {
        double seconds;
        long long peak;
        unsigned long long hash;
        if (std::sscanf(line, "RESULT %lf %lld %llx", &seconds, &peak, &hash) == 3) {
          auto &s = samples[p.name];
          s.seconds.push_back(seconds);
          s.peak_bytes = std::max<std::int64_t>(s.peak_bytes, peak);
          if (hash)
            s.hashes.push_back(hash);
          found = true;
        }
      }
      if (!pipe || ::pclose(pipe) != 0 || !found) {
        std::fprintf(stderr, "bench_peer: path %s failed\n", p.name.c_str());
        return 1;
      }
    }
  report(paths, samples, files_size(safetensors_files(dir / "single")));
  return 0;
}

int back_to_back(const std::filesystem::path &dir, int runs) {
  const auto paths = all_paths();
  warm_page_cache(dir);
  header(dir, "back-to-back", runs);
  std::map<std::string, Samples> samples;
  for (int r = 0; r < runs; ++r)
    for (const auto &p : paths) {
      const Outcome o = run_once(p, dir);
      auto &s = samples[p.name];
      s.seconds.push_back(o.seconds);
      s.peak_bytes = std::max(s.peak_bytes, o.peak_bytes);
      if (o.hash)
        s.hashes.push_back(o.hash);
    }
  report(paths, samples, files_size(safetensors_files(dir / "single")));
  return 0;
}

int run_one(const std::filesystem::path &dir, const std::string &name) {
  for (const auto &p : all_paths())
    if (p.name == name) {
      const Outcome o = run_once(p, dir);
      std::printf("RESULT %.6f %lld %llx\n", o.seconds, static_cast<long long>(o.peak_bytes),
                  static_cast<unsigned long long>(o.hash));
      return 0;
    }
  std::fprintf(stderr, "bench_peer: no path named '%s'\n", name.c_str());
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  const std::string mode = argc > 2 ? argv[1] : "";
  try {
    if (mode == "generate")
      return generate(argv[2], argc > 3 ? std::stoll(argv[3]) : 512);
    if (mode == "fresh")
      return fresh(argv[0], argv[2], argc > 3 ? std::stoi(argv[3]) : 3,
                   argc > 4 ? std::stoi(argv[4]) : 3);
    if (mode == "b2b")
      return back_to_back(argv[2], argc > 3 ? std::stoi(argv[3]) : 3);
    if (mode == "run" && argc > 3)
      return run_one(argv[2], argv[3]);
  } catch (const std::exception &e) {
    std::cerr << "bench_peer: " << e.what() << "\n";
    return 1;
  }
  std::cerr << "usage: " << argv[0]
            << " generate <dir> [MiB=512] | fresh <dir> [runs=3] [gap=3] | b2b <dir> [runs=3] | "
               "run <dir> <path>\n";
  return 2;
}
