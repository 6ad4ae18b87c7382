// How offloaded blocks are read: options of dispatch_model,
// attach_offload_hooks and LoadOptions::offload.
#pragma once

namespace metaguard {

struct OffloadOptions {
  // How many offloaded blocks (device-map entries placed on "disk") are read
  // ahead on a background thread while the current one computes, in the
  // order the first forward used them (registration order until then). The
  // offloaded blocks in memory are at most the one in use and `depth` ahead;
  // while no offloaded block is in use (the forward computes layers kept in
  // memory), `depth` + 1 ahead. 0 reads every block when it is used.
  int prefetch_depth = 1;
  // Once the execution order is known, using the last block of a forward
  // reads the first blocks of the next forward ahead, as generation runs
  // forward after forward: the first block's read is hidden too. Between
  // forwards the process then holds up to `prefetch_depth` + 1 blocks; turn it
  // off when a model runs one forward and is left alone.
  bool prefetch_next_forward = true;
  // After a block has been used and returned to meta, ask the kernel to drop
  // its bytes from the page cache (POSIX_FADV_DONTNEED), so the files of a
  // model bigger than memory do not push the rest of the system out of the
  // cache. The next forward reads them from disk again. Small tensors are
  // then read one by one, not in one mapping with their neighbours (pages
  // still mapped by a neighbour could not be dropped).
  bool drop_page_cache = false;
};

} // namespace metaguard
