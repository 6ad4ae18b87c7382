// Private to the library: every memory mapping the runtime makes. Files are
// mapped copy-on-write, the way loads hand out tensors that share the page
// cache instead of copying it; fresh buffers are anonymous mappings in 4 KiB
// pages. Populating, and the fallbacks for kernels without
// MADV_POPULATE_READ, are written here once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

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
  // Releases the mapping now (the destructor does it otherwise).
  void unmap();
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

// The whole file (open as `fd`, `size` bytes long), mapped privately. With
// `writable`, copy-on-write: a write changes this process's page, never the
// file. With `populate`, every page is faulted in now without breaking
// copy-on-write. Throws FormatError (io) naming `what` and `file` when the
// kernel refuses.
std::shared_ptr<Mapping> map_whole_file(int fd, std::string_view what,
                                        const std::filesystem::path &file, std::size_t size,
                                        bool writable, bool populate);

// Faults the pages of `mapping` in (best effort: where the kernel cannot,
// it is only asked to read ahead, and the pages fault in on first use).
void populate_mapping(const Mapping &mapping);

// The bytes [offset, offset + size) of `fd`, mapped read-only and populated
// for the time of one conversion. Null when the kernel refuses.
std::unique_ptr<Mapping> map_read_only_range(int fd, std::int64_t offset, std::int64_t size);

// `bytes` of fresh zeroed memory in 4 KiB pages, also where transparent huge
// pages are "always": on VMs that hand freed huge pages back to the host, a
// fresh process pays several times more for them (docs/benchmarks.md). With
// `prefault`, faulted in by one call now. Null when the kernel refuses;
// release with ::munmap(memory, bytes).
void *map_anonymous(std::size_t bytes, bool prefault);

} // namespace metaguard::detail
