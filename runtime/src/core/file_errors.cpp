#include "core/file_errors.h"

namespace metaguard::detail {

std::string file_subject(std::string_view what, const std::filesystem::path &file) {
  return std::string(what) + " '" + file.string() + "'";
}

void fail_file(FormatKind kind, std::string_view what, const std::filesystem::path &file,
               const std::string &reason) {
  throw FormatError(kind, file_subject(what, file) + ": " + reason);
}

void fail_tensor(FormatKind kind, std::string_view what, const std::filesystem::path &file,
                 std::string_view tensor, const std::string &reason) {
  fail_file(kind, what, file, "tensor '" + std::string(tensor) + "': " + reason);
}

bool is_lfs_pointer(std::string_view start) {
  constexpr std::string_view kPointerStart = "version https://git-lfs.github.com/spec/";
  return start.substr(0, kPointerStart.size()) == kPointerStart;
}

} // namespace metaguard::detail
