#include "committed_config.h"

#include <metaguard/checkpoint.h>
#include <metaguard/safetensors.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <iterator>
#include <system_error>
#include <vector>

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

// The temporaries of config.json that saves left behind (normally none).
std::vector<std::filesystem::path> config_temporaries(const std::filesystem::path &dir) {
  const std::string prefix = ".config.json.tmp-";
  std::vector<std::filesystem::path> found;
  std::error_code error;
  for (const auto &item : std::filesystem::directory_iterator(dir, error))
    if (item.path().filename().string().rfind(prefix, 0) == 0)
      found.push_back(item.path());
  return found;
}

} // namespace

std::optional<std::string> config_of_interrupted_save(const std::filesystem::path &dir,
                                                      const std::optional<std::string> &config_json) {
  // A config.json removed or edited by hand is the user's: only the
  // temporary of a save that died before renaming it says otherwise. Looked
  // for first, so that an ordinary load does not read the commit file here.
  const auto temporaries = config_temporaries(dir);
  if (temporaries.empty())
    return std::nullopt;
  const auto committed = committed_text(dir);
  if (!committed || config_json == committed)
    return std::nullopt;
  for (const auto &temporary : temporaries)
    if (read_text(temporary) == committed)
      return committed;
  return std::nullopt;
}

} // namespace metaguard::detail
