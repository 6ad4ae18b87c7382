// Private to the library: the pickle of a state dict saved by torch.save,
// read by a small virtual machine that knows only what a state dict holds.
//
// A pickle is a program: Python's unpickler runs whatever callable it names,
// which is why `torch.load(weights_only=True)` restricts it. This reader goes
// further: it understands the opcodes torch.save emits (protocols 2 to 4), the
// globals that rebuild tensors (`torch._utils._rebuild_tensor_v2`,
// `_rebuild_parameter`, `collections.OrderedDict`, the typed storage classes),
// and refuses everything else with a FormatError naming the opcode or global
// and its byte offset. It creates no tensor: it says which storage record each
// name points into and how (offset, sizes, strides); the caller maps the bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace metaguard::detail {

// A storage named by the pickle's persistent ids: record `data/<key>` of the
// archive, `numel` elements of `dtype` (a safetensors dtype name).
struct PickledStorage {
  std::string key;
  std::string dtype;
  std::int64_t numel = 0;
};

// One entry of the state dict: a view of a storage, in elements.
struct PickledTensor {
  std::string name;
  PickledStorage storage;
  std::int64_t offset = 0;
  std::vector<std::int64_t> sizes;
  std::vector<std::int64_t> strides;
};

// Runs `pickle` and returns its state dict, entries in the pickle's order.
// `where` names the source in errors ("'dir/pytorch_model.bin' (data.pkl)").
// Throws FormatError for a malformed pickle, one holding anything but a
// mapping from names to tensors, or a view that reaches past its storage.
std::vector<PickledTensor> read_state_dict_pickle(std::string_view pickle, const std::string &where);

// torch.save's format before PyTorch 1.6 (still written with
// `_use_new_zipfile_serialization=False`, and what many published
// pytorch_model.bin files are): pickles of a magic number, the protocol
// version and the writer's system information, then the state dict's pickle,
// then a pickle of the storage keys in the order their bytes follow, each
// storage as an 8-byte element count and its bytes.
struct LegacyStateDict {
  std::vector<PickledTensor> tensors;
  std::vector<std::string> storage_order;
  // Offset in the file of the first storage's element count.
  std::size_t storages_at = 0;
};

// Whether `file` starts like a legacy torch.save file (its magic number).
bool is_legacy_torch_file(std::string_view file);
// Reads the pickles of a legacy file; throws FormatError as
// read_state_dict_pickle does, and for a file written on a big-endian host.
LegacyStateDict read_legacy_state_dict(std::string_view file, const std::string &where);

} // namespace metaguard::detail
