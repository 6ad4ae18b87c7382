// Loading benchmark: metaguard's from_pretrained against the floors
// of the machine and a naive loader, on a generated ~1 GiB sharded
// checkpoint, page cache warm, median of several runs, one process.
//
//   metaguard_bench_loading generate <dir> [MiB]   writes the checkpoint
//   metaguard_bench_loading measure <dir> [runs]   prints figures and ratios
//
// Run both through bench/run_loading.sh. `measure` runs in a fresh process so
// that its peak-RSS figures are not inflated by the generation.
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
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace {

using namespace metaguard_bench;

// A transformer-shaped model whose parameters are allocated through
// metaguard::tensor_options(): built under meta they cost nothing, so the
// load measures loading only. 16 tensors per layer, of sizes d .. 4d^2.
struct LayerImpl : torch::nn::Module {
  explicit LayerImpl(int64_t d) {
    const auto options = metaguard::tensor_options();
    for (const char *name : {"q", "k", "v", "o"}) {
      register_parameter(std::string(name) + "_weight", torch::empty({d, d}, options));
      register_parameter(std::string(name) + "_bias", torch::empty({d}, options));
    }
    register_parameter("up_weight", torch::empty({4 * d, d}, options));
    register_parameter("up_bias", torch::empty({4 * d}, options));
    register_parameter("down_weight", torch::empty({d, 4 * d}, options));
    register_parameter("down_bias", torch::empty({d}, options));
    for (const char *name : {"norm1", "norm2"}) {
      register_parameter(std::string(name) + "_weight", torch::empty({d}, options));
      register_parameter(std::string(name) + "_bias", torch::empty({d}, options));
    }
  }
};
TORCH_MODULE(Layer);

struct BenchModelImpl : torch::nn::Module {
  explicit BenchModelImpl(const metaguard::Config &config) {
    const int64_t d = config.at("hidden_size").get<int64_t>();
    register_parameter("embed", torch::empty({config.at("vocab_size").get<int64_t>(), d},
                                             metaguard::tensor_options()));
    auto layers = register_module("layers", torch::nn::ModuleList());
    for (int64_t i = 0; i < config.at("num_layers").get<int64_t>(); ++i)
      layers->push_back(Layer(d));
  }
};
TORCH_MODULE(BenchModel);

void warm_page_cache(const std::vector<std::filesystem::path> &files) {
  std::vector<char> buffer(8 << 20);
  for (const auto &f : files) {
    const int fd = ::open(f.c_str(), O_RDONLY);
    while (::read(fd, buffer.data(), buffer.size()) > 0) {
    }
    ::close(fd);
  }
}


// The floor of any zero-copy loader: mapping the files with every page
// faulted in.
double mmap_floor(const std::vector<std::filesystem::path> &files, int runs) {
  std::vector<std::pair<void *, std::size_t>> maps;
  return median_seconds(
      runs,
      [&] {
        for (const auto &f : files) {
          const int fd = ::open(f.c_str(), O_RDONLY);
          const auto size = static_cast<std::size_t>(std::filesystem::file_size(f));
          maps.emplace_back(::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0), size);
          ::close(fd);
        }
      },
      [&] {
        for (auto [address, size] : maps)
          ::munmap(address, size);
        maps.clear();
      });
}

