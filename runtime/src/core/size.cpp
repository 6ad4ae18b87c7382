#include <metaguard/errors.h>
#include <metaguard/size.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <stdexcept>
#include <string>

namespace metaguard {
namespace {

Error bad_size(std::string_view text, const char *why) {
  return Error("size '" + std::string(text) + "' " + why +
               "; write bytes (\"1234\") or a number with a unit: "
               "KiB/MiB/GiB/TiB (powers of 2) or KB/MB/GB/TB (powers of 10)");
}

// Unit suffix (lower-case) -> multiplier.
std::int64_t unit_multiplier(const std::string &unit) {
  static const std::pair<const char *, std::int64_t> units[] = {
      {"", 1},
      {"b", 1},
      {"kib", std::int64_t{1} << 10},
      {"mib", std::int64_t{1} << 20},
      {"gib", std::int64_t{1} << 30},
      {"tib", std::int64_t{1} << 40},
      {"kb", 1000},
      {"mb", 1000 * 1000},
      {"gb", 1000 * 1000 * 1000},
      {"tb", std::int64_t{1000} * 1000 * 1000 * 1000},
  };
  for (const auto &[name, factor] : units)
    if (unit == name)
      return factor;
  return 0;
}

} // namespace

std::int64_t parse_size(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])))
    ++i;
  const std::size_t digits_begin = i;
  while (i < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  const std::string number(text.substr(digits_begin, i - digits_begin));
  if (number.empty() || std::count(number.begin(), number.end(), '.') > 1)
    throw bad_size(text, "has no number");
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])))
    ++i;
  std::string unit(text.substr(i));
  while (!unit.empty() && std::isspace(static_cast<unsigned char>(unit.back())))
    unit.pop_back();
  std::transform(unit.begin(), unit.end(), unit.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  const std::int64_t factor = unit_multiplier(unit);
  if (factor == 0)
    throw bad_size(text, "has an unknown unit");
  // Fractions ("1.5GB") are allowed, as in accelerate; long double keeps
  // every int64 byte count exact enough to detect overflow.
  // std::stold throws its own exceptions for "." and for digit strings
  // beyond long double's range: report them as bad sizes.
  long double parsed = 0;
  try {
    parsed = std::stold(number);
  } catch (const std::invalid_argument &) {
    throw bad_size(text, "has no number");
  } catch (const std::out_of_range &) {
    throw bad_size(text, "is too large");
  }
  const long double value = parsed * static_cast<long double>(factor);
  if (value >= static_cast<long double>(std::numeric_limits<std::int64_t>::max()))
    throw bad_size(text, "is too large");
  return static_cast<std::int64_t>(value);
}

Size::Size(std::int64_t bytes) : bytes_(bytes) {
  if (bytes < 0)
    throw Error("size " + std::to_string(bytes) + " is negative");
}
Size::Size(int bytes) : Size(static_cast<std::int64_t>(bytes)) {}
Size::Size(std::string_view text) : bytes_(parse_size(text)) {}
Size::Size(const char *text) : Size(std::string_view(text ? text : "")) {}
Size::Size(const std::string &text) : Size(std::string_view(text)) {}

} // namespace metaguard
