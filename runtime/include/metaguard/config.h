// A model's config.json, as Hugging Face writes it next to the weights.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>

namespace metaguard {

using Config = nlohmann::json;

// Reads `dir_or_file`/config.json, or the given JSON file. Throws FormatError
// naming the file when it is missing, not JSON, or not a JSON object.
Config load_config(const std::filesystem::path &dir_or_file);

} // namespace metaguard
