// BLAS benchmark (a program, not a timed test): the in-memory forward of a
// Llama-style decoder (attention projections and a gated MLP per block, batch
// 1 x tokens) and a square float matmul, as the LibTorch in this process runs
// them. A LibTorch that takes its BLAS from the system (Debian's links
// libblas.so.3, chosen through update-alternatives) runs both at the speed of
// whichever library the loader found; bench/run_blas.sh runs this program
// once per BLAS and prints the ratios.
//
// Prints "RESULT <name> <seconds>" lines (medians of `runs`), then the
// matmul's GFLOP/s.
//
// Usage: bench_blas [hidden=1024] [blocks=8] [tokens=16] [runs=5] [threads=0]
#include "bench_util.h"

#include <torch/torch.h>

#include <cstdio>
#include <string>

namespace {

// One decoder block's matrix work: q, k, v, o projections and a gated MLP
// (gate, up: hidden -> 8/3 hidden; down back), with RMS-style norms. The
// attention over 16 tokens is small next to these matmuls and left out.
struct BlockImpl : torch::nn::Module {
  BlockImpl(std::int64_t d, std::int64_t ff)
      : q(register_module("q", torch::nn::Linear(torch::nn::LinearOptions(d, d).bias(false)))),
        k(register_module("k", torch::nn::Linear(torch::nn::LinearOptions(d, d).bias(false)))),
        v(register_module("v", torch::nn::Linear(torch::nn::LinearOptions(d, d).bias(false)))),
        o(register_module("o", torch::nn::Linear(torch::nn::LinearOptions(d, d).bias(false)))),
        gate(register_module("gate", torch::nn::Linear(torch::nn::LinearOptions(d, ff).bias(false)))),
        up(register_module("up", torch::nn::Linear(torch::nn::LinearOptions(d, ff).bias(false)))),
        down(register_module("down", torch::nn::Linear(torch::nn::LinearOptions(ff, d).bias(false)))) {}

  static torch::Tensor norm(const torch::Tensor &x) {
    return x * torch::rsqrt(x.pow(2).mean(-1, true) + 1e-6);
  }

  torch::Tensor forward(torch::Tensor x) {
    torch::Tensor h = norm(x);
    torch::Tensor mixed = torch::softmax(q(h) * k(h), -1) * v(h);
    x = x + o(mixed);
    h = norm(x);
    return x + down(torch::silu(gate(h)) * up(h));
  }

  torch::nn::Linear q, k, v, o, gate, up, down;
};
TORCH_MODULE(Block);

} // namespace

int main(int argc, char **argv) {
  const std::int64_t d = argc > 1 ? std::stoll(argv[1]) : 1024;
  const int n_blocks = argc > 2 ? std::stoi(argv[2]) : 8;
  const std::int64_t tokens = argc > 3 ? std::stoll(argv[3]) : 16;
  const int runs = argc > 4 ? std::stoi(argv[4]) : 5;
  const int threads = argc > 5 ? std::stoi(argv[5]) : 0;
  if (threads > 0)
    torch::set_num_threads(threads);
  torch::NoGradGuard no_grad;
  torch::manual_seed(0);

  const std::int64_t ff = d * 8 / 3;
  torch::nn::Sequential decoder;
  for (int i = 0; i < n_blocks; ++i)
    decoder->push_back(Block(d, ff));
  const torch::Tensor x = torch::randn({1, tokens, d});
  double checksum = 0;
  const auto forward_once = [&] { checksum = decoder->forward(x).sum().item<double>(); };
  forward_once(); // Warm-up: first-touch allocations and the BLAS's own start-up.
  const double forward = metaguard_bench::median_seconds(runs, forward_once);

  const std::int64_t n = 1024;
  const torch::Tensor a = torch::randn({n, n}), b = torch::randn({n, n});
  const auto mm_once = [&] { (void)torch::mm(a, b); };
  mm_once();
  const double mm = metaguard_bench::median_seconds(runs, mm_once);

  std::printf("RESULT forward %.6f\n", forward);
  std::printf("RESULT matmul %.6f\n", mm);
  std::printf("decoder: hidden %lld, %d blocks, %lld tokens, %d threads, output sum %.4f\n",
              static_cast<long long>(d), n_blocks, static_cast<long long>(tokens),
              torch::get_num_threads(), checksum);
  std::printf("matmul %lldx%lld: %.1f GFLOP/s\n", static_cast<long long>(n),
              static_cast<long long>(n), 2.0 * n * n * n / mm / 1e9);
  return 0;
}
