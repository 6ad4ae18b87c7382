#include "committed_config.h"

#include <metaguard/checkpoint.h>
#include <metaguard/safetensors.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <iterator>
#include <system_error>

namespace metaguard::detail {
namespace {

std::optional<std::string> read_text(const std::filesystem::path &file) {
  std::ifstream in(file, std::ios::binary);
  if (!in)
    return std::nullopt;
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// What the file a load reads the weights from says the config is. Any
// problem with that file is the weights' loader's to report, not ours.
std::optional<std::string> committed_text(const std::filesystem::path &dir) {
  std::error_code error;
  try {
    if (std::filesystem::is_regular_file(dir / kSafetensorsWeightsName, error)) {
      const SafetensorsFile file(dir / kSafetensorsWeightsName);
      const auto found = file.metadata().find(kCommittedConfigKey);
      if (found == file.metadata().end())
        return std::nullopt;
      return found->second;
    }
    const auto index = read_text(dir / kSafetensorsIndexName);
    if (!index)
      return std::nullopt;
    const auto json = nlohmann::json::parse(*index, nullptr, /*allow_exceptions=*/false);
    const auto metadata = json.is_object() ? json.find("metadata") : json.end();
    if (metadata == json.end() || !metadata->is_object())
      return std::nullopt;
    const auto text = metadata->find(kCommittedConfigKey);
    if (text == metadata->end() || !text->is_string())
      return std::nullopt;
    return text->get<std::string>();
  } catch (const std::exception &) {
    return std::nullopt;
  }
}

bool dead_save_left(const std::filesystem::path &dir, const std::string &text) {
  const std::string prefix = ".config.json.tmp-";
  std::error_code error;
  for (const auto &item : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = item.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && read_text(item.path()) == text)
      return true;
  }
  return false;
}

} // namespace

std::optional<std::string> config_of_interrupted_save(const std::filesystem::path &dir,
                                                      const std::optional<std::string> &config_json) {
  const auto committed = committed_text(dir);
  if (!committed || config_json == committed)
    return std::nullopt;
  // A config.json removed or edited by hand is the user's: only the
  // temporary of a save that died before renaming it says otherwise.
  if (dead_save_left(dir, *committed))
    return committed;
  return std::nullopt;
}

} // namespace metaguard::detail
