#include <metaguard/dtype.h>
#include <metaguard/safetensors.h>

#include "core/file_errors.h"
#include "formats/tensor_conversion.h"
#include "io/direct_read.h"
#include "io/mapped_read.h"
#include "io/mappings.h"
#include "io/posix_file.h"
#include "io/staging_pool.h"

#include <torch/torch.h>

#include <algorithm>
#include <optional>
#include <sys/stat.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian; big-endian hosts would need byte swaps"
#endif

namespace metaguard {
namespace detail {

struct SafetensorsData {
  std::filesystem::path path;
  std::int64_t file_size = 0;
  std::int64_t data_offset = 0;
  std::vector<TensorInfo> tensors; // sorted by offset
  std::vector<std::string> names;
  std::map<std::string, std::size_t, std::less<>> index;
  std::map<std::string, std::string> metadata;
  std::shared_ptr<Mapping> mapping;
  // Kept open for converting and private reads (pread, own mappings), which
  // bypass the shared mapping.
  UniqueFd fd;
  bool copy_on_load = false;
  // What errors call the file: the storages of a torch.save archive are
  // read here too.
  const char *label = "safetensors file";
};

} // namespace detail

namespace {

using detail::FormatKind;
using detail::SafetensorsData;

[[noreturn]] void fail_tensor(const SafetensorsData &data, const std::string &tensor,
                              FormatKind kind, const std::string &reason) {
  detail::fail_tensor(kind, data.label, data.path, tensor, reason);
}

void index_names(SafetensorsData &data) {
  for (std::size_t i = 0; i < data.tensors.size(); ++i) {
    data.names.push_back(data.tensors[i].name);
    data.index.emplace(data.tensors[i].name, i);
  }
}

// What opening either kind of file ends with: the names indexed, the whole
// file mapped (an empty one has nothing to map), the descriptor kept for the
// reads that bypass the mapping.
std::shared_ptr<const SafetensorsData> finish_open(std::shared_ptr<SafetensorsData> data,
                                                   detail::UniqueFd fd,
                                                   const SafetensorsOptions &options) {
  index_names(*data);
  if (data->file_size > 0)
    data->mapping = detail::map_whole_file(fd.get(), data->label, data->path,
                                           static_cast<std::size_t>(data->file_size),
                                           /*writable=*/true, options.populate);
  else
    data->mapping = std::make_shared<detail::Mapping>();
  data->fd = std::move(fd);
  data->copy_on_load = options.copy_on_load;
  return data;
}

std::shared_ptr<const SafetensorsData> open_file(const std::filesystem::path &path,
                                                 const SafetensorsOptions &options) {
  auto data = std::make_shared<SafetensorsData>();
  data->path = path;
  detail::UniqueFd fd = detail::open_regular_file(path, data->label, data->file_size);
  std::string start(static_cast<std::size_t>(std::min<std::int64_t>(
                        data->file_size, static_cast<std::int64_t>(kSafetensorsProbeBytes))),
                    '\0');
  detail::read_exact(fd.get(), path, start.data(), start.size(), 0);
  const std::uint64_t n =
      safetensors_header_length(start, data->file_size, options.max_header_size, path);
  std::string header(n, '\0');
  detail::read_exact(fd.get(), path, header.data(), header.size(), 8);
  SafetensorsHeader parsed = parse_safetensors_header(header, data->file_size, path);
  data->data_offset = parsed.data_offset;
  data->tensors = std::move(parsed.tensors);
  data->metadata = std::move(parsed.metadata);
  return finish_open(std::move(data), std::move(fd), options);
}

std::shared_ptr<const SafetensorsData> open_tensor_file(const std::filesystem::path &path,
                                                        std::vector<TensorInfo> tensors,
                                                        const SafetensorsOptions &options) {
  auto data = std::make_shared<SafetensorsData>();
  data->path = path;
  data->label = "PyTorch checkpoint";
  detail::UniqueFd fd = detail::open_regular_file(path, data->label, data->file_size);
  detail::check_tensor_ranges(tensors, data->file_size, data->label, path);
  data->tensors = std::move(tensors);
  return finish_open(std::move(data), std::move(fd), options);
}

// Where `info`'s bytes are, for the shared readers and checks.
detail::TensorBytes bytes_of(const SafetensorsData &data, const TensorInfo &info) {
  return {data.fd.get(), data.path, data.label, data.data_offset, info};
}

// A file shorter now than when it was opened was truncated or rewritten in
// place by another process: its mapped pages past the new end would raise
// SIGBUS. Cheap (one fstat), so done before every read of a tensor.
void check_unchanged_size(const SafetensorsData &data, const TensorInfo &info) {
  struct stat st {};
  if (::fstat(data.fd.get(), &st) == 0 && st.st_size < data.file_size)
    detail::throw_truncated(data.path, "tensor '" + info.name + "' (the file is now " +
                                           std::to_string(st.st_size) + " bytes, it was " +
                                           std::to_string(data.file_size) + " when opened)");
}

torch::Dtype loadable_dtype(const SafetensorsData &data, const TensorInfo &info) {
  const auto dtype = torch_dtype_from_safetensors(info.dtype);
  if (!dtype)
    fail_tensor(data, info.name, FormatKind::unsupported,
                "dtype " + info.dtype +
                    " has no LibTorch 1.13 equivalent, so it cannot be loaded (the file's "
                    "other tensors can still be read by name)");
  return *dtype;
}

// A CPU tensor with the bytes of `info` read from the file (pread): memory of
// its own, which shares nothing with the mapping or the file.
torch::Tensor read_copy(const SafetensorsData &data, const TensorInfo &info, torch::Dtype dtype) {
  torch::Tensor copy;
  if (static_cast<std::size_t>(info.nbytes()) <= detail::StagingPool::kLargest) {
    // Small reads are many (every bias and norm of a block): reused buffers.
    copy = detail::read_staged(data.fd.get(), data.path, info.shape, dtype, data.data_offset + info.begin);
  } else {
    copy = detail::empty_cpu(info.shape, dtype);
    detail::read_exact(data.fd.get(), data.path, copy.data_ptr(), static_cast<std::size_t>(info.nbytes()),
                       data.data_offset + info.begin);
  }
  if (dtype == torch::kBool)
    detail::check_bool_bytes(bytes_of(data, info), static_cast<const char *>(copy.data_ptr()), info.nbytes());
  return copy;
}

// Below this size a private tensor is a copy, from it a mapping of its own:
// a fresh mapping costs a few syscalls and page-table set-up (~0.3-0.6 ms
// here), a copy grows with the size; they meet around 8 MiB
// (bench/bench_private_tensor.cpp, docs/benchmarks.md "Private tensors").
// The staging pool's largest buffer is sized for exactly the copies below
// this threshold, and offload folders switch to mapping at it too: one
// constant, so the three cannot drift apart.
constexpr auto kPrivateMappingFrom = static_cast<std::int64_t>(detail::StagingPool::kLargest);

// A private mapping of the data section's bytes [offset, offset + size).
std::shared_ptr<detail::Mapping> map_private_range(const SafetensorsData &data, std::int64_t offset,
                                                   std::int64_t size, const std::string &what) {
  return detail::map_private_range(data.fd.get(), data.path, data.file_size, offset, size, what);
}

// `info`'s tensor in `mapping`, which lives as long as the last tensor made
// from it. Null when its bytes are not aligned for their dtype there.
torch::Tensor tensor_in(const SafetensorsData &data, const TensorInfo &info, torch::Dtype dtype,
                        const std::shared_ptr<detail::Mapping> &mapping) {
  char *bytes = mapping->at(data.data_offset + info.begin);
  if (reinterpret_cast<std::uintptr_t>(bytes) % c10::elementSize(dtype) != 0)
    return {};
  if (dtype == torch::kBool)
    detail::check_bool_bytes(bytes_of(data, info), bytes, info.nbytes());
  return torch::from_blob(
      bytes, info.shape, [mapping](void *) {}, torch::TensorOptions().dtype(dtype));
}

// The bytes of `info` in a copy-on-write mapping made for this tensor only.
// Null when the bytes cannot be mapped aligned for their dtype.
torch::Tensor map_private(const SafetensorsData &data, const TensorInfo &info, torch::Dtype dtype) {
  const std::int64_t offset = data.data_offset + info.begin;
  if (offset % static_cast<std::int64_t>(c10::elementSize(dtype)) != 0) // mappings start on pages
    return {};
  const auto mapping = map_private_range(data, offset, info.nbytes(), "tensor '" + info.name + "'");
  if (!mapping)
    return {};
  return tensor_in(data, info, dtype, mapping);
}

} // namespace

SafetensorsFile::SafetensorsFile(const std::filesystem::path &path,
                                 const SafetensorsOptions &options)
    : data_(open_file(path, options)) {}

const std::filesystem::path &SafetensorsFile::path() const { return data_->path; }
const std::vector<std::string> &SafetensorsFile::names() const { return data_->names; }
const std::map<std::string, std::string> &SafetensorsFile::metadata() const {
  return data_->metadata;
}
std::int64_t SafetensorsFile::file_size() const { return data_->file_size; }
std::int64_t SafetensorsFile::data_offset() const { return data_->data_offset; }
void SafetensorsFile::populate() const { detail::populate_mapping(*data_->mapping); }

bool SafetensorsFile::contains(std::string_view name) const {
  return data_->index.find(name) != data_->index.end();
}

const TensorInfo &SafetensorsFile::info(std::string_view name) const {
  const auto it = data_->index.find(name);
  if (it == data_->index.end())
    fail_tensor(*data_, std::string(name), FormatKind::missing, "no tensor of that name in the file");
  return data_->tensors[it->second];
}

torch::Tensor SafetensorsFile::tensor(std::string_view name) const {
  const TensorInfo &info = this->info(name);
  const torch::Dtype dtype = loadable_dtype(*data_, info);
  const auto options = torch::TensorOptions().dtype(dtype);
  if (info.nbytes() == 0)
    return torch::empty(info.shape, options);
  check_unchanged_size(*data_, info);
  if (data_->copy_on_load)
    return read_copy(*data_, info, dtype);
  char *bytes = data_->mapping->at(data_->data_offset + info.begin);
  if (dtype == torch::kBool)
    detail::check_bool_bytes(bytes_of(*data_, info), bytes, info.nbytes());
  const auto element_size = static_cast<std::uintptr_t>(c10::elementSize(dtype));
  if (reinterpret_cast<std::uintptr_t>(bytes) % element_size == 0) {
    auto keep_alive = data_->mapping;
    return torch::from_blob(
        bytes, info.shape, [keep_alive](void *) {}, options);
  }
  // Misaligned (writers that do not pad, such as old reference versions):
  // LibTorch kernels assume aligned elements, so copy.
  return read_copy(*data_, info, dtype);
}

torch::Tensor SafetensorsFile::private_tensor(std::string_view name) const {
  const TensorInfo &info = this->info(name);
  const torch::Dtype dtype = loadable_dtype(*data_, info);
  if (info.nbytes() == 0)
    return torch::empty(info.shape, torch::TensorOptions().dtype(dtype));
  check_unchanged_size(*data_, info);
  if (info.nbytes() >= kPrivateMappingFrom && !data_->copy_on_load)
    if (auto mapped = map_private(*data_, info, dtype); mapped.defined())
      return mapped;
  return read_copy(*data_, info, dtype);
}

torch::Tensor SafetensorsFile::direct_tensor(std::string_view name) const {
  const TensorInfo &info = this->info(name);
  const torch::Dtype dtype = loadable_dtype(*data_, info);
  if (info.nbytes() == 0)
    return {};
  check_unchanged_size(*data_, info);
  torch::Tensor copy = detail::read_direct<FormatError>(data_->path, data_->data_offset + info.begin, info.nbytes(),
                                                        info.shape, dtype, "tensor '" + info.name + "'");
  if (copy.defined() && dtype == torch::kBool)
    detail::check_bool_bytes(bytes_of(*data_, info), static_cast<const char *>(copy.data_ptr()), info.nbytes());
  return copy;
}

namespace {
// The stretch [begin, end) of the data section from the first to the last of
// `infos`, when one mapping of it suits them all: they share no bytes (views
// of one storage in a torch.save archive would then share memory), and the
// stretch is mostly theirs (far apart, it would map and populate everything
// between them). Otherwise nothing.
std::optional<std::pair<std::int64_t, std::int64_t>> shared_stretch(std::vector<const TensorInfo *> infos) {
  std::sort(infos.begin(), infos.end(),
            [](const TensorInfo *a, const TensorInfo *b) { return a->begin < b->begin; });
  std::int64_t bytes = 0;
  for (std::size_t i = 0; i < infos.size(); ++i) {
    if (i > 0 && infos[i]->begin < infos[i - 1]->end)
      return std::nullopt;
    bytes += infos[i]->nbytes();
  }
  const std::int64_t begin = infos.front()->begin;
  const std::int64_t end = infos.back()->end;
  if (end <= begin || end - begin > 2 * bytes)
    return std::nullopt;
  return std::make_pair(begin, end);
}
} // namespace

std::vector<torch::Tensor> SafetensorsFile::private_tensors(const std::vector<std::string> &names) const {
  std::vector<const TensorInfo *> infos;
  for (const auto &name : names)
    infos.push_back(&info(name));
  std::shared_ptr<detail::Mapping> mapping;
  const auto stretch = names.size() < 2 || data_->copy_on_load ? std::nullopt : shared_stretch(infos);
  if (stretch) {
    check_unchanged_size(*data_, *infos.front()); // one file: one size to check for all
    const std::int64_t begin = data_->data_offset + stretch->first;
    mapping = map_private_range(*data_, begin, stretch->second - stretch->first,
                                std::to_string(names.size()) + " tensors from '" + names.front() + "'");
  }
  std::vector<torch::Tensor> tensors(names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (mapping && infos[i]->nbytes() > 0)
      tensors[i] = tensor_in(*data_, *infos[i], loadable_dtype(*data_, *infos[i]), mapping);
    if (!tensors[i].defined())
      tensors[i] = private_tensor(names[i]); // empty, misaligned, or no mapping to be had
  }
  return tensors;
}

torch::Tensor SafetensorsFile::tensor(std::string_view name, torch::Dtype dtype,
                                      torch::Device device) const {
  const TensorInfo &info = this->info(name);
  const torch::Dtype source = loadable_dtype(*data_, info);
  if (source == dtype && device.is_cpu())
    return tensor(name);
  auto out = device.is_cpu() ? detail::empty_cpu(info.shape, dtype)
                             : torch::empty(info.shape, torch::TensorOptions().dtype(dtype).device(device));
  if (info.nbytes() > 0 && !device.is_meta()) {
    check_unchanged_size(*data_, info);
    detail::read_converted(bytes_of(*data_, info), source, out);
  }
  return out;
}

namespace detail {

SafetensorsFile map_tensor_file(const std::filesystem::path &path, std::vector<TensorInfo> tensors,
                                const SafetensorsOptions &options) {
  return SafetensorsFile(open_tensor_file(path, std::move(tensors), options));
}

} // namespace detail

} // namespace metaguard
