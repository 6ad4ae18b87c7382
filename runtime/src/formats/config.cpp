#include <metaguard/config.h>
#include <metaguard/errors.h>

#include "loading/committed_config.h"

#include <fstream>
#include <iterator>
#include <optional>
#include <system_error>

namespace metaguard {

namespace {

Config parse_config(const std::string &text, const std::string &where) {
  Config config;
  try {
    config = Config::parse(text);
  } catch (const nlohmann::json::exception &e) {
    throw FormatError(FormatError::Kind::malformed, where + "not valid JSON: " + e.what());
  }
  if (!config.is_object())
    throw FormatError(FormatError::Kind::malformed, where + "must hold a JSON object, found " + config.type_name());
  return config;
}

} // namespace

Config load_config(const std::filesystem::path &dir_or_file) {
  std::error_code error;
  const bool is_dir = std::filesystem::is_directory(dir_or_file, error);
  const auto file = is_dir ? dir_or_file / "config.json" : dir_or_file;
  const std::string where = "config '" + file.string() + "': ";
  std::optional<std::string> text;
  if (std::filesystem::is_regular_file(file, error)) {
    std::ifstream in(file, std::ios::binary);
    text.emplace((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof())
      throw FormatError(FormatError::Kind::io, where + "cannot be read");
  }
  if (is_dir)
    if (const auto committed = detail::config_of_interrupted_save(dir_or_file, text))
      return parse_config(*committed, "config saved with the weights in '" + dir_or_file.string() + "': ");
  if (!text)
    throw FormatError(FormatError::Kind::missing, where + "no such file; from_pretrained builds the model from it "
                              "(save_pretrained writes it for a PreTrainedModel made by from_pretrained or from_config, or when SaveOptions.config is set)");
  return parse_config(*text, where);
}

} // namespace metaguard
