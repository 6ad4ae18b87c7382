// Private to the library: JSON parsing as strict as the safetensors reference
// (valid UTF-8, no duplicate keys) and safe on hostile input (bounded depth).
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string_view>

namespace metaguard::detail {

// Offset of the first byte that is not part of valid UTF-8 (overlong forms,
// surrogates and code points above U+10FFFF are invalid); nullopt if valid.
std::optional<std::size_t> find_invalid_utf8(std::string_view text);

// Parses `text`; throws std::runtime_error whose what() says why (syntax
// error with position, duplicate key, nesting deeper than max_depth). The
// caller adds which file it was.
nlohmann::json parse_json_strict(std::string_view text, int max_depth = 64);

} // namespace metaguard::detail
