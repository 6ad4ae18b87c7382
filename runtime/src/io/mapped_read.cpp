#include "io/mapped_read.h"

#include <metaguard/errors.h>

#include <csignal>
#include <mutex>
#include <unistd.h>

namespace metaguard::detail {
namespace {

struct sigaction g_previous {};

void on_sigbus(int, siginfo_t *, void *) {
  if (sigjmp_buf *target = mapped_read_target())
    siglongjmp(*target, 1);
  // Not one of our reads: give the signal back to whoever had it (by
  // default, death), and let the faulting access raise it again.
  ::sigaction(SIGBUS, &g_previous, nullptr);
}

} // namespace

sigjmp_buf *&mapped_read_target() {
  thread_local sigjmp_buf *target = nullptr;
  return target;
}

void install_sigbus_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_sigaction = on_sigbus;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGBUS, &action, &g_previous);
  });
}

void throw_truncated(const std::filesystem::path &file, const std::string &what) {
  throw FormatError(FormatError::Kind::truncated, "file '" + file.string() + "': reading " + what +
                    " hit a part of the file that no longer exists: another process truncated or "
                    "rewrote the file while it was mapped. Do not rewrite checkpoint files in "
                    "place while they are loaded (save_pretrained writes new files and renames "
                    "them); reopen the checkpoint and load again");
}

void probe_mapped(const std::filesystem::path &file, const std::string &what, const void *bytes,
                  std::size_t size) {
  if (size == 0)
    return;
  static const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const auto *first = static_cast<const volatile char *>(bytes);
  guard_mapped_read(file, what, [&] {
    char sink = 0;
    for (std::size_t i = 0; i < size; i += page)
      sink = static_cast<char>(sink ^ first[i]);
    sink = static_cast<char>(sink ^ first[size - 1]);
    (void)sink;
  });
}

} // namespace metaguard::detail
