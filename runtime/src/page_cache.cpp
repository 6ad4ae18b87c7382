#include "page_cache.h"

#include "posix_file.h"

#include <fcntl.h>

namespace metaguard::detail {
namespace {

// `whole_file_too`: whether a location without a length (a whole torch.save
// archive) is advised too.
void advise(const WeightsMap &weights, const std::string &name, int advice, bool whole_file_too) {
  StorageLocation where;
  try {
    where = weights.location(name);
  } catch (const std::exception &) {
    return; // best effort: a name the map does not know is reported by the load
  }
  if (where.file.empty() || (where.length == 0 && !whole_file_too))
    return;
  const UniqueFd fd(::open(where.file.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() >= 0)
    ::posix_fadvise(fd.get(), where.offset, where.length, advice);
}

} // namespace

void drop_page_cache(const WeightsMap &weights, const std::string &name) {
  advise(weights, name, POSIX_FADV_DONTNEED, /*whole_file_too=*/true);
}

void start_reading(const WeightsMap &weights, const std::string &name) {
  advise(weights, name, POSIX_FADV_WILLNEED, /*whole_file_too=*/false);
}

} // namespace metaguard::detail
