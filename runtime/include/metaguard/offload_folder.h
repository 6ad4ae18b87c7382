// accelerate's offload folder format: `index.json` maps each tensor name to
// {"dtype": numpy dtype name, "shape": [...]}, and each tensor's raw
// little-endian bytes are in `<name>.dat`. bfloat16 has no numpy dtype, so
// accelerate stores its bits as "int16"; the index then still says "bfloat16".
#pragma once

#include <metaguard/weights_map.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace metaguard {

// numpy dtype name as accelerate writes it ("float32", "bfloat16", "bool"...).
std::string numpy_dtype_name(torch::Dtype dtype);
// The inverse; throws OffloadError naming `what` (file and tensor) for a dtype
// LibTorch cannot hold.
torch::Dtype dtype_from_numpy_name(const std::string &name, const std::string &what);

// Writes `tensors` into `folder` in accelerate's format, merging with an
// existing index.json there. Every .dat and the index are written to a
// temporary name and renamed, so a failure leaves what was on disk intact.
void offload_tensors(const std::filesystem::path &folder,
                     const std::map<std::string, torch::Tensor> &tensors);

// An offload folder opened for reading (written by metaguard or accelerate).
// Opening reads and validates the structure of index.json; an entry's dtype
// and .dat are checked when that tensor is used, so one stale entry does not
// block the others. load() maps the file (copy-on-write) instead of reading.
class OffloadFolder : public WeightsMap {
public:
  explicit OffloadFolder(std::filesystem::path folder);

  bool contains(const std::string &name) const override;
  torch::Tensor load(const std::string &name) const override;
  // The .dat read with O_DIRECT into memory of the tensor's own.
  torch::Tensor load_direct(const std::string &name) const override;
  std::vector<std::string> names() const override;
  // The tensor's .dat, whole.
  StorageLocation location(const std::string &name) const override;

  const std::filesystem::path &path() const { return folder_; }
  // Expected dtype and shape of a tensor, from index.json.
  torch::Dtype dtype(const std::string &name) const;
  std::vector<std::int64_t> shape(const std::string &name) const;
  // Checks that the tensor's .dat exists and has dtype x shape bytes; returns
  // that size. Throws OffloadError naming the file and the tensor.
  std::int64_t check(const std::string &name) const;

private:
  struct Entry {
    std::string dtype_name; // checked when the tensor is used
    std::vector<std::int64_t> shape;
  };
  const Entry &entry(const std::string &name) const;

  std::filesystem::path folder_;
  std::map<std::string, Entry> entries_;
};

} // namespace metaguard
