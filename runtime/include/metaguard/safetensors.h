// One safetensors file: validated on open, tensors read by name.
//
// Reading maps the file privately (copy-on-write): tensors whose dtype and
// alignment allow it point straight into the mapping, so loading copies
// nothing, and writing to such a tensor changes only this process's copy of
// the page, never the file. Such a tensor still depends on the file: if
// another process truncates it, touching the lost pages raises SIGBUS.
// metaguard's own reads of mapped bytes turn that into a FormatError naming
// the file; SafetensorsOptions::copy_on_load makes tensors independent. Every malformed input gives a FormatError naming
// the file, the tensor (when there is one) and the reason.
#pragma once

#include <metaguard/errors.h>
#include <metaguard/safetensors_header.h>

#include <torch/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace metaguard {

struct SafetensorsOptions {
  // Largest accepted JSON header, as in the reference implementation: a
  // corrupt length field must not make us allocate gigabytes.
  std::int64_t max_header_size = 100'000'000;
  // Fault every page in at open (MADV_POPULATE_READ on the writable private
  // mapping; on kernels without it, a read-only MAP_POPULATE mapping made
  // writable), so that loading the whole file costs one sequential pass
  // instead of a fault per page later. Off when only a few tensors will be
  // read.
  bool populate = false;
  // Hand out copies instead of views into the mapping: every tensor then owns
  // its memory and no longer depends on the file, so another process
  // truncating or rewriting the file cannot reach it (a mapped tensor would
  // die of SIGBUS). Costs a read of every tensor; for files on shared or
  // network file systems that others may rewrite.
  bool copy_on_load = false;
};

class SafetensorsFile;

namespace detail {
struct SafetensorsData;
// A file holding raw little-endian tensors at the given byte offsets from
// its start (the storages of a torch.save archive), read exactly as a
// safetensors file's data section is: mapped privately, zero-copy where
// aligned, converted in chunks. Entries may share bytes (views of one
// storage); each must lie inside the file. Throws FormatError naming `path`.
SafetensorsFile map_tensor_file(const std::filesystem::path &path, std::vector<TensorInfo> tensors,
                                const SafetensorsOptions &options);
} // namespace detail

class SafetensorsFile {
public:
  // Opens and validates `path`; throws FormatError.
  explicit SafetensorsFile(const std::filesystem::path &path,
                           const SafetensorsOptions &options = {});
  static SafetensorsFile open(const std::filesystem::path &path,
                              const SafetensorsOptions &options = {}) {
    return SafetensorsFile(path, options);
  }

  const std::filesystem::path &path() const;
  // Tensor names in file order (by offset).
  const std::vector<std::string> &names() const;
  bool contains(std::string_view name) const;
  // Throws FormatError naming the file when there is no such tensor.
  const TensorInfo &info(std::string_view name) const;
  // The header's __metadata__ (empty when absent).
  const std::map<std::string, std::string> &metadata() const;
  std::int64_t file_size() const;
  // Faults every page of the file into the mapping now (what
  // SafetensorsOptions::populate does at open); best effort, and safe to run
  // on another thread while this file's tensors are being read.
  void populate() const;
  // Byte offset of the data section in the file: 8 + header length.
  std::int64_t data_offset() const;

  // A CPU tensor with the file's dtype. Zero-copy (it keeps the mapping
  // alive) when the data is aligned for its dtype; otherwise a copy. Throws
  // FormatError naming tensor and dtype when LibTorch cannot hold the dtype.
  // Zero-copy tensors of one file share the file's one private mapping: two
  // calls for the same name return views of the same memory, so a write
  // through one shows in the other (never in the file). Use private_tensor
  // for a value nobody else can change.
  torch::Tensor tensor(std::string_view name) const;
  // A CPU tensor with the file's dtype whose memory nothing else shares: a
  // copy read from the file (below 8 MiB), or a copy-on-write mapping of its
  // own (8 MiB and up, where that is cheaper than copying). Writes to it change
  // nothing else, and writes to other tensors of this file never show in it.
  // What offloading hooks load.
  torch::Tensor private_tensor(std::string_view name) const;
  // private_tensor read with O_DIRECT, past the page cache
  // (OffloadReadMode::direct): always a copy. Undefined when the file's
  // filesystem refuses O_DIRECT (read it with private_tensor then).
  torch::Tensor direct_tensor(std::string_view name) const;
  // Each tensor as private_tensor gives it, but the ones that lie together in
  // the file (a layer's small tensors: norms, biases, projections below 8 MiB)
  // share one copy-on-write mapping of their stretch instead of a copy each:
  // no bytes are copied, and a write to one changes neither the others nor
  // the file. That memory goes back when the last of them dies.
  std::vector<torch::Tensor> private_tensors(const std::vector<std::string> &names) const;
  // The tensor converted to `dtype` and placed on `device`. When that is what
  // the file holds on the CPU this is tensor(name) (zero-copy); otherwise the
  // source bytes get a read-only mapping of their own for the time of the
  // conversion (read in chunks through a small buffer when they are
  // misaligned) and are converted straight into a fresh tensor, so memory
  // grows by the output plus at most this one tensor's source bytes.
  // Large CPU outputs get their own 4 KiB-page mapping, prefaulted in one
  // call (the fastest first touch in a fresh process; docs/benchmarks.md,
  // "Peer benchmark").
  torch::Tensor tensor(std::string_view name, torch::Dtype dtype,
                       torch::Device device = torch::kCPU) const;

private:
  explicit SafetensorsFile(std::shared_ptr<const detail::SafetensorsData> data)
      : data_(std::move(data)) {}
  friend SafetensorsFile detail::map_tensor_file(const std::filesystem::path &,
                                                 std::vector<TensorInfo>, const SafetensorsOptions &);
  std::shared_ptr<const detail::SafetensorsData> data_;
};

// Tensors to write, in any order: the file orders them itself.
using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

// Writes `tensors` as one safetensors file the way the reference writer
// does: tensors ordered by element size (largest first, which keeps every
// tensor aligned) then name, header padded with spaces to a multiple of 8,
// `metadata` as __metadata__. Atomic: written to a temporary file in the same
// folder, synced, then renamed over `file`; on failure `file` is untouched and
// the FormatError says why. Tensors may live on any device but the meta one.
void save_safetensors(const std::filesystem::path &file, const NamedTensors &tensors,
                      const std::map<std::string, std::string> &metadata = {
                          {"format", "pt"}});

} // namespace metaguard
