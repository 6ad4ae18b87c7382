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

// Maps [from, from + size) of `fd` privately into `mapping`; false (errno
// set) when the kernel refuses.
bool map_range(Mapping &mapping, int fd, std::int64_t from, std::size_t size, int protection,
               int flags) {
  void *address = ::mmap(nullptr, size, protection, flags, fd, from);
  if (address == MAP_FAILED)
    return false;
  mapping.address = address;
  mapping.from = from;
  mapping.size = size;
  return true;
}

// Maps the page-cache pages of `length` bytes at `begin` (in a writable
// private mapping) as they are, by one call (MADV_POPULATE_READ, Linux 5.14):
// MAP_POPULATE there would fault them for writing, i.e. copy them. 0 when
// done, else the error (EFAULT: a page past the end of the file; ENOSYS:
// built without MADV_POPULATE_READ).
int populate_for_reading(char *begin, std::size_t length) {
#ifdef MADV_POPULATE_READ
  return ::madvise(begin, length, MADV_POPULATE_READ) == 0 ? 0 : errno;
#else
  (void)begin;
  (void)length;
  return ENOSYS;
#endif
}

// Where MADV_POPULATE_READ is missing or refused: [from, from + size) mapped
// read-only with MAP_POPULATE, then made writable (slower: mprotect walks
// every page). MAP_POPULATE stops silently at the end of a truncated file:
// the caller probes. False (errno set) when the kernel refuses.
bool map_populated_then_writable(Mapping &mapping, int fd, std::int64_t from, std::size_t size) {
  return map_range(mapping, fd, from, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE) &&
         ::mprotect(mapping.address, size, PROT_READ | PROT_WRITE) == 0;
}

void advise_huge_pages([[maybe_unused]] const Mapping &mapping) {
#ifdef MADV_HUGEPAGE
  // Pages read in now (a cold file) come in 2 MiB folios, and folios of that
  // size are mapped whole, by one entry: the next load of the same bytes
  // maps them some 100x faster than 4 KiB pages (docs/benchmarks.md).
  ::madvise(mapping.address, mapping.size, MADV_HUGEPAGE);
#endif
}

} // namespace

Mapping::~Mapping() { unmap(); }

void Mapping::unmap() {
  if (address != nullptr)
    ::munmap(address, size);
  address = nullptr;
}

std::shared_ptr<Mapping> map_private_range(int fd, const std::filesystem::path &file,
                                           std::int64_t file_size, std::int64_t offset,
                                           std::int64_t size, const std::string &what) {
  const std::int64_t start = offset / page_size() * page_size();
  const auto length = static_cast<std::size_t>(offset + size - start);
  auto mapping = std::make_shared<Mapping>();
  // Writable at once, widened to whole folios, and only the bytes asked for
  // populated (the edges are mapped by the folios they share with them): no
  // page-table walk to make it writable afterwards, and a page past the end
  // of the file fails the call instead of a later read.
  const auto [from, to] = folio_span(offset, size, file_size);
  if (map_range(*mapping, fd, from, static_cast<std::size_t>(to - from), PROT_READ | PROT_WRITE,
                MAP_PRIVATE)) {
    advise_huge_pages(*mapping);
    const int error = populate_for_reading(mapping->at(start), length);
    if (error == 0)
      return mapping;
    if (error == EFAULT)
      throw_truncated(file, what);
    mapping->unmap();
  }
  if (!map_populated_then_writable(*mapping, fd, start, length))
    return nullptr;
  probe_mapped(file, what, mapping->at(offset), static_cast<std::size_t>(size));
  return mapping;
}

std::shared_ptr<Mapping> map_whole_file(int fd, std::string_view what,
                                        const std::filesystem::path &file, std::size_t size,
                                        bool writable, bool populate) {
  const auto refuse = [&] {
    fail_file(FormatKind::io, what, file, "cannot map the file: " + errno_text(errno));
  };
  auto mapping = std::make_shared<Mapping>();
  if (!populate || !writable) {
    // Read-only, MAP_POPULATE maps the page-cache pages without copying.
    if (!map_range(*mapping, fd, 0, size, writable ? PROT_READ | PROT_WRITE : PROT_READ,
                   populate ? MAP_PRIVATE | MAP_POPULATE : MAP_PRIVATE))
      refuse();
    return mapping;
  }
  if (!map_range(*mapping, fd, 0, size, PROT_READ | PROT_WRITE, MAP_PRIVATE))
    refuse();
  if (populate_for_reading(mapping->at(0), size) == 0)
    return mapping;
  mapping->unmap();
  if (!map_populated_then_writable(*mapping, fd, 0, size))
    refuse();
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
