// accelerate's offload folder (utils/offload.py), written and read
// byte-compatibly: index.json + one raw little-endian <name>.dat per tensor.
#include <metaguard/dtype.h>
#include <metaguard/errors.h>
#include <metaguard/offload_folder.h>

#include "io/mappings.h"
#include "io/direct_read.h"
#include "io/posix_file.h"
#include "io/staging_pool.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the offload format is little-endian; big-endian hosts would need byte swapping"
#endif

namespace metaguard {
namespace fs = std::filesystem;
namespace {

std::string errno_text() { return std::strerror(errno); }

std::string describe(const std::string &tensor, const fs::path &file) {
  return "tensor '" + tensor + "' (" + file.string() + ")";
}

// Tensor names become file names: refuse any that could leave the folder.
void check_tensor_name(const std::string &name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
      name.find('\0') != std::string::npos)
    throw OffloadError("cannot offload tensor '" + name +
                       "': its name is not usable as a file name in the offload folder");
}

std::int64_t numel_of(const std::vector<std::int64_t> &shape) {
  std::int64_t n = 1;
  for (auto d : shape)
    if (d < 0 || (d > 0 && n > INT64_MAX / d))
      return -1;
    else
      n *= d;
  return n;
}

// A file written under a temporary name, renamed over its target by commit()
// and removed if never committed, so a failed offload leaves the folder as it
// was.
class PendingFile {
public:
  PendingFile(fs::path target, const void *data, std::size_t size) : target_(std::move(target)) {
    static std::atomic<unsigned> counter{0};
    temp_ = target_;
    temp_ += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    const int fd = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
      throw OffloadError("cannot create " + temp_.string() + ": " + errno_text() +
                         "; nothing in the offload folder was changed (check that it is writable, has "
                         "space, and that tensor names fit in a file name)");
    const char *p = static_cast<const char *>(data);
    std::size_t left = size;
    while (left > 0) {
      const ssize_t n = ::write(fd, p, left);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        const std::string why = errno_text();
        ::close(fd);
        discard();
        throw OffloadError("cannot write " + temp_.string() + ": " + why +
                           "; nothing in the offload folder was changed");
      }
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    if (::close(fd) != 0) {
      const std::string why = errno_text();
      discard();
      throw OffloadError("cannot write " + temp_.string() + ": " + why);
    }
  }
  PendingFile(PendingFile &&other) noexcept
      : target_(std::move(other.target_)), temp_(std::move(other.temp_)), done_(other.done_) {
    other.done_ = true;
  }
  PendingFile(const PendingFile &) = delete;
  ~PendingFile() { discard(); }

  void commit() {
    if (::rename(temp_.c_str(), target_.c_str()) != 0)
      throw OffloadError("cannot rename " + temp_.string() + " to " + target_.string() + ": " + errno_text());
    done_ = true;
  }

private:
  void discard() {
    if (!done_)
      ::unlink(temp_.c_str());
    done_ = true;
  }
  fs::path target_, temp_;
  bool done_ = false;
};

nlohmann::json read_json(const fs::path &file) {
  std::ifstream in(file);
  if (!in)
    throw OffloadError("cannot open " + file.string() + ": " + errno_text());
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception &e) {
    throw OffloadError(file.string() + " is not valid JSON (" + e.what() +
                       "); the offload folder is damaged: dispatch the model again to rewrite it");
  }
}

} // namespace

std::string numpy_dtype_name(torch::Dtype dtype) {
  if (auto name = torch_dtype_name(dtype))
    return *name;
  throw OffloadError(std::string("dtype ") + c10::toString(dtype) + " has no numpy name and cannot be offloaded");
}

torch::Dtype dtype_from_numpy_name(const std::string &name, const std::string &what) {
  if (auto dtype = dtype_from_torch_name(name))
    return *dtype;
  throw OffloadError(what + " has dtype \"" + name +
                     "\", which LibTorch cannot hold (supported: float64, float32, float16, bfloat16, "
                     "int64, int32, int16, int8, uint8, bool, complex64, complex128)");
}

void offload_tensors(const fs::path &folder, const std::map<std::string, torch::Tensor> &tensors) {
  // Validate everything before touching the disk.
  for (const auto &[name, tensor] : tensors) {
    check_tensor_name(name);
    if (tensor.is_meta())
      throw OffloadError("cannot offload tensor '" + name +
                         "': it is on the meta device and has no values; load the weights first");
    numpy_dtype_name(tensor.scalar_type());
  }
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec)
    throw OffloadError("cannot create offload folder " + folder.string() + ": " + ec.message());

  const fs::path index_file = folder / "index.json";
  nlohmann::json index = fs::exists(index_file) ? read_json(index_file) : nlohmann::json::object();
  if (!index.is_object())
    throw OffloadError(index_file.string() + " is not a JSON object; the offload folder is damaged");

  std::vector<PendingFile> pending;
  for (const auto &[name, tensor] : tensors) {
    const torch::Tensor t = tensor.detach().to(torch::kCPU).contiguous();
    index[name] = {{"dtype", numpy_dtype_name(t.scalar_type())}, {"shape", t.sizes().vec()}};
    pending.emplace_back(folder / (name + ".dat"), t.data_ptr(), t.nbytes());
  }
  const std::string text = index.dump(2);
  pending.emplace_back(index_file, text.data(), text.size());
  // The index goes last: readers never see an entry before its data.
  for (auto &file : pending)
    file.commit();
}

