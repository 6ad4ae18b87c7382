#include <metaguard/dtype.h>
#include <metaguard/safetensors.h>

#include "json_strict.h"
#include "mapped_read.h"
#include "posix_file.h"
#include "private_mapping.h"
#include "direct_read.h"
#include "staging_pool.h"

#include <torch/torch.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <optional>
#include <sstream>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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

using detail::SafetensorsData;

constexpr std::string_view kLfsPointerStart = "version https://git-lfs.github.com/spec/";

std::string shape_text(const std::vector<std::int64_t> &shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

[[noreturn]] void fail(const std::filesystem::path &path, const std::string &reason) {
  throw FormatError("safetensors file '" + path.string() + "': " + reason);
}

[[noreturn]] void fail_tensor(const std::filesystem::path &path, const std::string &tensor,
                              const std::string &reason) {
  fail(path, "tensor '" + tensor + "': " + reason);
}

[[noreturn]] void fail(const SafetensorsData &data, const std::string &reason) {
  throw FormatError(std::string(data.label) + " '" + data.path.string() + "': " + reason);
}

[[noreturn]] void fail_tensor(const SafetensorsData &data, const std::string &tensor,
                              const std::string &reason) {
  fail(data, "tensor '" + tensor + "': " + reason);
}

// Bytes taken by `shape` elements of `bits` bits each, with every product
// checked: a hostile header must not wrap around and pass validation.
std::optional<std::uint64_t> checked_nbytes(const std::vector<std::int64_t> &shape, int bits,
                                            bool *whole_bytes) {
  std::uint64_t elements = 1;
  bool empty = false;
  for (const std::int64_t dim : shape) {
    if (dim == 0) {
      empty = true;
      continue;
    }
    // Nonzero dims must multiply within int64 even for an empty tensor:
    // LibTorch computes that product too.
    if (__builtin_mul_overflow(elements, static_cast<std::uint64_t>(dim), &elements) ||
        elements > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      return std::nullopt;
  }
  if (empty)
    elements = 0;
  std::uint64_t total_bits = 0;
  if (__builtin_mul_overflow(elements, static_cast<std::uint64_t>(bits), &total_bits))
    return std::nullopt;
  *whole_bytes = total_bits % 8 == 0;
  return total_bits / 8;
}

std::int64_t json_index(const std::filesystem::path &path, const std::string &tensor,
                        const nlohmann::json &value, const char *field) {
  if (!value.is_number_unsigned() ||
      value.get<std::uint64_t>() >
          static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    fail_tensor(path, tensor, std::string("\"") + field +
                                  "\" must hold non-negative integers below 2^63, found " +
                                  value.dump());
  return value.get<std::int64_t>();
}

TensorInfo parse_tensor_entry(const std::filesystem::path &path, const std::string &name,
                              const nlohmann::json &entry) {
  if (!entry.is_object())
    fail_tensor(path, name, "header entry is not a JSON object: " + entry.dump());
  for (const char *field : {"dtype", "shape", "data_offsets"})
    if (!entry.contains(field))
      fail_tensor(path, name, std::string("header entry has no \"") + field + "\"");
  TensorInfo info;
  info.name = name;
  const auto &dtype = entry["dtype"];
  if (!dtype.is_string())
    fail_tensor(path, name, "\"dtype\" is not a string: " + dtype.dump());
  info.dtype = dtype.get<std::string>();
  if (!safetensors_dtype_bits(info.dtype))
    fail_tensor(path, name, "unknown dtype '" + info.dtype + "'");
  const auto &shape = entry["shape"];
  if (!shape.is_array())
    fail_tensor(path, name, "\"shape\" is not an array: " + shape.dump());
  for (const auto &dim : shape)
    info.shape.push_back(json_index(path, name, dim, "shape"));
  const auto &offsets = entry["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2)
    fail_tensor(path, name, "\"data_offsets\" is not an array [begin, end]: " + offsets.dump());
  info.begin = json_index(path, name, offsets[0], "data_offsets");
  info.end = json_index(path, name, offsets[1], "data_offsets");
  return info;
}

std::map<std::string, std::string> parse_metadata(const std::filesystem::path &path,
                                                  const nlohmann::json &value) {
  std::map<std::string, std::string> metadata;
  if (value.is_null())
    return metadata;
  if (!value.is_object())
    fail(path, "__metadata__ must be an object of strings, found " + value.dump());
  for (const auto &[key, item] : value.items()) {
    if (!item.is_string())
      fail(path, "__metadata__ value of \"" + key + "\" must be a string, found " +
                     std::string(item.type_name()) + " " + item.dump());
    metadata.emplace(key, item.get<std::string>());
  }
  return metadata;
}

void parse_header(SafetensorsData &data, std::string_view header) {
  if (const auto bad = detail::find_invalid_utf8(header))
    fail(data, "header is not valid UTF-8 (byte " + std::to_string(*bad + 8) +
                        " of the file)");
  nlohmann::json json;
  try {
    json = detail::parse_json_strict(header);
  } catch (const std::runtime_error &e) {
    fail(data, std::string("header is not usable JSON: ") + e.what());
  }
  if (!json.is_object())
    fail(data, "header is not a JSON object");
  for (const auto &[key, value] : json.items()) {
    if (key == "__metadata__")
      data.metadata = parse_metadata(data.path, value);
    else
      data.tensors.push_back(parse_tensor_entry(data.path, key, value));
  }
}

// The reference's layout rules: sorted by offset, tensors tile the data
// section exactly from 0 to its end, each slice the size its shape needs.
void validate_layout(SafetensorsData &data) {
  auto &tensors = data.tensors;
  std::sort(tensors.begin(), tensors.end(), [](const TensorInfo &a, const TensorInfo &b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  const std::int64_t data_size = data.file_size - data.data_offset;
  std::int64_t expected = 0;
  const std::string *previous = nullptr;
  for (const auto &t : tensors) {
    const std::string offsets =
        "data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) + "]";
    if (t.end < t.begin)
      fail_tensor(data, t.name, offsets + " end before they begin");
    if (t.begin > expected)
      fail_tensor(data, t.name,
                  offsets + " leave a gap: data bytes [" + std::to_string(expected) + ", " +
                      std::to_string(t.begin) + ") belong to no tensor");
    if (t.begin < expected)
      fail_tensor(data, t.name,
                  offsets + " overlap tensor '" + *previous + "', which ends at " +
                      std::to_string(expected));
    bool whole_bytes = true;
    const std::optional<int> bits = safetensors_dtype_bits(t.dtype);
    if (!bits)
      fail_tensor(data, t.name, "has the unknown dtype '" + t.dtype + "'");
    const auto needed = checked_nbytes(t.shape, *bits, &whole_bytes);
    if (!needed)
      fail_tensor(data, t.name,
                  "shape " + shape_text(t.shape) + " of " + t.dtype + " overflows 64-bit sizes");
    if (!whole_bytes)
      fail_tensor(data, t.name,
                  "shape " + shape_text(t.shape) + " of " + t.dtype +
                      " does not fill a whole number of bytes");
    if (*needed != static_cast<std::uint64_t>(t.end - t.begin))
      fail_tensor(data, t.name,
                  "shape " + shape_text(t.shape) + " of " + t.dtype + " needs " +
                      std::to_string(*needed) + " bytes but " + offsets + " hold " +
                      std::to_string(t.end - t.begin));
    expected = t.end;
    previous = &t.name;
  }
  if (expected > data_size)
    fail(data, "tensors need " + std::to_string(expected) +
                        " bytes of data but the file holds only " + std::to_string(data_size) +
                        " after the header (truncated file?)");
  if (expected < data_size)
    fail(data, "the file has " + std::to_string(data_size - expected) +
                        " bytes after the end of the last tensor");
}

void index_names(SafetensorsData &data) {
  for (std::size_t i = 0; i < data.tensors.size(); ++i) {
    data.names.push_back(data.tensors[i].name);
    data.index.emplace(data.tensors[i].name, i);
  }
}

std::uint64_t read_header_length(int fd, const SafetensorsData &data) {
  const std::size_t probe_size =
      static_cast<std::size_t>(std::min<std::int64_t>(data.file_size, kLfsPointerStart.size()));
  std::string probe(probe_size, '\0');
  detail::read_exact(fd, data.path, probe.data(), probe.size(), 0);
  if (probe == kLfsPointerStart)
    fail(data, "this is a git-lfs pointer file (" + std::to_string(data.file_size) +
                        " bytes of text), not the weights: the checkpoint was cloned without "
                        "git-lfs; run `git lfs install && git lfs pull` in its repository or "
                        "download the files with huggingface_hub");
  if (data.file_size < 8)
    fail(data, "the file is " + std::to_string(data.file_size) +
                        " bytes long, too short for the 8-byte header length");
  unsigned char length[8];
  detail::read_exact(fd, data.path, length, sizeof length, 0);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | length[i];
  return n;
}

// Faults the pages of an open file's mapping in, for SafetensorsFile::populate:
// MADV_POPULATE_READ (Linux 5.14) maps the page-cache pages read-only without
// breaking copy-on-write. Best effort: without it, the kernel is only asked to
// read the file ahead (MADV_WILLNEED) and the pages fault in on first use.
void populate_mapping(const detail::Mapping &mapping) {
#ifdef MADV_POPULATE_READ
  ::madvise(mapping.address, mapping.size, MADV_POPULATE_READ);
#else
  ::madvise(mapping.address, mapping.size, MADV_WILLNEED);
#endif
}

// Maps the file privately (copy-on-write) and writable. With `populate`,
// every page is faulted in now without breaking copy-on-write: MAP_POPULATE on
// a writable private mapping would fault it for writing, i.e. copy the whole
// file. MADV_POPULATE_READ (Linux 5.14) maps the page-cache pages as they are;
// where it is missing or refused, a read-only MAP_POPULATE mapping is made
// writable afterwards (slower: mprotect walks every page).
std::shared_ptr<detail::Mapping> map_file(int fd, const SafetensorsData &data, bool populate) {
  auto mapping = std::make_shared<detail::Mapping>();
  mapping->size = static_cast<std::size_t>(data.file_size);
  mapping->address = ::mmap(nullptr, mapping->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  if (mapping->address == MAP_FAILED) {
    mapping->address = nullptr;
    fail(data, "cannot map the file: " + detail::errno_text(errno));
  }
  if (!populate)
    return mapping;
#ifdef MADV_POPULATE_READ
  if (::madvise(mapping->address, mapping->size, MADV_POPULATE_READ) == 0)
    return mapping;
#endif
  ::munmap(mapping->address, mapping->size);
  mapping->address = ::mmap(nullptr, mapping->size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  if (mapping->address == MAP_FAILED) {
    mapping->address = nullptr;
    fail(data, "cannot map the file: " + detail::errno_text(errno));
  }
  if (::mprotect(mapping->address, mapping->size, PROT_READ | PROT_WRITE) != 0)
    fail(data, "cannot make the private mapping writable: " + detail::errno_text(errno));
  return mapping;
}

std::shared_ptr<const SafetensorsData> open_file(const std::filesystem::path &path,
                                                 const SafetensorsOptions &options) {
  auto data = std::make_shared<SafetensorsData>();
  data->path = path;
  detail::UniqueFd fd = detail::open_regular_file(path, data->label, data->file_size);
  const std::uint64_t n = read_header_length(fd.get(), *data);
  if (n > static_cast<std::uint64_t>(options.max_header_size))
    fail(path, "header length " + std::to_string(n) + " exceeds the limit of " +
                   std::to_string(options.max_header_size) +
                   " bytes (SafetensorsOptions::max_header_size); the file is corrupt or not "
                   "safetensors");
  if (n > static_cast<std::uint64_t>(data->file_size - 8))
    fail(path, "header length " + std::to_string(n) + " runs past the end of the file (" +
                   std::to_string(data->file_size) + " bytes)");
  data->data_offset = 8 + static_cast<std::int64_t>(n);
  std::string header(n, '\0');
  detail::read_exact(fd.get(), path, header.data(), header.size(), 8);
  parse_header(*data, header);
  validate_layout(*data);
  index_names(*data);
  data->mapping = map_file(fd.get(), *data, options.populate);
  data->fd = std::move(fd);
  data->copy_on_load = options.copy_on_load;
  return data;
}

std::shared_ptr<const SafetensorsData> open_tensor_file(const std::filesystem::path &path,
                                                        std::vector<TensorInfo> tensors,
                                                        const SafetensorsOptions &options) {
  auto data = std::make_shared<SafetensorsData>();
  data->path = path;
  data->label = "PyTorch checkpoint";
  detail::UniqueFd fd = detail::open_regular_file(path, data->label, data->file_size);
  for (const auto &t : tensors) {
    const std::optional<int> bits = safetensors_dtype_bits(t.dtype);
    bool whole_bytes = true;
    const auto needed = bits ? checked_nbytes(t.shape, *bits, &whole_bytes) : std::nullopt;
    if (!needed || !whole_bytes || t.begin < 0 || t.end < t.begin ||
        *needed != static_cast<std::uint64_t>(t.end - t.begin))
      fail_tensor(*data, t.name, "its bytes [" + std::to_string(t.begin) + ", " +
                                    std::to_string(t.end) + ") do not hold shape " +
                                    shape_text(t.shape) + " of " + t.dtype);
    if (t.end > data->file_size)
      fail_tensor(*data, t.name, "its bytes end at " + std::to_string(t.end) + ", past the end of the " +
                                    std::to_string(data->file_size) + "-byte file (truncated file?)");
  }
  data->tensors = std::move(tensors);
  index_names(*data);
  if (data->file_size > 0)
    data->mapping = map_file(fd.get(), *data, options.populate);
  else
    data->mapping = std::make_shared<detail::Mapping>();
  data->fd = std::move(fd);
  data->copy_on_load = options.copy_on_load;
  return data;
}

// LibTorch's BOOL is one byte holding 0 or 1; other bytes are undefined
// behaviour in its kernels, so they are rejected rather than loaded.
void check_bool_bytes(const SafetensorsData &data, const TensorInfo &info, const char *bytes,
                      std::int64_t count, std::int64_t first = 0) {
  std::int64_t bad = -1;
  detail::guard_mapped_read(data.path, "tensor '" + info.name + "'", [&] {
    for (std::int64_t i = 0; i < count && bad < 0; ++i)
      if (static_cast<unsigned char>(bytes[i]) > 1)
        bad = i;
  });
  if (bad >= 0)
    fail_tensor(data, info.name,
                "BOOL element " + std::to_string(first + bad) + " is byte " +
                    std::to_string(static_cast<unsigned char>(bytes[bad])) +
                    "; only 0 and 1 are booleans");
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

// A CPU tensor with the bytes of `info` read from the file (pread): memory of
// its own, which shares nothing with the mapping or the file.
torch::Tensor read_copy(const SafetensorsData &data, const TensorInfo &info, torch::Dtype dtype);

torch::Dtype loadable_dtype(const SafetensorsData &data, const TensorInfo &info) {
  const auto dtype = torch_dtype_from_safetensors(info.dtype);
  if (!dtype)
    fail_tensor(data, info.name,
                "dtype " + info.dtype +
                    " has no LibTorch 1.13 equivalent, so it cannot be loaded (the file's "
                    "other tensors can still be read by name)");
  return *dtype;
}

// A fresh CPU tensor for a converted read. From 1 MiB up it gets its own
// anonymous mapping in 4 KiB pages, faulted in by the kernel in one call
// (MADV_POPULATE_WRITE) before the conversion writes it. Chosen by
// measurement in fresh processes (docs/benchmarks.md, "Peer benchmark"):
// transparent huge pages win back to back in one process, but on VMs that
// hand freed huge pages back to the host a fresh process pays several times
// more for them than for 4 KiB pages, and a fresh process is how users load.
// Falls back to LibTorch's allocator when the kernel refuses.
torch::Tensor empty_cpu(const std::vector<std::int64_t> &shape, torch::Dtype dtype) {
  constexpr std::size_t kLarge = std::size_t{1} << 20;
  const auto options = torch::TensorOptions().dtype(dtype);
  const std::size_t bytes =
      static_cast<std::size_t>(c10::multiply_integers(shape)) * c10::elementSize(dtype);
  if (bytes < kLarge)
    return torch::empty(shape, options);
  void *memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED)
    return torch::empty(shape, options);
#ifdef MADV_NOHUGEPAGE
  // Also where THP is "always": the same 4 KiB pages on every machine.
  ::madvise(memory, bytes, MADV_NOHUGEPAGE);
#endif
#ifdef MADV_POPULATE_WRITE
  ::madvise(memory, bytes, MADV_POPULATE_WRITE); // best effort: else faulted on write
#endif
  return torch::from_blob(
      memory, shape, [bytes](void *p) { ::munmap(p, bytes); }, options);
}

// float32 -> bfloat16 with c10::BFloat16's rounding (nearest, ties to even;
// NaN -> 0x7FC0, as its scalar conversion does). Written so that it
// vectorises: converting loads are meant to cost little more than faulting in
// their output, and LibTorch's copy_ was twice as slow here.
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("O3")))
#endif
void float_to_bfloat16(const float *__restrict in, std::uint16_t *__restrict out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &in[i], sizeof bits);
    const std::uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
    out[i] = (bits & 0x7FFFFFFFu) > 0x7F800000u ? std::uint16_t{0x7FC0}
                                                : static_cast<std::uint16_t>(rounded);
  }
}

// Fills `out` with the tensor's values, reading the file in chunks through
// a small buffer.
void read_converted_in_chunks(const SafetensorsData &data, const TensorInfo &info,
                              torch::Dtype source, torch::Tensor &out) {
  constexpr std::int64_t kChunkBytes = std::int64_t{8} << 20;
  const std::int64_t element = static_cast<std::int64_t>(c10::elementSize(source));
  const std::int64_t total = info.nbytes() / element;
  const std::int64_t chunk = std::max<std::int64_t>(1, std::min(total, kChunkBytes / element));
  auto buffer = torch::empty({chunk}, torch::TensorOptions().dtype(source));
  auto flat = out.view({-1});
  for (std::int64_t first = 0; first < total; first += chunk) {
    const std::int64_t count = std::min(chunk, total - first);
    detail::read_exact(data.fd.get(), data.path, buffer.data_ptr(),
                       static_cast<std::size_t>(count * element),
                       data.data_offset + info.begin + first * element);
    if (source == torch::kBool)
      check_bool_bytes(data, info, static_cast<const char *>(buffer.data_ptr()), count, first);
    flat.narrow(0, first, count).copy_(buffer.narrow(0, 0, count));
  }
}

// Fills `out` (any dtype, any device) with the tensor's values. The source
// bytes are mapped on their own, read-only and populated, for the time of
// the conversion only: no copy into a buffer, and they leave the process's
// memory as soon as the tensor is converted (peak: the output plus this one
// tensor). Falls back to chunked pread when the bytes are misaligned.
void read_converted(const SafetensorsData &data, const TensorInfo &info, torch::Dtype source,
                    torch::Tensor &out) {
  const auto page = static_cast<std::int64_t>(::sysconf(_SC_PAGESIZE));
  const std::int64_t offset = data.data_offset + info.begin;
  const std::int64_t start = offset / page * page;
  const auto length = static_cast<std::size_t>(offset + info.nbytes() - start);
  const std::int64_t element = static_cast<std::int64_t>(c10::elementSize(source));
  if ((offset - start) % element == 0) {
    void *address = ::mmap(nullptr, length, PROT_READ, MAP_PRIVATE | MAP_POPULATE, data.fd.get(), start);
    if (address != MAP_FAILED) {
      struct Unmap {
        void *address;
        std::size_t length;
        ~Unmap() { ::munmap(address, length); }
      } unmap{address, length};
      const char *bytes = static_cast<const char *>(address) + (offset - start);
      // MAP_POPULATE stops silently at the end of a truncated file.
      detail::probe_mapped(data.path, "tensor '" + info.name + "'", bytes,
                           static_cast<std::size_t>(info.nbytes()));
      if (source == torch::kBool)
        check_bool_bytes(data, info, bytes, info.nbytes());
      if (source == torch::kFloat32 && out.scalar_type() == torch::kBFloat16 &&
          out.device().is_cpu() && out.is_contiguous())
        float_to_bfloat16(reinterpret_cast<const float *>(bytes),
                          static_cast<std::uint16_t *>(out.data_ptr()), out.numel());
      else
        out.copy_(torch::from_blob(const_cast<char *>(bytes), info.shape,
                                   torch::TensorOptions().dtype(source)));
      return;
    }
  }
  read_converted_in_chunks(data, info, source, out);
}

torch::Tensor read_copy(const SafetensorsData &data, const TensorInfo &info, torch::Dtype dtype) {
  torch::Tensor copy;
  if (static_cast<std::size_t>(info.nbytes()) <= detail::StagingPool::kLargest) {
    // Small reads are many (every bias and norm of a block): reused buffers.
    copy = detail::read_staged(data.fd.get(), data.path, info.shape, dtype, data.data_offset + info.begin);
  } else {
    copy = empty_cpu(info.shape, dtype);
    detail::read_exact(data.fd.get(), data.path, copy.data_ptr(), static_cast<std::size_t>(info.nbytes()),
                       data.data_offset + info.begin);
  }
  if (dtype == torch::kBool)
    check_bool_bytes(data, info, static_cast<const char *>(copy.data_ptr()), info.nbytes());
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
    check_bool_bytes(data, info, bytes, info.nbytes());
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
void SafetensorsFile::populate() const { populate_mapping(*data_->mapping); }

bool SafetensorsFile::contains(std::string_view name) const {
  return data_->index.find(name) != data_->index.end();
}

const TensorInfo &SafetensorsFile::info(std::string_view name) const {
  const auto it = data_->index.find(name);
  if (it == data_->index.end())
    fail_tensor(*data_, std::string(name), "no tensor of that name in the file");
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
    check_bool_bytes(*data_, info, bytes, info.nbytes());
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
    check_bool_bytes(*data_, info, static_cast<const char *>(copy.data_ptr()), info.nbytes());
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
  auto out = device.is_cpu() ? empty_cpu(info.shape, dtype)
                             : torch::empty(info.shape, torch::TensorOptions().dtype(dtype).device(device));
  if (info.nbytes() > 0 && !device.is_meta()) {
    check_unchanged_size(*data_, info);
    read_converted(*data_, info, source, out);
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
