// What to_empty's poison costs: to_empty fills every tensor it allocates
// with poison (a NaN with metaguard's payload, a sentinel for integer
// types), in every build. For a model of a few hundred MB, built empty under
// init_empty_weights(), this times
//
//   alloc      the memory alone, as to_empty gave it before the fill
//              (empty_strided swapped into each parameter, pages untouched)
//   to_empty   metaguard::to_empty: the memory and the fill
//   alloc+init / to_empty+init
//              the same followed by what a user does next, an initialisation
//              writing every parameter (normal_), which touches every page
//
// and prints the ratios to_empty / alloc and (to_empty+init) / (alloc+init).
// The first is the fill alone against untouched memory (the page faults move
// into to_empty); the second is what a program pays in the end.
//
//   metaguard_bench_to_empty_poison [MiB] [rounds]
#include <metaguard/metaguard.h>

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace {

struct StackImpl : torch::nn::Module {
  StackImpl(int layers, std::int64_t d) {
    for (int i = 0; i < layers; ++i)
      register_module("fc" + std::to_string(i), torch::nn::Linear(d, d));
  }
};
TORCH_MODULE(Stack);

constexpr std::int64_t kWidth = 2048; // 16 MiB per float weight

Stack empty_stack(int layers) {
  auto guard = metaguard::init_empty_weights();
  return Stack(layers, kWidth);
}

// to_empty without the fill: the allocation to_empty made before.
void alloc_only(torch::nn::Module &module) {
  for (auto &p : module.parameters())
    p.unsafeGetTensorImpl()->shallow_copy_from(
        torch::empty_strided(p.sizes(), p.strides(), p.options().device(torch::kCPU)).getIntrusivePtr());
}

void initialise(torch::nn::Module &module) {
  torch::NoGradGuard no_grad;
  for (auto &p : module.parameters())
    p.normal_(0.0, 0.02);
}

double seconds_of(int layers, const std::function<void(torch::nn::Module &)> &step) {
  Stack model = empty_stack(layers);
  const auto start = std::chrono::steady_clock::now();
  step(*model);
  const auto stop = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(stop - start).count();
}

// Median of `rounds` runs, the variants interleaved so that the machine's
// load falls on all of them alike.
std::vector<double> medians(int layers, int rounds,
                            const std::vector<std::function<void(torch::nn::Module &)>> &steps) {
  std::vector<std::vector<double>> times(steps.size());
  for (int r = 0; r < rounds; ++r)
    for (std::size_t i = 0; i < steps.size(); ++i)
      times[i].push_back(seconds_of(layers, steps[i]));
  std::vector<double> result;
  for (auto &t : times) {
    std::sort(t.begin(), t.end());
    result.push_back(t[t.size() / 2]);
  }
  return result;
}

} // namespace

int main(int argc, char **argv) {
  const int mib = argc > 1 ? std::stoi(argv[1]) : 384;
  const int rounds = argc > 2 ? std::stoi(argv[2]) : 7;
  const int layers = std::max(1, mib / 16);
  torch::zeros({1});
  std::printf("model: %d Linear(%lld, %lld) layers, %.0f MiB of float parameters, %d threads, median of %d\n",
              layers, static_cast<long long>(kWidth), static_cast<long long>(kWidth),
              static_cast<double>(layers) * (kWidth * kWidth + kWidth) * 4 / (1 << 20), at::get_num_threads(),
              rounds);
  auto to_empty = [](torch::nn::Module &m) { metaguard::to_empty(m, torch::kCPU); };
  const auto t = medians(layers, rounds,
                         {alloc_only, to_empty,
                          [](torch::nn::Module &m) {
                            alloc_only(m);
                            initialise(m);
                          },
                          [&](torch::nn::Module &m) {
                            to_empty(m);
                            initialise(m);
                          }});
  std::printf("alloc            %8.1f ms\n", t[0] * 1e3);
  std::printf("to_empty         %8.1f ms   ratio to alloc %6.2f\n", t[1] * 1e3, t[1] / t[0]);
  std::printf("alloc+init       %8.1f ms\n", t[2] * 1e3);
  std::printf("to_empty+init    %8.1f ms   ratio to alloc+init %5.2f\n", t[3] * 1e3, t[3] / t[2]);
  std::printf("fill throughput  %8.2f GB/s (to_empty - alloc)\n",
              static_cast<double>(layers) * (kWidth * kWidth + kWidth) * 4 / (t[1] - t[0]) / 1e9);
  return 0;
}
