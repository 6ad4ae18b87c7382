// Private to the library: the config a save committed together with its
// weights. save_pretrained writes config.json after the file that commits
// the weights (model.safetensors, or the index), so a crash in between would
// pair the new weights with the old config.json; the commit file therefore
// carries the config too, and load_config reads it back in that one case.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace metaguard::detail {

// The key under the single file's __metadata__, or the index's "metadata".
inline constexpr const char *kCommittedConfigKey = "metaguard.config";

// The committed config text when config.json is not the one saved with the
// folder's weights because a save died between its commit and config.json's
// rename: config.json is missing or differs, and the dead save's temporary
// of config.json holds the committed text. Nothing otherwise — in
// particular when config.json was edited or removed by hand after the save,
// or when the checkpoint comes from elsewhere (no committed config).
std::optional<std::string> config_of_interrupted_save(const std::filesystem::path &dir,
                                                      const std::optional<std::string> &config_json);

} // namespace metaguard::detail
