// Private to the library: copy-on-write mappings of files, the way loads
// hand out tensors that share the page cache instead of copying it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

namespace metaguard::detail {

// A private, copy-on-write mapping of a file (or of part of one). Tensors
// made from it hold a shared_ptr, so the mapping lives as long as the last of
// them.
struct Mapping {
  void *address = nullptr;
  std::size_t size = 0;
  std::int64_t from = 0; // the file offset mapped at `address`
  Mapping() = default;
  Mapping(const Mapping &) = delete;
  Mapping &operator=(const Mapping &) = delete;
  ~Mapping();
  // Where the file's byte `offset` (inside the mapping) is.
  char *at(std::int64_t offset) const { return static_cast<char *>(address) + (offset - from); }
};

// A copy-on-write mapping of the bytes [offset, offset + size) of `file`
// (open as `fd`, `file_size` bytes long when opened), made for one load and
// populated with the page-cache pages (nothing copied): a write copies one
// page into this mapping and nowhere else. It may reach beyond those bytes,
// to whole 2 MiB folios within the file. Null when the kernel refuses. A
// file truncated meanwhile is a FormatError naming `what`.
std::shared_ptr<Mapping> map_private_range(int fd, const std::filesystem::path &file,
                                           std::int64_t file_size, std::int64_t offset,
                                           std::int64_t size, const std::string &what);

} // namespace metaguard::detail
