// Private to the library: telling the kernel what the offload reader is
// about to read and what it is done with, through the weights map's
// StorageLocation of each tensor.
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

// Asks the kernel to start reading `name`'s bytes into the page cache
// (POSIX_FADV_WILLNEED) and returns without waiting; nothing when the map
// cannot give its exact range. Best effort, as above.
void start_reading(const WeightsMap &weights, const std::string &name);

} // namespace metaguard::detail
