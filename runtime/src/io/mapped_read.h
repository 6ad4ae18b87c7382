// Private to the library: reading mapped file bytes without dying of SIGBUS.
//
// Touching a page of a mapping past the end of its file raises SIGBUS, and a
// file truncated by another process while mapped has such pages. The reads
// metaguard itself does through a mapping (probing, converting, copying) run
// under guard_mapped_read, which turns that SIGBUS into a FormatError naming
// the file. Tensors handed to user code that point into a mapping still
// depend on the file after they are returned; see docs/runtime-loading.md.
#pragma once

#include <setjmp.h>
#include <cstddef>
#include <filesystem>
#include <string>

namespace metaguard::detail {

// The jump target of the calling thread's innermost guarded read, or null.
sigjmp_buf *&mapped_read_target();
// Installs the process's SIGBUS handler once (it only acts on threads inside
// a guarded read and otherwise restores the previous disposition).
void install_sigbus_handler();
[[noreturn]] void throw_truncated(const std::filesystem::path &file, const std::string &what);

// Runs `read`, which must only read or write plain memory (no allocation, no
// objects with destructors, no other threads: a SIGBUS leaves it with a jump).
// A SIGBUS raised on this thread meanwhile becomes a FormatError naming
// `file` and `what` was being read.
template <class Read>
void guard_mapped_read(const std::filesystem::path &file, const std::string &what, Read &&read) {
  install_sigbus_handler();
  sigjmp_buf target;
  sigjmp_buf *const outer = mapped_read_target();
  if (sigsetjmp(target, 1) != 0) {
    mapped_read_target() = outer;
    throw_truncated(file, what);
  }
  mapped_read_target() = &target;
  read();
  mapped_read_target() = outer;
}

// Reads one byte of every page of [bytes, bytes + size) under the guard, so
// that a mapping the file no longer backs fails here, with a FormatError,
// rather than later inside a kernel.
void probe_mapped(const std::filesystem::path &file, const std::string &what, const void *bytes,
                  std::size_t size);

} // namespace metaguard::detail
