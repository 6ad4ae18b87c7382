// Byte sizes written the way accelerate and transformers accept them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace metaguard {

// Parses "5GB", "10GiB", "512MiB", "100KB", "1234" (bytes) as accelerate
// does: GiB/MiB/KiB are powers of 2, GB/MB/KB powers of 10; case-insensitive,
// spaces allowed before the unit. Throws Error naming a bad or overflowing
// string.
std::int64_t parse_size(std::string_view text);

// A size given either as a byte count or as a string for parse_size.
class Size {
public:
  Size(std::int64_t bytes); // NOLINT(google-explicit-constructor)
  Size(int bytes);          // NOLINT(google-explicit-constructor)
  Size(std::string_view text); // NOLINT(google-explicit-constructor)
  Size(const char *text);      // NOLINT(google-explicit-constructor)
  Size(const std::string &text); // NOLINT(google-explicit-constructor)
  std::int64_t bytes() const { return bytes_; }

private:
  std::int64_t bytes_;
};

} // namespace metaguard