OffloadFolder::OffloadFolder(fs::path folder) : folder_(std::move(folder)) {
  const fs::path index_file = folder_ / "index.json";
  if (!fs::exists(index_file))
    throw OffloadError("offload folder " + folder_.string() +
                       " has no index.json; it was not written by dispatch_model or accelerate, or was "
                       "deleted: dispatch the model again with an offload_folder");
  const nlohmann::json index = read_json(index_file);
  if (!index.is_object())
    throw OffloadError(index_file.string() + " is not a JSON object; the offload folder is damaged");
  for (const auto &[name, info] : index.items()) {
    const std::string where = "entry '" + name + "' of " + index_file.string();
    check_tensor_name(name);
    if (!info.is_object() || !info.contains("dtype") || !info["dtype"].is_string() || !info.contains("shape") ||
        !info["shape"].is_array())
      throw OffloadError(where + " must be {\"dtype\": string, \"shape\": [int, ...]}");
    Entry e;
    e.dtype_name = info["dtype"].get<std::string>();
    for (const auto &d : info["shape"]) {
      if (!d.is_number_integer() || d.get<std::int64_t>() < 0)
        throw OffloadError(where + " has a shape that is not a list of non-negative integers");
      e.shape.push_back(d.get<std::int64_t>());
    }
    if (numel_of(e.shape) < 0)
      throw OffloadError(where + " has a shape whose element count overflows");
    entries_.emplace(name, std::move(e));
  }
}

bool OffloadFolder::contains(const std::string &name) const { return entries_.count(name) != 0; }

std::vector<std::string> OffloadFolder::names() const {
  std::vector<std::string> out;
  for (const auto &[name, e] : entries_)
    out.push_back(name);
  return out;
}

const OffloadFolder::Entry &OffloadFolder::entry(const std::string &name) const {
  auto it = entries_.find(name);
  if (it == entries_.end())
    throw OffloadError("tensor '" + name + "' is not in " + (folder_ / "index.json").string() +
                       "; the offload folder does not belong to this model (or is stale): dispatch the "
                       "model again to rewrite it");
  return it->second;
}

torch::Dtype OffloadFolder::dtype(const std::string &name) const {
  return dtype_from_numpy_name(entry(name).dtype_name, "tensor '" + name + "' in " + (folder_ / "index.json").string());
}

std::vector<std::int64_t> OffloadFolder::shape(const std::string &name) const { return entry(name).shape; }

std::int64_t OffloadFolder::check(const std::string &name) const {
  const Entry &e = entry(name);
  const torch::Dtype d = dtype(name);
  const fs::path file = folder_ / (name + ".dat");
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0)
    throw OffloadError("the data of " + describe(name, file) + " is missing (" + errno_text() +
                       "); index.json lists it, so the folder is stale or was partly deleted: dispatch the "
                       "model again to rewrite it");
  // accelerate stores a 0-d tensor as one element (numpy memmaps cannot be 0-d).
  std::int64_t expected = 0;
  // The index is data: a shape whose byte count overflows must be an error,
  // not a wrapped size that could match some file.
  if (__builtin_mul_overflow(numel_of(e.shape), static_cast<std::int64_t>(c10::elementSize(d)), &expected))
    throw OffloadError("entry '" + name + "' of " + (folder_ / "index.json").string() + " has shape " +
                       c10::str(c10::IntArrayRef(e.shape)) + " of " + e.dtype_name +
                       ", whose size in bytes overflows 64 bits; the offload folder is damaged: dispatch the "
                       "model again to rewrite it");
  if (static_cast<std::int64_t>(st.st_size) != expected) {
    std::ostringstream msg;
    msg << "the data of " << describe(name, file) << " has " << st.st_size << " bytes, but index.json says "
        << e.dtype_name << " " << c10::IntArrayRef(e.shape) << ", which is " << expected
        << " bytes; index.json is stale or the file is truncated: dispatch the model again to rewrite it";
    throw OffloadError(msg.str());
  }
  return expected;
}

StorageLocation OffloadFolder::location(const std::string &name) const {
  if (!contains(name))
    return {};
  return {(folder_ / (name + ".dat")).string(), 0, 0};
}

torch::Tensor OffloadFolder::load(const std::string &name) const {
  const Entry &e = entry(name);
  const torch::Dtype d = dtype(name);
  const auto options = torch::TensorOptions().dtype(d);
  const std::int64_t bytes = check(name);
  if (bytes == 0)
    return torch::empty(e.shape, options);
  const fs::path file = folder_ / (name + ".dat");
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw OffloadError("cannot open the data of " + describe(name, file) + ": " + errno_text());
  if (static_cast<std::size_t>(bytes) < detail::StagingPool::kLargest) {
    // Small tensors are read into reused buffers: a mapping each costs more
    // than the copy. From the pool's largest buffer (the size where a
    // checkpoint's private tensors start being mapped), a copy-on-write
    // mapping of the .dat.
    const detail::UniqueFd owned(fd);
    return detail::read_staged(fd, file, e.shape, d, 0);
  }
  // Map the page cache instead of copying. A mapping per load: a write to
  // this tensor copies a page of this mapping only, so it never shows in a
  // later load (or in the file).
  const detail::UniqueFd owned(fd);
  const auto mapping = detail::map_private_range(fd, file, bytes, 0, bytes, "tensor '" + name + "'");
  if (!mapping)
    throw OffloadError("cannot map the data of " + describe(name, file) + ": " + errno_text());
  return torch::from_blob(
      mapping->address, e.shape, [mapping](void *) {}, options);
}

torch::Tensor OffloadFolder::load_direct(const std::string &name) const {
  const Entry &e = entry(name);
  const torch::Dtype d = dtype(name);
  const std::int64_t bytes = check(name);
  if (bytes == 0)
    return {};
  return detail::read_direct<OffloadError>(folder_ / (name + ".dat"), 0, bytes, e.shape, d,
                                           "tensor '" + name + "'");
}

} // namespace metaguard
