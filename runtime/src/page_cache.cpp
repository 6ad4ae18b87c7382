#include "page_cache.h"

#include <metaguard/checkpoint.h>
#include <metaguard/checkpoint_weights_map.h>
#include <metaguard/offload_folder.h>

#include "posix_file.h"

#include <fcntl.h>

namespace metaguard::detail {
namespace {

void advise_dontneed(const std::filesystem::path &file, std::int64_t offset, std::int64_t length) {
  const UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() >= 0)
    ::posix_fadvise(fd.get(), offset, length, POSIX_FADV_DONTNEED);
}

void drop_checkpoint_tensor(const CheckpointReader &reader, const std::string &key) {
  if (!reader.contains(key))
    return; // a renamed key: CheckpointWeightsMap keeps its renames to itself
  if (const auto *safetensors = dynamic_cast<const SafetensorsCheckpoint *>(&reader)) {
    const SafetensorsFile &file = safetensors->file_of(key);
    const TensorInfo &info = file.info(key);
    advise_dontneed(file.path(), file.data_offset() + info.begin, info.nbytes());
    return;
  }
  advise_dontneed(reader.path_of(key), 0, 0); // 0 length: to the end of the file
}

} // namespace

void drop_page_cache(const WeightsMap &weights, const std::string &name) {
  try {
    if (const auto *folder = dynamic_cast<const OffloadFolder *>(&weights))
      advise_dontneed(folder->path() / (name + ".dat"), 0, 0);
    else if (const auto *checkpoint = dynamic_cast<const CheckpointWeightsMap *>(&weights))
      drop_checkpoint_tensor(checkpoint->checkpoint(), name);
  } catch (const std::exception &) {
    // Best effort: a name the map does not know is reported by the load.
  }
}

} // namespace metaguard::detail
