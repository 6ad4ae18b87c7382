// Private to the library: the one way the readers and writers raise
// FormatError. A message names the kind of file and its path, then the
// tensor or key at fault when there is one, then the reason:
//   safetensors file 'model.safetensors': tensor 'w': unknown dtype 'F7'
#pragma once

#include <metaguard/errors.h>

#include <filesystem>
#include <string>
#include <string_view>

namespace metaguard::detail {

using FormatKind = FormatError::Kind;

// "<what> '<file>'", e.g. "PyTorch checkpoint 'pytorch_model.bin'".
std::string file_subject(std::string_view what, const std::filesystem::path &file);

[[noreturn]] void fail_file(FormatKind kind, std::string_view what,
                            const std::filesystem::path &file, const std::string &reason);

// As fail_file, about one tensor of the file.
[[noreturn]] void fail_tensor(FormatKind kind, std::string_view what,
                              const std::filesystem::path &file, std::string_view tensor,
                              const std::string &reason);

// Whether a file that starts with `start` is a git-lfs pointer (a clone made
// without git-lfs has these small text files where the weights should be).
bool is_lfs_pointer(std::string_view start);

} // namespace metaguard::detail
