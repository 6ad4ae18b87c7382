// Loading benchmark for PyTorch checkpoints (pytorch_model.bin): one load of
// every tensor of a torch.save file in this process, printed as
// "<seconds> <peak RSS bytes added>". bench/run_bin_loading.sh runs it in
// fresh processes beside torch.load in Python and prints the ratios.
//
//   metaguard_bench_bin_loading <file> zero-copy   CPU tensors, the file's dtype
//   metaguard_bench_bin_loading <file> bf16        converted to bfloat16
#include <metaguard/checkpoint_reader.h>

#include "bench_util.h"

#include <torch/torch.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  if (argc != 3) {
    std::cerr << "usage: " << argv[0] << " <pytorch_model.bin> zero-copy|bf16\n";
    return 2;
  }
  const std::string mode = argv[2];
  torch::set_num_threads(1);
  metaguard_bench::reset_peak_rss();
  const std::int64_t before = metaguard_bench::proc_status_bytes("VmRSS:");
  const auto start = std::chrono::steady_clock::now();
  metaguard::SafetensorsOptions options;
  // What from_pretrained asks for when everything is read in place on the CPU.
  options.populate = mode == "zero-copy";
  const auto checkpoint = metaguard::open_checkpoint(argv[1], options);
  std::vector<torch::Tensor> loaded;
  for (const auto &name : checkpoint->names())
    loaded.push_back(mode == "bf16" ? checkpoint->tensor(name, torch::kBFloat16) : checkpoint->tensor(name));
  const double seconds = metaguard_bench::seconds_since(start);
  const std::int64_t peak = metaguard_bench::proc_status_bytes("VmHWM:") - before;
  std::printf("%.4f %lld\n", seconds, static_cast<long long>(peak));
  return 0;
}
