#include <metaguard/checkpoint.h>
#include <metaguard/checkpoint_reader.h>

#include "formats/pytorch_checkpoint.h"
#include "formats/state_dict_pickle.h"

#include <fstream>
#include <system_error>

namespace metaguard {
namespace {

bool ends_with(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// torch.save writes zip archives (or, before PyTorch 1.6, pickles that
// start with its magic number); safetensors files start with a length.
bool is_torch_file(const std::filesystem::path &file) {
  std::ifstream in(file, std::ios::binary);
  char start[16] = {};
  in.read(start, sizeof start);
  const std::string_view head(start, static_cast<std::size_t>(in.gcount()));
  return head.rfind(std::string_view("PK\x03\x04", 4), 0) == 0 || detail::is_legacy_torch_file(head);
}

} // namespace

std::optional<CheckpointLayout> find_checkpoint(const std::filesystem::path &folder) {
  const std::pair<const char *, CheckpointLayout> candidates[] = {
      {kSafetensorsWeightsName, {CheckpointFormat::Safetensors, {}, false}},
      {kSafetensorsIndexName, {CheckpointFormat::Safetensors, {}, true}},
      {kPytorchWeightsName, {CheckpointFormat::Pytorch, {}, false}},
      {kPytorchIndexName, {CheckpointFormat::Pytorch, {}, true}},
  };
  for (const auto &[name, layout] : candidates) {
    std::error_code error;
    if (std::filesystem::exists(folder / name, error)) {
      CheckpointLayout found = layout;
      found.file = folder / name;
      return found;
    }
  }
  return std::nullopt;
}

CheckpointLayout checkpoint_layout(const std::filesystem::path &location) {
  std::error_code error;
  if (std::filesystem::is_directory(location, error)) {
    if (auto layout = find_checkpoint(location))
      return *layout;
    throw FormatError(FormatError::Kind::missing, "checkpoint folder '" + location.string() + "': has neither " +
                      kSafetensorsWeightsName + " nor " + kSafetensorsIndexName + " (nor " +
                      kPytorchWeightsName + " or " + kPytorchIndexName + ")");
  }
  if (!std::filesystem::exists(location, error))
    throw FormatError(FormatError::Kind::missing, "checkpoint '" + location.string() + "': no such file or folder");
  const std::string name = location.filename().string();
  if (ends_with(name, ".bin.index.json"))
    return {CheckpointFormat::Pytorch, location, true};
  if (ends_with(name, ".index.json"))
    return {CheckpointFormat::Safetensors, location, true};
  return {is_torch_file(location) ? CheckpointFormat::Pytorch : CheckpointFormat::Safetensors, location, false};
}

std::vector<torch::Tensor> CheckpointReader::private_tensors(const std::vector<std::string> &names) const {
  std::vector<torch::Tensor> tensors;
  tensors.reserve(names.size());
  for (const auto &name : names)
    tensors.push_back(private_tensor(name));
  return tensors;
}

std::shared_ptr<const CheckpointReader> open_checkpoint(const std::filesystem::path &location,
                                                        const SafetensorsOptions &options) {
  const CheckpointLayout layout = checkpoint_layout(location);
  if (layout.format == CheckpointFormat::Pytorch)
    return std::make_shared<const detail::PytorchCheckpoint>(layout, options);
  return std::make_shared<const SafetensorsCheckpoint>(layout.file, options);
}

} // namespace metaguard
