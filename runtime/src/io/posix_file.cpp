#include "io/posix_file.h"

#include "core/file_errors.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace metaguard::detail {

UniqueFd::~UniqueFd() {
  if (fd_ >= 0)
    ::close(fd_);
}

UniqueFd &UniqueFd::operator=(UniqueFd &&other) noexcept {
  if (this != &other) {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

int UniqueFd::release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

std::string errno_text(int error) { return std::strerror(error); }

UniqueFd open_regular_file(const std::filesystem::path &path, const char *label, std::int64_t &size) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0)
    fail_file(errno == ENOENT ? FormatKind::missing : FormatKind::io, label, path,
              "cannot open: " + errno_text(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    fail_file(FormatKind::io, label, path, "cannot stat: " + errno_text(errno));
  if (!S_ISREG(st.st_mode))
    fail_file(FormatKind::missing, label, path, "not a regular file");
  size = st.st_size;
  return fd;
}

void read_exact(int fd, const std::filesystem::path &path, void *buffer,
                std::size_t size, std::int64_t offset) {
  auto *out = static_cast<char *>(buffer);
  while (size > 0) {
    const ssize_t n = ::pread(fd, out, size, offset);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      throw FormatError(FormatKind::io, "cannot read '" + path.string() + "': " + errno_text(errno));
    if (n == 0)
      throw FormatError(FormatKind::truncated,
                        "cannot read '" + path.string() +
                            "': the file ended early (was it truncated while being read?)");
    out += n;
    size -= static_cast<std::size_t>(n);
    offset += n;
  }
}

namespace {
// Distinguishes temporaries of concurrent saves within one process.
std::atomic<unsigned> temporary_counter{0};
std::atomic<DiskStepHook> disk_step_hook{nullptr};
} // namespace

void set_disk_step_hook(DiskStepHook hook) { disk_step_hook.store(hook); }

int disk_step(const char *step, const std::filesystem::path &path) {
  const DiskStepHook hook = disk_step_hook.load();
  return hook ? hook(step, path) : 0;
}

bool remove_file(const std::filesystem::path &file) {
  if (const int injected = disk_step("unlink", file)) {
    errno = injected;
    return false;
  }
  return ::unlink(file.c_str()) == 0;
}

AtomicFile::AtomicFile(std::filesystem::path target) : target_(std::move(target)) {
  temporary_ = target_.parent_path() /
               ("." + target_.filename().string() + ".tmp-" +
                std::to_string(::getpid()) + "-" + std::to_string(temporary_counter++));
  const int injected = disk_step("create", temporary_);
  const int fd = injected ? (errno = injected, -1)
                          : ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    fail("cannot create a temporary file in '" + target_.parent_path().string() + "'", errno);
  fd_ = UniqueFd(fd);
}

AtomicFile::AtomicFile(AtomicFile &&other) noexcept
    : target_(std::move(other.target_)), temporary_(std::move(other.temporary_)),
      fd_(std::move(other.fd_)), published_(other.published_) {
  other.published_ = true; // the moved-from object owns no temporary
}

AtomicFile::~AtomicFile() {
  if (published_)
    return;
  fd_ = UniqueFd();
  ::unlink(temporary_.c_str());
}

void AtomicFile::fail(const std::string &what, int error) const {
  throw FormatError(FormatKind::io, "could not write '" + target_.string() + "': " + what + ": " +
                    errno_text(error) + "; nothing was replaced");
}

void AtomicFile::write(const void *data, std::size_t size) {
  const auto *in = static_cast<const char *>(data);
  while (size > 0) {
    // Large writes are chunked: some kernels cap one write at ~2 GiB.
    const std::size_t chunk = std::min<std::size_t>(size, std::size_t{1} << 30);
    const int injected = disk_step("write", temporary_);
    const ssize_t n = injected ? (errno = injected, -1) : ::write(fd_.get(), in, chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      fail("writing the temporary file '" + temporary_.string() + "' failed", errno);
    in += n;
    size -= static_cast<std::size_t>(n);
  }
}

void AtomicFile::finish() {
  const int injected = disk_step("fsync", temporary_);
  if (injected || ::fsync(fd_.get()) != 0)
    fail("flushing the temporary file to disk failed", injected ? injected : errno);
  const int fd = fd_.release();
  if (::close(fd) != 0)
    fail("closing the temporary file failed", errno);
}

void AtomicFile::publish() {
  const int injected = disk_step("rename", target_);
  if (injected || ::rename(temporary_.c_str(), target_.c_str()) != 0)
    fail("renaming the temporary file onto it failed", injected ? injected : errno);
  published_ = true;
}

void sync_directory(const std::filesystem::path &dir) {
  if (disk_step("syncdir", dir) != 0)
    return;
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() >= 0)
    ::fsync(fd.get());
}

} // namespace metaguard::detail
