#include "io/page_cache.h"

#include "io/posix_file.h"

#include <fcntl.h>

namespace metaguard::detail {

void drop_page_cache(const WeightsMap &weights, const std::string &name) {
  StorageLocation where;
  try {
    where = weights.location(name);
  } catch (const std::exception &) {
    return; // best effort: a name the map does not know is reported by the load
  }
  if (where.file.empty())
    return;
  const UniqueFd fd(::open(where.file.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() >= 0)
    ::posix_fadvise(fd.get(), where.offset, where.length, POSIX_FADV_DONTNEED);
}

} // namespace metaguard::detail
