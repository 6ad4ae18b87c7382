// Private to the library: turning a tensor's bytes in an open file into a
// LibTorch tensor of another dtype or device, and the checks of raw bytes
// that every reader shares. Format readers locate the bytes; this unit reads
// and converts them, whatever the format.
#pragma once

#include <metaguard/safetensors_header.h>

#include <torch/types.h>

#include <cstdint>
#include <filesystem>
#include <string_view>
#include <vector>

namespace metaguard::detail {

// Where one tensor's bytes are: `info` in the file open as `fd`, its data
// section starting at byte `data_offset`. `what` names the kind of file in
// errors ("safetensors file").
struct TensorBytes {
  int fd;
  const std::filesystem::path &file;
  std::string_view what;
  std::int64_t data_offset;
  const TensorInfo &info;
  std::int64_t offset() const { return data_offset + info.begin; }
};

// A fresh CPU tensor for a converted read. Large ones get their own
// anonymous mapping in 4 KiB pages, faulted in by the kernel in one call
// before the conversion writes it: the fastest first touch in a fresh
// process, which is how users load (docs/benchmarks.md, "Peer benchmark").
torch::Tensor empty_cpu(const std::vector<std::int64_t> &shape, torch::Dtype dtype);

// LibTorch's BOOL is one byte holding 0 or 1; other bytes are undefined
// behaviour in its kernels, so they are rejected (FormatError naming the
// element) rather than loaded. `first` is the index of bytes[0].
void check_bool_bytes(const TensorBytes &source, const char *bytes, std::int64_t count,
                      std::int64_t first = 0);

// Fills `out` (any dtype, any device) with the values of `source`, held in
// the file as `dtype`. The source bytes are mapped on their own, read-only
// and populated, for the time of the conversion only (peak memory: the
// output plus this one tensor); read in chunks through a small buffer when
// they are misaligned for their dtype.
void read_converted(const TensorBytes &source, torch::Dtype dtype, torch::Tensor &out);

} // namespace metaguard::detail
