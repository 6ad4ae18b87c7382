// How offloaded blocks are read: options of dispatch_model,
// attach_offload_hooks and LoadOptions::offload.
#pragma once

namespace metaguard {

// How the bytes of offloaded parameters are read from their files.
enum class OffloadReadMode {
  // direct when the offloaded bytes exceed what the page cache can keep for
  // this process (the memory cgroup's limit, or MemAvailable of
  // /proc/meminfo, whichever is smaller, less the process's own memory and
  // the weights the model keeps in memory) when the hooks are attached,
  // else cached.
  automatic,
  // Through the page cache (mappings and pread), as before: fastest when the
  // files stay cached between forwards (warm, model smaller than memory).
  cached,
  // O_DIRECT reads: nothing goes through the page cache, so a model bigger
  // than memory (or than its cgroup) does not pay for reclaim at every
  // forward. Large tensors are read in place into pooled memory that the
  // next forward's reads reuse; small ones, and those whose first byte is
  // not element-aligned in the blocks read, go through a bounded pool of
  // aligned buffers and are copied out.
  // Files on a filesystem without O_DIRECT are read cached (a warning on
  // stderr says so once per filesystem).
  direct,
};

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
  // See OffloadReadMode. The environment variable METAGUARD_OFFLOAD_READ
  // (automatic|cached|direct), when set, overrides it for experiments.
  OffloadReadMode read_mode = OffloadReadMode::automatic;
};

} // namespace metaguard
