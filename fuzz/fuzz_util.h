// Shared by the fuzz targets: a private scratch folder on tmpfs where each
// input is written as the file the parser under test reads, and the rule that
// only metaguard's typed errors may leave a parser.
#pragma once

#include <metaguard/errors.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <unistd.h>

namespace metaguard_fuzz {

// One folder per process (fuzzers may run side by side), removed at exit.
inline const std::filesystem::path &scratch() {
  static const std::filesystem::path dir = [] {
    const std::filesystem::path shm("/dev/shm");
    const auto base = std::filesystem::is_directory(shm) ? shm : std::filesystem::temp_directory_path();
    auto path = base / ("metaguard-fuzz-" + std::to_string(::getpid()));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
    static struct Cleanup {
      std::filesystem::path path;
      ~Cleanup() {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
      }
    } cleanup{path};
    return path;
  }();
  return dir;
}

// A fresh, empty sub-folder of the scratch folder.
inline std::filesystem::path fresh_dir(const std::string &name) {
  const auto dir = scratch() / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline void write_file(const std::filesystem::path &file, std::string_view bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    std::fprintf(stderr, "fuzz harness: cannot write %s\n", file.c_str());
    std::abort();
  }
}

inline std::string_view as_text(const std::uint8_t *data, std::size_t size) {
  return {reinterpret_cast<const char *>(data), size};
}

// A property the parser promised was broken: a crash the fuzzer reports.
[[noreturn]] inline void violated(const char *what) {
  std::fprintf(stderr, "fuzz harness: property violated: %s\n", what);
  std::abort();
}

// Runs `f`; a metaguard::Error is the expected answer to bad input. Anything
// else (c10::Error, std::out_of_range, ...) escapes, and the fuzzer (or the
// replay test) reports it: the runtime promises typed errors only.
template <class F> bool expect_typed_errors(F &&f) {
  try {
    f();
    return true;
  } catch (const metaguard::Error &) {
    return false;
  }
}

} // namespace metaguard_fuzz
