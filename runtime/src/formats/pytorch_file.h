// Private to the library: one file written by torch.save of a state dict
// (`pytorch_model.bin` or a shard of it): a zip archive, stored without
// compression, of a pickle (`data.pkl`) and one record per storage; or the
// legacy format of PyTorch before 1.6 (pickles followed by the storages).
//
// The pickles are run by metaguard's restricted reader (state_dict_pickle.h);
// the storages are never copied out of the file: each tensor is the bytes of
// its storage, mapped privately and read as a safetensors file's are (legacy
// storages are not aligned, so those tensors are copies). A
// view whose strides are not contiguous (a transposed tensor saved as such)
// is copied into a contiguous tensor when read.
#pragma once

#include <metaguard/safetensors.h>

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace metaguard::detail {

class PytorchFile {
public:
  // Opens and checks `path`; throws FormatError naming it and the reason.
  PytorchFile(const std::filesystem::path &path, const SafetensorsOptions &options);

  const std::filesystem::path &path() const { return bytes_.path(); }
  // Tensor names in the pickle's order.
  const std::vector<std::string> &names() const { return names_; }
  const TensorInfo &info(std::string_view name) const;
  torch::Tensor tensor(std::string_view name) const;
  torch::Tensor private_tensor(std::string_view name) const;
  torch::Tensor tensor(std::string_view name, torch::Dtype dtype, torch::Device device) const;

private:
  // A view that is not contiguous: read from its whole storage.
  struct Strided {
    TensorInfo info;
    std::string storage;
    std::int64_t offset = 0;
    std::vector<std::int64_t> strides;
  };
  torch::Tensor gather(const Strided &view) const;

  // Declared first: the constructor fills them while it opens bytes_.
  std::vector<std::string> names_;
  std::map<std::string, Strided, std::less<>> strided_;
  // Contiguous tensors by their own names; the storages of strided views
  // under a name no tensor can have.
  SafetensorsFile bytes_;
};

} // namespace metaguard::detail
