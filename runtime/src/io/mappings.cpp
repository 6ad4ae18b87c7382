#include "io/mappings.h"

#include "core/file_errors.h"
#include "io/mapped_read.h"
#include "io/posix_file.h"

#include <algorithm>
#include <cerrno>
#include <sys/mman.h>
#include <unistd.h>
#include <utility>

namespace metaguard::detail {
namespace {

std::int64_t page_size() { return static_cast<std::int64_t>(::sysconf(_SC_PAGESIZE)); }

// The file's bytes [offset, offset + size) widened to whole 2 MiB folios
// (within the file's last page). The kernel maps a 2 MiB page-cache folio by
// one entry only when the mapping covers all of it; a folio cut by the
// mapping's edge costs an entry per 4 KiB page at every load, which was half
// of the reader's work in a warm offloaded forward.
std::pair<std::int64_t, std::int64_t> folio_span(std::int64_t offset, std::int64_t size,
                                                 std::int64_t file_size) {
  constexpr std::int64_t kFolio = std::int64_t{2} << 20;
  const std::int64_t file_end = (file_size + page_size() - 1) / page_size() * page_size();
  return {offset / kFolio * kFolio, std::min((offset + size + kFolio - 1) / kFolio * kFolio, file_end)};
}

} // namespace

Mapping::~Mapping() {
  if (address != nullptr)
    ::munmap(address, size);
}

std::shared_ptr<Mapping> map_private_range(int fd, const std::filesystem::path &file,
                                           std::int64_t file_size, std::int64_t offset,
                                           std::int64_t size, const std::string &what) {
  const std::int64_t start = offset / page_size() * page_size();
  auto mapping = std::make_shared<Mapping>();
  void *address = nullptr;
#ifdef MADV_POPULATE_READ
  // Writable at once, the page-cache pages mapped read-only by one call
  // (Linux 5.14): no page-table walk to make it writable afterwards, and a
  // page past the end of the file fails the call instead of a later read.
  // Only the bytes asked for are populated; the widened edges are mapped by
  // the folios these bytes share with them.
  const auto [from, to] = folio_span(offset, size, file_size);
  mapping->from = from;
  mapping->size = static_cast<std::size_t>(to - from);
  address = ::mmap(nullptr, mapping->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, from);
  if (address == MAP_FAILED)
    return nullptr;
  mapping->address = address;
#ifdef MADV_HUGEPAGE
  // Pages read in now (a cold file) come in 2 MiB folios, and folios of that
  // size are mapped whole, by one entry: the next load of the same bytes
  // maps them some 100x faster than 4 KiB pages (docs/benchmarks.md).
  ::madvise(address, mapping->size, MADV_HUGEPAGE);
#endif
  if (::madvise(mapping->at(start), static_cast<std::size_t>(offset + size - start), MADV_POPULATE_READ) == 0)
    return mapping;
  if (errno == EFAULT)
    throw_truncated(file, what);
  ::munmap(address, mapping->size);
  mapping->address = nullptr;
#endif
  // Older kernels: populated read-only, probed (MAP_POPULATE stops silently
  // at the end of a truncated file), then made writable.
  mapping->from = start;
  mapping->size = static_cast<std::size_t>(offset + size - start);
  address = ::mmap(nullptr, mapping->size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, start);
  if (address == MAP_FAILED)
    return nullptr;
  mapping->address = address;
  probe_mapped(file, what, mapping->at(offset), static_cast<std::size_t>(size));
  if (::mprotect(address, mapping->size, PROT_READ | PROT_WRITE) != 0)
    return nullptr;
  return mapping;
}

std::shared_ptr<Mapping> map_whole_file(int fd, std::string_view what,
                                        const std::filesystem::path &file, std::size_t size,
                                        bool writable, bool populate) {
  const auto refuse = [&](const std::string &doing) {
    fail_file(FormatKind::io, what, file, doing + ": " + errno_text(errno));
  };
  const int protection = writable ? PROT_READ | PROT_WRITE : PROT_READ;
  auto mapping = std::make_shared<Mapping>();
  mapping->size = size;
  if (!populate || !writable) {
    const int flags = populate ? MAP_PRIVATE | MAP_POPULATE : MAP_PRIVATE;
    mapping->address = ::mmap(nullptr, size, protection, flags, fd, 0);
    if (mapping->address == MAP_FAILED) {
      mapping->address = nullptr;
      refuse("cannot map the file");
    }
    return mapping;
  }
  // MAP_POPULATE on a writable private mapping would fault it for writing,
  // i.e. copy the whole file. MADV_POPULATE_READ (Linux 5.14) maps the
  // page-cache pages as they are; where it is missing or refused, a
  // read-only MAP_POPULATE mapping is made writable afterwards (slower:
  // mprotect walks every page).
  mapping->address = ::mmap(nullptr, size, protection, MAP_PRIVATE, fd, 0);
  if (mapping->address == MAP_FAILED) {
    mapping->address = nullptr;
    refuse("cannot map the file");
  }
#ifdef MADV_POPULATE_READ
  if (::madvise(mapping->address, size, MADV_POPULATE_READ) == 0)
    return mapping;
#endif
  ::munmap(mapping->address, size);
  mapping->address = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  if (mapping->address == MAP_FAILED) {
    mapping->address = nullptr;
    refuse("cannot map the file");
  }
  if (::mprotect(mapping->address, size, protection) != 0)
    refuse("cannot make the private mapping writable");
  return mapping;
}

void populate_mapping(const Mapping &mapping) {
#ifdef MADV_POPULATE_READ
  ::madvise(mapping.address, mapping.size, MADV_POPULATE_READ);
#else
  ::madvise(mapping.address, mapping.size, MADV_WILLNEED);
#endif
}

std::unique_ptr<Mapping> map_read_only_range(int fd, std::int64_t offset, std::int64_t size) {
  const std::int64_t start = offset / page_size() * page_size();
  auto mapping = std::make_unique<Mapping>();
  mapping->from = start;
  mapping->size = static_cast<std::size_t>(offset + size - start);
  void *address = ::mmap(nullptr, mapping->size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, start);
  if (address == MAP_FAILED)
    return nullptr;
  mapping->address = address;
  return mapping;
}

void *map_anonymous(std::size_t bytes, bool prefault) {
  void *memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED)
    return nullptr;
#ifdef MADV_NOHUGEPAGE
  ::madvise(memory, bytes, MADV_NOHUGEPAGE);
#endif
#ifdef MADV_POPULATE_WRITE
  if (prefault)
    ::madvise(memory, bytes, MADV_POPULATE_WRITE); // best effort: else faulted on write
#else
  (void)prefault;
#endif
  return memory;
}

} // namespace metaguard::detail
