#include "private_mapping.h"

#include "mapped_read.h"

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

} // namespace metaguard::detail