// The floor of any loader that allocates its output: faulting in fresh
// memory of the output's size (one write per page). With `huge_pages` the
// memory is advised to use transparent huge pages, as metaguard's converting
// reads do: reported too, so that its ratio is not flattered by comparing
// huge pages against 4 KiB ones.
double first_touch_floor(std::int64_t bytes, int runs, bool huge_pages = false) {
  void *memory = nullptr;
  const long page = ::sysconf(_SC_PAGESIZE);
  return median_seconds(
      runs,
      [&] {
        memory = ::mmap(nullptr, static_cast<std::size_t>(bytes), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (huge_pages)
          ::madvise(memory, static_cast<std::size_t>(bytes), MADV_HUGEPAGE);
        auto *p = static_cast<volatile char *>(memory);
        for (std::int64_t i = 0; i < bytes; i += page)
          p[i] = 1;
      },
      [&] { ::munmap(memory, static_cast<std::size_t>(bytes)); });
}

// The naive peer: read() every file into freshly allocated buffers.
double naive_read(const std::vector<std::filesystem::path> &files, int runs) {
  std::vector<std::unique_ptr<char[]>> buffers;
  return median_seconds(
      runs,
      [&] {
        for (const auto &f : files) {
          const auto size = static_cast<std::size_t>(std::filesystem::file_size(f));
          buffers.emplace_back(new char[size]);
          const int fd = ::open(f.c_str(), O_RDONLY);
          std::size_t done = 0;
          while (done < size) {
            const ssize_t n = ::read(fd, buffers.back().get() + done, size - done);
            if (n <= 0)
              break;
            done += static_cast<std::size_t>(n);
          }
          ::close(fd);
        }
      },
      [&] { buffers.clear(); });
}

struct LoadFigures {
  double seconds;
  std::int64_t peak_bytes; // resident memory added by the load at its peak
};

LoadFigures metaguard_load(const std::filesystem::path &dir, const metaguard::LoadOptions &options,
                           int runs) {
  BenchModel model{nullptr};
  std::int64_t peak = 0;
  std::int64_t before = 0;
  const double seconds = median_seconds(
      runs,
      [&] {
        before = proc_status_bytes("VmRSS:");
        reset_peak_rss();
        model = metaguard::from_pretrained<BenchModel>(dir, options);
      },
      [&] {
        peak = std::max(peak, proc_status_bytes("VmHWM:") - before);
        model = BenchModel{nullptr};
      });
  return {seconds, peak};
}

int generate(const std::filesystem::path &dir, std::int64_t mib) {
  // 48 d^2 bytes per layer with d = 1024: 48 MiB; plus a 32 MiB embedding.
  const int64_t d = 1024;
  const int64_t layers = std::max<int64_t>(1, (mib - 32) / 48);
  const metaguard::Config config = {{"hidden_size", d}, {"vocab_size", 8192}, {"num_layers", layers}};
  torch::manual_seed(0);
  BenchModel model(config);
  {
    torch::NoGradGuard no_grad;
    for (auto &p : model->parameters())
      p.uniform_(-1, 1);
  }
  metaguard::SaveOptions save;
  save.max_shard_size = "200MB";
  save.config = config;
  metaguard::save_pretrained(*model, dir, save);
  std::cout << "generated " << model->parameters().size() << " tensors, "
            << safetensors_files(dir).size() << " shards, "
            << files_size(safetensors_files(dir)) / double(1 << 20) << " MiB in " << dir << "\n";
  return 0;
}

void print_row(const char *what, double seconds, std::int64_t bytes) {
  std::printf("  %-44s %8.3f s  %6.2f GB/s\n", what, seconds, bytes / seconds / 1e9);
}

void print_ratio(const char *what, double ratio, double target) {
  std::printf("  %-44s %6.2fx  (target <= %.1fx) %s\n", what, ratio, target,
              ratio <= target ? "ok" : "MISSED");
}

int measure(const std::filesystem::path &dir, int runs) {
  const auto files = safetensors_files(dir);
  const std::int64_t bytes = files_size(files);
  metaguard::SafetensorsCheckpoint checkpoint(dir);
  std::printf("checkpoint: %zu tensors in %zu shards, %.1f MiB; %d runs each, median; %d threads\n",
              checkpoint.names().size(), files.size(), bytes / double(1 << 20), runs,
              torch::get_num_threads());
  warm_page_cache(files);

  const double mmap_s = mmap_floor(files, runs);
  const double touch_full_s = first_touch_floor(bytes, runs);
  const double touch_half_s = first_touch_floor(bytes / 2, runs);
  const double touch_half_huge_s = first_touch_floor(bytes / 2, runs, /*huge_pages=*/true);
  const double naive_s = naive_read(files, runs);
  const LoadFigures zero_copy = metaguard_load(dir, {}, runs);
  metaguard::LoadOptions to_bf16;
  to_bf16.dtype = torch::kBFloat16;
  const LoadFigures converting = metaguard_load(dir, to_bf16, runs);

  std::printf("floors and peers:\n");
  print_row("mmap(MAP_POPULATE) of the files", mmap_s, bytes);
  print_row("first-touch of fresh memory, checkpoint size", touch_full_s, bytes);
  print_row("first-touch of fresh memory, BF16 output size", touch_half_s, bytes / 2);
  print_row("  the same with transparent huge pages", touch_half_huge_s, bytes / 2);
  print_row("naive read() into fresh buffers", naive_s, bytes);
  std::printf("metaguard from_pretrained:\n");
  print_row("zero-copy (F32 checkpoint -> F32 CPU)", zero_copy.seconds, bytes);
  print_row("converting (F32 -> BF16)", converting.seconds, bytes);
  std::printf("peak RSS added by the load: zero-copy %.1f MiB, converting %.1f MiB\n",
              zero_copy.peak_bytes / double(1 << 20), converting.peak_bytes / double(1 << 20));
  std::printf("ratios:\n");
  print_ratio("zero-copy load / mmap floor", zero_copy.seconds / mmap_s, 2.0);
  print_ratio("converting load / first-touch of its output", converting.seconds / touch_half_s, 1.2);
  print_ratio("zero-copy peak RSS / checkpoint size", double(zero_copy.peak_bytes) / bytes, 1.1);
  std::printf("  %-44s %6.2fx\n", "converting load / huge-page first-touch",
              converting.seconds / touch_half_huge_s);
  std::printf("  %-44s %6.2fx\n", "converting peak RSS / checkpoint size",
              double(converting.peak_bytes) / bytes);
  std::printf("  %-44s %6.2fx\n", "naive read() / zero-copy load", naive_s / zero_copy.seconds);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (argc < 3 || (mode != "generate" && mode != "measure")) {
    std::cerr << "usage: " << argv[0] << " generate <dir> [MiB=1024] | measure <dir> [runs=5]\n";
    return 2;
  }
  try {
    if (mode == "generate")
      return generate(argv[2], argc > 3 ? std::stoll(argv[3]) : 1024);
    return measure(argv[2], argc > 3 ? std::stoi(argv[3]) : 5);
  } catch (const std::exception &e) {
    std::cerr << "bench_loading: " << e.what() << "\n";
    return 1;
  }
}
