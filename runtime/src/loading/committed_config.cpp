#include "loading/committed_config.h"

#include <metaguard/checkpoint_reader.h>

#include "formats/checkpoint_index.h"

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
  try {
    const auto layout = find_checkpoint(dir);
    if (!layout || layout->format != CheckpointFormat::Safetensors)
      return std::nullopt;
    // The metadata only: the shards need not be opened for it.
    const auto metadata = layout->sharded
                              ? read_shard_index(layout->file, SafetensorsOptions{}.max_header_size).metadata
                              : SafetensorsFile(layout->file).metadata();
    const auto found = metadata.find(kCommittedConfigKey);
    if (found == metadata.end())
      return std::nullopt;
    return found->second;
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
