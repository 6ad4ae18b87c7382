#include <metaguard/dtype.h>
#include <metaguard/safetensors_header.h>

#include "core/file_errors.h"
#include "formats/json_strict.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <tuple>

namespace metaguard {
namespace {

using detail::FormatKind;

constexpr std::string_view kWhat = "safetensors file";
constexpr std::int64_t kLengthBytes = 8;

std::string shape_text(const std::vector<std::int64_t> &shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
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

// Parses one header with its file's name at hand for the errors.
class HeaderParser {
public:
  HeaderParser(const std::filesystem::path &file, std::int64_t file_size, std::int64_t data_offset)
      : file_(file), file_size_(file_size) {
    header_.data_offset = data_offset;
  }

  SafetensorsHeader parse(std::string_view header) {
    if (const auto bad = detail::find_invalid_utf8(header))
      fail("header is not valid UTF-8 (byte " + std::to_string(*bad + kLengthBytes) +
           " of the file)");
    nlohmann::json json;
    try {
      json = detail::parse_json_strict(header);
    } catch (const std::runtime_error &e) {
      fail(std::string("header is not usable JSON: ") + e.what());
    }
    if (!json.is_object())
      fail("header is not a JSON object");
    for (const auto &[key, value] : json.items()) {
      if (key == "__metadata__")
        parse_metadata(value);
      else
        header_.tensors.push_back(parse_entry(key, value));
    }
    validate_layout();
    return std::move(header_);
  }

private:
  [[noreturn]] void fail(const std::string &reason) const {
    detail::fail_file(FormatKind::malformed, kWhat, file_, reason);
  }
  [[noreturn]] void fail(const std::string &tensor, const std::string &reason,
                         FormatKind kind = FormatKind::malformed) const {
    detail::fail_tensor(kind, kWhat, file_, tensor, reason);
  }

  std::int64_t index(const std::string &tensor, const nlohmann::json &value, const char *field) const {
    if (!value.is_number_unsigned() ||
        value.get<std::uint64_t>() >
            static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      fail(tensor, std::string("\"") + field +
                       "\" must hold non-negative integers below 2^63, found " + value.dump());
    return value.get<std::int64_t>();
  }

  TensorInfo parse_entry(const std::string &name, const nlohmann::json &entry) const {
    if (!entry.is_object())
      fail(name, "header entry is not a JSON object: " + entry.dump());
    for (const char *field : {"dtype", "shape", "data_offsets"})
      if (!entry.contains(field))
        fail(name, std::string("header entry has no \"") + field + "\"");
    TensorInfo info;
    info.name = name;
    const auto &dtype = entry["dtype"];
    if (!dtype.is_string())
      fail(name, "\"dtype\" is not a string: " + dtype.dump());
    info.dtype = dtype.get<std::string>();
    if (!safetensors_dtype_bits(info.dtype))
      fail(name, "unknown dtype '" + info.dtype + "'");
    const auto &shape = entry["shape"];
    if (!shape.is_array())
      fail(name, "\"shape\" is not an array: " + shape.dump());
    for (const auto &dim : shape)
      info.shape.push_back(index(name, dim, "shape"));
    const auto &offsets = entry["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2)
      fail(name, "\"data_offsets\" is not an array [begin, end]: " + offsets.dump());
    info.begin = index(name, offsets[0], "data_offsets");
    info.end = index(name, offsets[1], "data_offsets");
    return info;
  }

  void parse_metadata(const nlohmann::json &value) {
    if (value.is_null())
      return;
    if (!value.is_object())
      fail("__metadata__ must be an object of strings, found " + value.dump());
    for (const auto &[key, item] : value.items()) {
      if (!item.is_string())
        fail("__metadata__ value of \"" + key + "\" must be a string, found " +
             std::string(item.type_name()) + " " + item.dump());
      header_.metadata.emplace(key, item.get<std::string>());
    }
  }

  // The reference's layout rules: sorted by offset, tensors tile the data
  // section exactly from 0 to its end, each slice the size its shape needs.
  void validate_layout() {
    auto &tensors = header_.tensors;
    std::sort(tensors.begin(), tensors.end(), [](const TensorInfo &a, const TensorInfo &b) {
      return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
    });
    std::int64_t expected = 0;
    const std::string *previous = nullptr;
    for (const auto &t : tensors) {
      const std::string offsets =
          "data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) + "]";
      if (t.end < t.begin)
        fail(t.name, offsets + " end before they begin");
      if (t.begin > expected)
        fail(t.name, offsets + " leave a gap: data bytes [" + std::to_string(expected) + ", " +
                         std::to_string(t.begin) + ") belong to no tensor");
      if (t.begin < expected)
        fail(t.name, offsets + " overlap tensor '" + *previous + "', which ends at " +
                         std::to_string(expected));
      check_size(t, offsets);
      expected = t.end;
      previous = &t.name;
    }
    const std::int64_t data_size = file_size_ - header_.data_offset;
    if (expected > data_size)
      detail::fail_file(FormatKind::truncated, kWhat, file_,
                        "tensors need " + std::to_string(expected) +
                            " bytes of data but the file holds only " + std::to_string(data_size) +
                            " after the header (truncated file?)");
    if (expected < data_size)
      fail("the file has " + std::to_string(data_size - expected) +
           " bytes after the end of the last tensor");
  }

  void check_size(const TensorInfo &t, const std::string &offsets) const {
    bool whole_bytes = true;
    const std::optional<int> bits = safetensors_dtype_bits(t.dtype);
    if (!bits)
      fail(t.name, "has the unknown dtype '" + t.dtype + "'");
    const auto needed = checked_nbytes(t.shape, *bits, &whole_bytes);
    if (!needed)
      fail(t.name, "shape " + shape_text(t.shape) + " of " + t.dtype + " overflows 64-bit sizes");
    if (!whole_bytes)
      fail(t.name, "shape " + shape_text(t.shape) + " of " + t.dtype +
                       " does not fill a whole number of bytes");
    if (*needed != static_cast<std::uint64_t>(t.end - t.begin))
      fail(t.name, "shape " + shape_text(t.shape) + " of " + t.dtype + " needs " +
                       std::to_string(*needed) + " bytes but " + offsets + " hold " +
                       std::to_string(t.end - t.begin));
  }

  const std::filesystem::path &file_;
  std::int64_t file_size_;
  SafetensorsHeader header_;
};

} // namespace

std::uint64_t safetensors_header_length(std::string_view start, std::int64_t file_size,
                                        std::int64_t max_header_size,
                                        const std::filesystem::path &file) {
  if (detail::is_lfs_pointer(start))
    detail::fail_file(FormatKind::lfs_pointer, kWhat, file,
                      "this is a git-lfs pointer file (" + std::to_string(file_size) +
                          " bytes of text), not the weights: the checkpoint was cloned without "
                          "git-lfs; run `git lfs install && git lfs pull` in its repository or "
                          "download the files with huggingface_hub");
  if (file_size < kLengthBytes || start.size() < kLengthBytes)
    detail::fail_file(FormatKind::truncated, kWhat, file,
                      "the file is " + std::to_string(file_size) +
                          " bytes long, too short for the 8-byte header length");
  std::uint64_t n = 0;
  for (int i = kLengthBytes - 1; i >= 0; --i)
    n = (n << 8) | static_cast<unsigned char>(start[i]);
  if (n > static_cast<std::uint64_t>(max_header_size))
    detail::fail_file(FormatKind::malformed, kWhat, file,
                      "header length " + std::to_string(n) + " exceeds the limit of " +
                          std::to_string(max_header_size) +
                          " bytes (SafetensorsOptions::max_header_size); the file is corrupt or "
                          "not safetensors");
  if (n > static_cast<std::uint64_t>(file_size - kLengthBytes))
    detail::fail_file(FormatKind::truncated, kWhat, file,
                      "header length " + std::to_string(n) + " runs past the end of the file (" +
                          std::to_string(file_size) + " bytes)");
  return n;
}

SafetensorsHeader parse_safetensors_header(std::string_view header, std::int64_t file_size,
                                           const std::filesystem::path &file) {
  const auto data_offset = kLengthBytes + static_cast<std::int64_t>(header.size());
  return HeaderParser(file, file_size, data_offset).parse(header);
}

namespace detail {

void check_tensor_ranges(const std::vector<TensorInfo> &tensors, std::int64_t file_size,
                         std::string_view what, const std::filesystem::path &file) {
  for (const auto &t : tensors) {
    const std::optional<int> bits = safetensors_dtype_bits(t.dtype);
    bool whole_bytes = true;
    const auto needed = bits ? checked_nbytes(t.shape, *bits, &whole_bytes) : std::nullopt;
    if (!needed || !whole_bytes || t.begin < 0 || t.end < t.begin ||
        *needed != static_cast<std::uint64_t>(t.end - t.begin))
      fail_tensor(FormatKind::malformed, what, file, t.name,
                  "its bytes [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                      ") do not hold shape " + shape_text(t.shape) + " of " + t.dtype);
    if (t.end > file_size)
      fail_tensor(FormatKind::truncated, what, file, t.name,
                  "its bytes end at " + std::to_string(t.end) + ", past the end of the " +
                      std::to_string(file_size) + "-byte file (truncated file?)");
  }
}

} // namespace detail
} // namespace metaguard
