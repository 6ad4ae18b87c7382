#include "formats/json_strict.h"

#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace metaguard::detail {

std::optional<std::size_t> find_invalid_utf8(std::string_view text) {
  const auto *s = reinterpret_cast<const unsigned char *>(text.data());
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    int extra = 0;
    std::uint32_t cp = 0, min = 0;
    if ((c & 0xE0) == 0xC0) {
      extra = 1, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      extra = 2, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      extra = 3, cp = c & 0x07, min = 0x10000;
    } else {
      return i;
    }
    if (n - i <= static_cast<std::size_t>(extra))
      return i;
    for (int k = 1; k <= extra; ++k) {
      if ((s[i + k] & 0xC0) != 0x80)
        return i;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return i;
    i += static_cast<std::size_t>(extra) + 1;
  }
  return std::nullopt;
}

nlohmann::json parse_json_strict(std::string_view text, int max_depth) {
  // nlohmann keeps the last of duplicate keys silently; a checkpoint whose
  // header names a tensor twice is ambiguous, so track keys per open object.
  std::vector<std::set<std::string>> open_objects;
  auto callback = [&](int depth, nlohmann::json::parse_event_t event,
                      nlohmann::json &parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (depth > max_depth)
      throw std::runtime_error("JSON nested deeper than " + std::to_string(max_depth) +
                               " levels");
    if (event == Event::object_start) {
      open_objects.emplace_back();
    } else if (event == Event::object_end) {
      if (!open_objects.empty())
        open_objects.pop_back();
    } else if (event == Event::key && !open_objects.empty()) {
      const auto &key = parsed.get_ref<const std::string &>();
      if (!open_objects.back().insert(key).second)
        throw std::runtime_error("duplicate key \"" + key + "\"");
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text.begin(), text.end(), callback);
  } catch (const nlohmann::json::exception &e) {
    throw std::runtime_error(std::string("invalid JSON: ") + e.what());
  }
}

} // namespace metaguard::detail
