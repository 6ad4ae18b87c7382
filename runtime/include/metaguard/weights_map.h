// Where the bytes of offloaded parameters come from. An offloading hook holds
// one of these and asks it for a parameter each time the parameter is needed.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace metaguard {

// Where a tensor's bytes lie in storage: `length` bytes of `file` from
// `offset` (a `length` of 0: the rest of the file). The offload reader goes
// through a block's tensors in this order, one file front to back, which is
// what a disk serves fastest when the page cache is cold, and
// OffloadOptions::drop_page_cache drops these ranges. An empty `file` when
// the map cannot say.
struct StorageLocation {
  std::string file;
  std::int64_t offset = 0;
  std::int64_t length = 0;
};

// A read-only, name-addressed source of tensors: an accelerate offload folder
// (OffloadFolder) or a safetensors checkpoint read in place. Implementations
// must be safe to call from several threads at once.
class WeightsMap {
public:
  virtual ~WeightsMap();
  virtual bool contains(const std::string &name) const = 0;
  // A CPU tensor with the stored dtype and shape. Throws OffloadError or
  // FormatError naming the file and the tensor when the data is unusable.
  virtual torch::Tensor load(const std::string &name) const = 0;
  // load() of each name, for tensors that lie next to each other in storage
  // (the offload reader passes a block's small tensors that do). A map may
  // read them in one go, e.g. one private mapping for all: their memory then
  // goes back when the last of them dies. By default, one load each.
  virtual std::vector<torch::Tensor> load_together(const std::vector<std::string> &names) const;
  // load() with the bytes read by O_DIRECT, past the page cache
  // (OffloadReadMode::direct): same value, same errors. An undefined tensor
  // when the map cannot read `name` that way (a filesystem without O_DIRECT,
  // a pickled archive): the caller then uses load(). By default, undefined.
  virtual torch::Tensor load_direct(const std::string &name) const;
  virtual std::vector<std::string> names() const = 0;
  // Where `name`'s bytes lie; by default, unknown. Never throws: a name the
  // map cannot place is reported by `load`.
  virtual StorageLocation location(const std::string &name) const;
};

} // namespace metaguard
