// Dispatch overhead of metaguard's factory redirection outside any scope
// an op-heavy forward (small layers, a few hundred dispatcher
// calls each) timed in three states of one process:
//   linked     the library is linked but its dispatcher hooks are not
//              installed yet;
//   installed  after a meta scope was opened and closed (the scope fallback
//              is registered for the rest of the process);
//   default    after set_default_device("meta") then reset_default_device()
//              (the per-operator kernels were registered and removed);
//   offload    with another module's parameter offloaded (the transparent
//              offload fallback is registered; the net's tensors lack its key).
// Built a second time without the library (metaguard_bench_overhead_nolib)
// for the "not linked" baseline; bench/run_overhead.sh alternates the two.
//
//   metaguard_bench_overhead [rounds=7] [forwards=200]
#ifndef METAGUARD_BENCH_WITHOUT_LIBRARY
#include <metaguard/metaguard.h>
#endif

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

struct SmallNetImpl : torch::nn::Module {
  SmallNetImpl() {
    for (int i = 0; i < 48; ++i) {
      linears.push_back(register_module("fc" + std::to_string(i), torch::nn::Linear(32, 32)));
      norms.push_back(register_module("norm" + std::to_string(i),
                                      torch::nn::LayerNorm(torch::nn::LayerNormOptions({32}))));
    }
  }
  torch::Tensor forward(torch::Tensor x) {
    for (std::size_t i = 0; i < linears.size(); ++i)
      x = x + torch::gelu(norms[i](linears[i](x))) * 0.5;
    return x;
  }
  std::vector<torch::nn::Linear> linears;
  std::vector<torch::nn::LayerNorm> norms;
};
TORCH_MODULE(SmallNet);

double median_forward_seconds(SmallNet &net, int rounds, int forwards) {
  torch::NoGradGuard no_grad;
  const auto input = torch::randn({4, 32});
  std::vector<double> times;
  for (int r = 0; r < rounds; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < forwards; ++i)
      net->forward(input);
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
                    forwards);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

void report(const char *state, double seconds) {
  std::printf("RESULT %-10s %.2f us per forward\n", state, seconds * 1e6);
}

} // namespace

int main(int argc, char **argv) {
  const int rounds = argc > 1 ? std::stoi(argv[1]) : 7;
  const int forwards = argc > 2 ? std::stoi(argv[2]) : 200;
  torch::set_num_threads(1);
  torch::manual_seed(0);
  SmallNet net;
  median_forward_seconds(net, 1, forwards); // warm-up
#ifdef METAGUARD_BENCH_WITHOUT_LIBRARY
  report("notlinked", median_forward_seconds(net, rounds, forwards));
#else
  report("linked", median_forward_seconds(net, rounds, forwards));
  { metaguard::MetaDeviceScope scope; }
  if (!metaguard::meta_factories_available())
    std::printf("warning: the factory redirection could not be installed\n");
  report("installed", median_forward_seconds(net, rounds, forwards));
  metaguard::set_default_device("meta");
  metaguard::reset_default_device();
  report("default", median_forward_seconds(net, rounds, forwards));
  {
    // The offload fallback registered and an offloaded parameter alive: the
    // net's own tensors carry no mark, so they should not notice.
    torch::nn::Linear other(8, 8);
    const auto folder =
        std::filesystem::temp_directory_path() / ("metaguard_bench_overhead_" + std::to_string(::getpid()));
    metaguard::dispatch_model(*other, {{"", "disk"}}, folder);
    report("offload", median_forward_seconds(net, rounds, forwards));
    std::filesystem::remove_all(folder);
  }
#endif
  return 0;
}
