// Peak memory of building a model under init_empty_weights() (buffers
// excluded): the scope wants every parameter on meta, buffers real, and the
// peak within 1.1x of the largest parameter above the process baseline.
// Each case runs in a process of its own (bench/run_empty_weights.sh) so
// that the baseline is clean:
//
//   metaguard_bench_empty_weights <case> [scope|none]
//
// prints the peak RSS added by the construction, the largest parameter and
// their ratio. "none" builds the same model without the scope, for scale.
#include <metaguard/metaguard.h>

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <string>

namespace {

// A /proc/self/status field, in bytes.
std::int64_t status_bytes(const std::string &field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind(field + ":", 0) == 0)
      return std::stoll(line.substr(field.size() + 1)) * 1024;
  return -1;
}

// Resets VmHWM to the current RSS (Linux >= 4.0).
bool reset_peak() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  return static_cast<bool>(clear.flush());
}

// A layer written for metaguard: its parameter allocated through
// tensor_options() and initialised in the constructor.
struct AmbientLinearImpl : torch::nn::Module {
  AmbientLinearImpl(int64_t in, int64_t out) {
    weight = register_parameter("weight", torch::empty({out, in}, metaguard::tensor_options()));
    torch::nn::init::kaiming_uniform_(weight, std::sqrt(5.0));
  }
  torch::Tensor weight;
};
TORCH_MODULE(AmbientLinear);

// Llama-shaped block: stock projections, a parameter filled with randn
// before registration (it is real for a moment: the one parameter the bar
// allows), a norm with running statistics and a rotary buffer.
struct BlockImpl : torch::nn::Module {
  explicit BlockImpl(int64_t d) {
    for (const char *name : {"q", "k", "v", "o"})
      register_module(name, torch::nn::Linear(torch::nn::LinearOptions(d, d).bias(false)));
    register_parameter("gate", torch::randn({d, d}));
    register_module("norm", torch::nn::BatchNorm1d(d));
    register_buffer("inv_freq", 1.0 / torch::pow(10000.0, torch::arange(0, d, 2).to(torch::kFloat32) /
                                                              static_cast<double>(d)));
  }
};
TORCH_MODULE(Block);

const std::map<std::string, std::function<std::shared_ptr<torch::nn::Module>()>> cases = {
    {"stock_linear", [] { return torch::nn::Linear(8192, 8192).ptr(); }},
    {"tensor_options_linear", [] { return AmbientLinear(8192, 8192).ptr(); }},
    {"block", [] { return Block(4096).ptr(); }},
};

std::int64_t largest_parameter(const torch::nn::Module &module) {
  std::int64_t largest = 0;
  for (const auto &p : module.parameters())
    largest = std::max<std::int64_t>(largest, p.numel() * static_cast<std::int64_t>(p.element_size()));
  return largest;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2 || !cases.count(argv[1])) {
    std::cerr << "usage: metaguard_bench_empty_weights stock_linear|tensor_options_linear|block "
                 "[scope|none]\n";
    return 2;
  }
  const bool scoped = argc < 3 || std::string(argv[2]) != "none";
  torch::zeros({1}); // LibTorch's lazy start-up belongs to the baseline
  if (scoped) {
    auto warm = metaguard::init_empty_weights(); // installs the dispatcher hook
    torch::zeros({1});
  }
  if (!reset_peak())
    std::cerr << "warning: cannot reset VmHWM; the peak includes start-up\n";
  const std::int64_t baseline = status_bytes("VmRSS");
  std::shared_ptr<torch::nn::Module> model;
  if (scoped) {
    auto guard = metaguard::init_empty_weights();
    model = cases.at(argv[1])();
  } else {
    model = cases.at(argv[1])();
  }
  const std::int64_t peak = status_bytes("VmHWM") - baseline;
  std::int64_t meta = 0, total = 0, real_buffers = 0;
  for (const auto &p : model->parameters()) {
    ++total;
    meta += p.is_meta() ? 1 : 0;
  }
  for (const auto &b : model->buffers())
    real_buffers += b.is_meta() ? 0 : 1;
  const std::int64_t largest = largest_parameter(*model);
  std::printf("%-22s %-5s peak above baseline %8.1f MiB, largest parameter %7.1f MiB, ratio %.3f "
              "(meta parameters %lld/%lld, real buffers %lld)\n",
              argv[1], scoped ? "scope" : "none", static_cast<double>(peak) / (1 << 20),
              static_cast<double>(largest) / (1 << 20),
              static_cast<double>(peak) / static_cast<double>(largest), static_cast<long long>(meta),
              static_cast<long long>(total), static_cast<long long>(real_buffers));
  return 0;
}
