// Private to the library: small POSIX file helpers whose failures become
// FormatErrors that name the file and say why (strerror).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace metaguard::detail {

// Owns a file descriptor.
class UniqueFd {
public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd();
  UniqueFd(UniqueFd &&other) noexcept : fd_(other.release()) {}
  UniqueFd &operator=(UniqueFd &&other) noexcept;
  UniqueFd(const UniqueFd &) = delete;
  UniqueFd &operator=(const UniqueFd &) = delete;
  int get() const { return fd_; }
  int release();

private:
  int fd_ = -1;
};

// The message of errno, e.g. "No such file or directory".
std::string errno_text(int error);

// Opens `path` for reading and sets `size` to its length; throws FormatError
// "<label> '<path>': <reason>" when it cannot be opened or is not a regular
// file.
UniqueFd open_regular_file(const std::filesystem::path &path, const char *label, std::int64_t &size);

// Reads exactly `size` bytes at `offset`; throws FormatError naming `path`.
void read_exact(int fd, const std::filesystem::path &path, void *buffer,
                std::size_t size, std::int64_t offset);

// A file written under a temporary name next to its target and renamed onto
// it only by publish(): readers never see a half-written file, and a failure
// before publish() leaves whatever was at the target untouched. The
// temporary file is removed when the object dies unpublished.
class AtomicFile {
public:
  explicit AtomicFile(std::filesystem::path target);
  ~AtomicFile();
  AtomicFile(const AtomicFile &) = delete;
  AtomicFile &operator=(const AtomicFile &) = delete;
  AtomicFile(AtomicFile &&) noexcept;
  AtomicFile &operator=(AtomicFile &&) = delete;

  void write(const void *data, std::size_t size);
  // Flushes the data to disk and closes the temporary file.
  void finish();
  // Renames the finished temporary file onto the target.
  void publish();
  // Leaves the finished temporary file on disk when this object goes away.
  void keep_temporary() { published_ = true; }
  const std::filesystem::path &target() const { return target_; }

private:
  [[noreturn]] void fail(const std::string &what, int error) const;
  std::filesystem::path target_;
  std::filesystem::path temporary_;
  UniqueFd fd_;
  bool published_ = false;
};

// Makes renames in `dir` durable; best effort (some file systems refuse).
void sync_directory(const std::filesystem::path &dir);

// Removes a file; false (errno set) when it could not.
bool remove_file(const std::filesystem::path &file);

// Fault injection for tests. Every step that changes the disk ("create",
// "write", "fsync", "rename", "unlink", "syncdir") first calls the hook with
// its name and path; a non-zero return is taken as that step's errno (e.g.
// ENOSPC for a full disk), and a hook may also end the process there to
// simulate a crash. Null (the default) costs one load per step.
using DiskStepHook = int (*)(const char *step, const std::filesystem::path &path);
void set_disk_step_hook(DiskStepHook hook);
// 0, or the errno the hook injects for this step.
int disk_step(const char *step, const std::filesystem::path &path);

} // namespace metaguard::detail
