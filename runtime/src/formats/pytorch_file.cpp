#include "formats/pytorch_file.h"

#include "core/file_errors.h"
#include "io/mappings.h"
#include "io/posix_file.h"
#include "formats/state_dict_pickle.h"

#include <metaguard/dtype.h>

#include <caffe2/serialize/inline_container.h>
#include <torch/torch.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <set>

namespace metaguard::detail {
namespace {

constexpr const char *kWhat = "PyTorch checkpoint";

[[noreturn]] void fail(FormatKind kind, const std::filesystem::path &path, const std::string &reason) {
  fail_file(kind, kWhat, path, reason);
}

// A storage's bytes: from `start` to at most `limit`.
struct StorageSpan {
  std::uint64_t start = 0;
  std::uint64_t limit = 0;
};

// A file's state dict and where each of its storages is.
struct Located {
  std::vector<PickledTensor> tensors;
  std::map<std::string, StorageSpan> storages;
};

// The whole file, mapped read-only while its pickles are read.
class ReadOnlyMap {
public:
  explicit ReadOnlyMap(const std::filesystem::path &path) {
    std::int64_t size = 0;
    const UniqueFd fd = open_regular_file(path, kWhat, size);
    if (size > 0)
      mapping_ = map_whole_file(fd.get(), kWhat, path, static_cast<std::size_t>(size),
                                /*writable=*/false, /*populate=*/false);
  }
  std::string_view bytes() const {
    return mapping_ ? std::string_view(static_cast<const char *>(mapping_->address), mapping_->size)
                    : std::string_view();
  }

private:
  std::shared_ptr<Mapping> mapping_;
};

std::int64_t element_size(const std::string &dtype) { return *safetensors_dtype_bits(dtype) / 8; }

std::string record_text(caffe2::serialize::PyTorchStreamReader &archive, const std::string &name) {
  const auto [data, size] = archive.getRecord(name);
  return std::string(static_cast<const char *>(data.get()), size);
}

// torch.save's zip archive (PyTorch 1.6 and later), read with LibTorch's own
// archive reader. Records are stored uncompressed; a record ends before the
// next one begins, or at the end of the file, which bounds what a storage
// may claim.
Located locate_in_archive(const std::filesystem::path &path) {
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> archive;
  try {
    archive = std::make_unique<caffe2::serialize::PyTorchStreamReader>(path.string());
  } catch (const c10::Error &e) {
    fail(FormatKind::malformed, path, std::string("not a readable torch.save archive: ") + e.what_without_backtrace());
  }
  try {
    if (archive->hasRecord("byteorder") && record_text(*archive, "byteorder") != "little")
      fail(FormatKind::unsupported, path, "written on a big-endian machine; metaguard reads little-endian data only");
    if (!archive->hasRecord("data.pkl"))
      fail(FormatKind::malformed, path, "the archive has no data.pkl: it is not a torch.save of a state dict "
                 "(a TorchScript module? load it with torch::jit::load)");
    Located located;
    located.tensors =
        read_state_dict_pickle(record_text(*archive, "data.pkl"), "'" + path.string() + "' (data.pkl)");
    std::vector<std::uint64_t> starts;
    for (const auto &name : archive->getAllRecords())
      starts.push_back(archive->getRecordOffset(name));
    std::sort(starts.begin(), starts.end());
    std::error_code error;
    const std::uint64_t file_size = std::filesystem::file_size(path, error);
    for (const auto &t : located.tensors) {
      const std::string record = "data/" + t.storage.key;
      if (located.storages.count(t.storage.key))
        continue;
      if (!archive->hasRecord(record))
        fail(FormatKind::malformed, path, "tensor '" + t.name + "' is in storage '" + t.storage.key +
                       "', which the archive does not hold");
      const std::uint64_t start = archive->getRecordOffset(record);
      const auto next = std::upper_bound(starts.begin(), starts.end(), start);
      located.storages[t.storage.key] = {start, next == starts.end() ? file_size : *next};
    }
    return located;
  } catch (const c10::Error &e) {
    fail(FormatKind::malformed, path, std::string("a record of the archive cannot be read: ") + e.what_without_backtrace());
  }
}

// The legacy format: the pickles, then each storage as an element count and
// its bytes, in the order the last pickle lists.
Located locate_legacy(const std::filesystem::path &path, std::string_view file) {
  const LegacyStateDict legacy = read_legacy_state_dict(file, "'" + path.string() + "'");
  Located located;
  located.tensors = legacy.tensors;
  std::map<std::string, const PickledStorage *> storage_of;
  for (const auto &t : located.tensors)
    storage_of.emplace(t.storage.key, &t.storage);
  std::uint64_t at = legacy.storages_at;
  for (const auto &key : legacy.storage_order) {
    const auto it = storage_of.find(key);
    if (it == storage_of.end())
      fail(FormatKind::malformed, path, "storage '" + key + "' is listed but no tensor uses it");
    if (file.size() < 8 || at > file.size() - 8)
      fail(FormatKind::truncated, path, "storage '" + key + "' starts past the end of the file (truncated file?)");
    std::uint64_t numel = 0;
    for (int i = 7; i >= 0; --i)
      numel = (numel << 8) | static_cast<unsigned char>(file[at + static_cast<std::size_t>(i)]);
    if (numel != static_cast<std::uint64_t>(it->second->numel))
      fail(FormatKind::malformed, path, "storage '" + key + "' holds " + std::to_string(numel) + " elements where its tensors say " +
                     std::to_string(it->second->numel));
    const auto bytes = numel * static_cast<std::uint64_t>(element_size(it->second->dtype));
    if (bytes > file.size() - at - 8)
      fail(FormatKind::truncated, path, "storage '" + key + "' runs past the end of the file (truncated file?)");
    located.storages[key] = {at + 8, at + 8 + bytes};
    at += 8 + bytes;
  }
  for (const auto &[key, storage] : storage_of)
    if (!located.storages.count(key))
      fail(FormatKind::malformed, path, "tensor storage '" + key + "' is not in the file");
  return located;
}

// The first bytes, which tell the formats apart.
std::string head_of(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail(FormatKind::io, path, "cannot open");
  std::string head(40, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  return head;
}

Located locate(const std::filesystem::path &path) {
  const std::string head = head_of(path);
  if (head.rfind("PK\x03\x04", 0) == 0)
    return locate_in_archive(path);
  if (is_legacy_torch_file(head)) {
    // Its pickles run up to the storages: read in place, not copied.
    const ReadOnlyMap map(path);
    return locate_legacy(path, map.bytes());
  }
  if (is_lfs_pointer(head))
    fail(FormatKind::lfs_pointer, path, "this is a git-lfs pointer file, not the weights: run `git lfs pull`");
  fail(FormatKind::malformed, path, "neither a torch.save archive nor a legacy torch.save file");
}

bool contiguous(const PickledTensor &t) {
  std::int64_t expected = 1;
  for (std::size_t i = t.sizes.size(); i-- > 0;) {
    if (t.sizes[i] != 1 && t.strides[i] != expected)
      return false;
    expected *= t.sizes[i];
  }
  return true;
}

std::int64_t element_count(const std::vector<std::int64_t> &sizes) {
  std::int64_t n = 1;
  for (const auto size : sizes)
    n *= size;
  return n;
}

} // namespace

PytorchFile::PytorchFile(const std::filesystem::path &path, const SafetensorsOptions &options)
    : bytes_([&] {
        const Located located = locate(path);
        std::vector<TensorInfo> infos;
        std::set<std::string> storages;
        for (const auto &t : located.tensors) {
          const StorageSpan span = located.storages.at(t.storage.key);
          const std::int64_t element = element_size(t.storage.dtype);
          if (t.storage.numel > static_cast<std::int64_t>((span.limit - span.start) / element))
            fail(FormatKind::malformed, path, "storage '" + t.storage.key + "' claims " + std::to_string(t.storage.numel) +
                           " elements, more than its record holds (truncated or corrupt file?)");
          const auto begin = static_cast<std::int64_t>(span.start);
          const std::int64_t storage_end = begin + t.storage.numel * element;
          names_.push_back(t.name);
          if (contiguous(t)) {
            const std::int64_t first = element_count(t.sizes) == 0 ? begin : begin + t.offset * element;
            infos.push_back({t.name, t.storage.dtype, t.sizes, first, first + element_count(t.sizes) * element});
            continue;
          }
          // '\n' cannot start a tensor name from a state dict.
          const std::string storage = "\n" + t.storage.key;
          if (storages.insert(storage).second)
            infos.push_back({storage, t.storage.dtype, {t.storage.numel}, begin, storage_end});
          strided_[t.name] = {{t.name, t.storage.dtype, t.sizes, begin, storage_end}, storage, t.offset,
                              t.strides};
        }
        return map_tensor_file(path, std::move(infos), options);
      }()) {}

const TensorInfo &PytorchFile::info(std::string_view name) const {
  if (const auto it = strided_.find(name); it != strided_.end())
    return it->second.info;
  if (name.rfind('\n', 0) == 0)
    fail(FormatKind::missing, path(), "no tensor named '" + std::string(name) + "'");
  return bytes_.info(name);
}

torch::Tensor PytorchFile::gather(const Strided &view) const {
  return bytes_.tensor(view.storage)
      .as_strided(view.info.shape, view.strides, view.offset)
      .contiguous();
}

torch::Tensor PytorchFile::tensor(std::string_view name) const {
  if (const auto it = strided_.find(name); it != strided_.end())
    return gather(it->second);
  info(name);
  return bytes_.tensor(name);
}

torch::Tensor PytorchFile::private_tensor(std::string_view name) const {
  if (const auto it = strided_.find(name); it != strided_.end())
    return gather(it->second); // a fresh copy already
  info(name);
  return bytes_.private_tensor(name);
}

torch::Tensor PytorchFile::tensor(std::string_view name, torch::Dtype dtype,
                                  torch::Device device) const {
  if (const auto it = strided_.find(name); it != strided_.end())
    return gather(it->second).to(device, dtype);
  info(name);
  return bytes_.tensor(name, dtype, device);
}

} // namespace metaguard::detail
