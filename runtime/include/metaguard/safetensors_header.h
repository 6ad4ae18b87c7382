// The header of a safetensors file, parsed and validated from its bytes
// alone: no file is opened, nothing is mapped, no tensor is made. It is what
// SafetensorsFile checks on open, and what a tool needs that only wants a
// file's names, dtypes and shapes from bytes it got some other way (a range
// request, an archive member). Every rule the reference implementation
// enforces is enforced here; a violation is a FormatError naming the file,
// the tensor (when there is one) and the rule.
#pragma once

#include <metaguard/errors.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace metaguard {

// One tensor's entry in the header. Offsets are relative to the data section
// (which starts right after the header), as in the file.
struct TensorInfo {
  std::string name;
  std::string dtype; // as written, e.g. "F32", "U16"
  std::vector<std::int64_t> shape;
  std::int64_t begin = 0;
  std::int64_t end = 0;
  std::int64_t nbytes() const { return end - begin; }
};

struct SafetensorsHeader {
  std::int64_t data_offset = 0;                // 8 + the header's length
  std::vector<TensorInfo> tensors;             // sorted by offset
  std::map<std::string, std::string> metadata; // __metadata__, empty when absent
};

// How many of a file's first bytes safetensors_header_length needs to tell a
// git-lfs pointer from weights.
inline constexpr std::size_t kSafetensorsProbeBytes = 64;

// The length of the JSON header, from `start`: the file's first
// kSafetensorsProbeBytes bytes (all of it when shorter). Checked against the
// file's size and `max_header_size` (a corrupt length must not make a reader
// allocate gigabytes). `file` only names the file in errors.
std::uint64_t safetensors_header_length(std::string_view start, std::int64_t file_size,
                                        std::int64_t max_header_size,
                                        const std::filesystem::path &file);

// Parses `header` (the JSON after the length) of a file `file_size` bytes
// long and checks the layout: tensors tile the data section exactly, each
// slice the size its shape and dtype need, no arithmetic that overflows.
SafetensorsHeader parse_safetensors_header(std::string_view header, std::int64_t file_size,
                                           const std::filesystem::path &file);

namespace detail {
// For files laid out by another format (the storages of a torch.save
// archive): each of `tensors` holds exactly the bytes its shape needs and ends
// inside the file. `what` names the kind of file in errors.
void check_tensor_ranges(const std::vector<TensorInfo> &tensors, std::int64_t file_size,
                         std::string_view what, const std::filesystem::path &file);
} // namespace detail

} // namespace metaguard
