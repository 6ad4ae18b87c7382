// Test helpers: a scratch directory removed at the end of the test, and
// whole-file byte I/O for building and inspecting files by hand.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace metaguard_test {

class TempDir {
public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "metaguard-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  const std::filesystem::path &path() const { return path_; }
  std::filesystem::path operator/(const std::string &name) const { return path_ / name; }

private:
  std::filesystem::path path_;
};

inline void write_bytes(const std::filesystem::path &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out)
    throw std::runtime_error("cannot write " + path.string());
}

inline std::string read_bytes(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The 8-byte little-endian length prefix of a safetensors file.
inline std::string length_prefix(std::uint64_t n) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i)
    bytes[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return bytes;
}

// A safetensors file assembled by hand: length, header text, raw data.
inline std::string safetensors_bytes(const std::string &header, const std::string &data) {
  return length_prefix(header.size()) + header + data;
}

// Little-endian bytes of a trivially copyable value (the test hosts are
// little-endian, as the format is).
template <class T> std::string le_bytes(T value) {
  return std::string(reinterpret_cast<const char *>(&value), sizeof value);
}

// The names in a folder, sorted: what a save left behind.
inline std::vector<std::string> files_in(const std::filesystem::path &dir) {
  std::vector<std::string> names;
  for (const auto &item : std::filesystem::directory_iterator(dir))
    names.push_back(item.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// The line of /proc/self/maps whose mapping holds an address: its first and
// past-the-end address, the file offset it starts at, and the file ("" if
// anonymous). All zero and empty when no mapping holds it.
struct MapsEntry {
  std::uintptr_t begin = 0, end = 0;
  std::int64_t offset = -1;
  std::string file;
};
inline MapsEntry maps_entry_of(const void *pointer) {
  std::ifstream maps("/proc/self/maps");
  const auto address = reinterpret_cast<std::uintptr_t>(pointer);
  std::string line;
  while (std::getline(maps, line)) {
    MapsEntry m;
    char perms[8] = {};
    unsigned long long offset = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx %7s %llx", &m.begin, &m.end, perms, &offset) != 4 ||
        address < m.begin || address >= m.end)
      continue;
    m.offset = static_cast<std::int64_t>(offset);
    const auto slash = line.find('/');
    if (slash != std::string::npos)
      m.file = line.substr(slash);
    return m;
  }
  return {};
}

} // namespace metaguard_test
