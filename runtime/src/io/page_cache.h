// Private to the library: dropping the bytes of used offloaded parameters
// from the page cache (OffloadOptions::drop_page_cache), found through the
// weights map's StorageLocation of each tensor.
#pragma once

#include <metaguard/weights_map.h>

#include <string>

namespace metaguard::detail {

// Asks the kernel to drop the cached pages that hold `name` of `weights`
// (POSIX_FADV_DONTNEED; OffloadOptions::drop_page_cache): its .dat in an
// offload folder, its byte range in a safetensors shard, the whole file for
// other checkpoint formats; nothing for maps that cannot place it. Best
// effort: pages still mapped by a live tensor stay, and failures are
// ignored (the cache is only a cache).
void drop_page_cache(const WeightsMap &weights, const std::string &name);

} // namespace metaguard::detail
