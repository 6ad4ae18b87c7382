// The weights of a checkpoint, whatever their format: the one interface that
// loading, offloading and the skeleton builder read tensors through.
//
// Formats: safetensors (`model.safetensors`, or shards listed by
// `model.safetensors.index.json`) and PyTorch's pickled state dicts
// (`pytorch_model.bin`, or shards listed by `pytorch_model.bin.index.json`,
// as written by torch.save). Which files of a folder hold its weights is
// decided once, by find_checkpoint, in transformers' order.
#pragma once

#include <metaguard/errors.h>
#include <metaguard/safetensors.h>

#include <torch/types.h>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace metaguard {

class CheckpointReader {
public:
  virtual ~CheckpointReader() = default;

  // The folder holding the files.
  virtual const std::filesystem::path &folder() const = 0;
  // "safetensors" or "pytorch": for messages.
  virtual const char *format() const = 0;
  virtual bool sharded() const = 0;
  // Every file a load reads: the weights files, and the index when sharded.
  virtual std::vector<std::filesystem::path> file_paths() const = 0;
  // file_paths(). Not virtual: SafetensorsCheckpoint keeps the files() of
  // its first release, which returns its opened files.
  std::vector<std::filesystem::path> files() const { return file_paths(); }
  // Every tensor name, file by file.
  virtual const std::vector<std::string> &names() const = 0;
  virtual bool contains(std::string_view name) const = 0;
  // Name, shape and dtype (a safetensors dtype name: "F32", "BF16", ...) of a
  // tensor; the offsets are the format's own. Throws FormatError naming the
  // checkpoint and tensor when there is none.
  virtual const TensorInfo &info(std::string_view name) const = 0;
  // The file holding `name`; throws FormatError when there is none.
  virtual const std::filesystem::path &path_of(std::string_view name) const = 0;
  // String metadata: a safetensors header's __metadata__, or the index's
  // "metadata" object (empty for formats without one).
  virtual std::map<std::string, std::string> metadata() const = 0;

  // A CPU tensor with the checkpoint's dtype; zero-copy where the format and
  // alignment allow it, so two calls may share memory.
  virtual torch::Tensor tensor(std::string_view name) const = 0;
  // A CPU tensor with the checkpoint's dtype whose memory nothing else shares.
  virtual torch::Tensor private_tensor(std::string_view name) const = 0;
  // private_tensor of each name. Tensors that lie together in one file may
  // share one private mapping (see SafetensorsFile::private_tensors): their
  // memory then goes back when the last of them dies.
  virtual std::vector<torch::Tensor> private_tensors(const std::vector<std::string> &names) const;
  // The tensor converted to `dtype` on `device`.
  virtual torch::Tensor tensor(std::string_view name, torch::Dtype dtype,
                               torch::Device device = torch::kCPU) const = 0;
};

enum class CheckpointFormat { Safetensors, Pytorch };

// Where a folder's weights are.
struct CheckpointLayout {
  CheckpointFormat format = CheckpointFormat::Safetensors;
  // The weights file, or the index when sharded.
  std::filesystem::path file;
  bool sharded = false;
};

inline constexpr const char *kSafetensorsWeightsName = "model.safetensors";
inline constexpr const char *kSafetensorsIndexName = "model.safetensors.index.json";
inline constexpr const char *kPytorchWeightsName = "pytorch_model.bin";
inline constexpr const char *kPytorchIndexName = "pytorch_model.bin.index.json";

// The files holding the weights of `folder`, in transformers' order of
// preference: model.safetensors, model.safetensors.index.json,
// pytorch_model.bin, pytorch_model.bin.index.json. nullopt when it has none.
std::optional<CheckpointLayout> find_checkpoint(const std::filesystem::path &folder);

// The layout of `location`: a folder (find_checkpoint; FormatError when it
// has no weights), a weights file (.safetensors, or a torch.save archive) or
// an index (`*.bin.index.json` for pickles, any other `*.index.json` for
// safetensors).
CheckpointLayout checkpoint_layout(const std::filesystem::path &location);

// Opens and validates every file of `location` (see checkpoint_layout).
// `options` are the reader limits; pickles are mapped the same way.
std::shared_ptr<const CheckpointReader> open_checkpoint(const std::filesystem::path &location,
                                                        const SafetensorsOptions &options = {});

namespace detail {

// A reader over files of one format (`File`: names, info, path, tensor,
// private_tensor, tensor(name, dtype, device)), one or several shards: which
// file holds each tensor, and the reads forwarded to it. The formats'
// readers derive from it and add how their files are opened.
template <class File> class ShardedCheckpoint : public CheckpointReader {
public:
  const std::filesystem::path &folder() const override { return folder_; }
  bool sharded() const override { return !index_.empty(); }
  std::vector<std::filesystem::path> file_paths() const override {
    std::vector<std::filesystem::path> paths;
    if (sharded())
      paths.push_back(index_);
    for (const auto &file : files_)
      paths.push_back(file.path());
    return paths;
  }
  const std::vector<std::string> &names() const override { return names_; }
  bool contains(std::string_view name) const override { return shard_of_.find(name) != shard_of_.end(); }
  const TensorInfo &info(std::string_view name) const override { return file_of(name).info(name); }
  const std::filesystem::path &path_of(std::string_view name) const override {
    return file_of(name).path();
  }
  torch::Tensor tensor(std::string_view name) const override { return file_of(name).tensor(name); }
  torch::Tensor private_tensor(std::string_view name) const override {
    return file_of(name).private_tensor(name);
  }
  torch::Tensor tensor(std::string_view name, torch::Dtype dtype,
                       torch::Device device = torch::kCPU) const override {
    return file_of(name).tensor(name, dtype, device);
  }

  // The file holding `name`; throws FormatError naming the checkpoint when
  // there is none.
  const File &file_of(std::string_view name) const {
    const auto it = shard_of_.find(name);
    if (it == shard_of_.end())
      throw FormatError(FormatError::Kind::missing, "checkpoint '" + folder_.string() + "': tensor '" + std::string(name) +
                        "': not in the checkpoint");
    return files_[it->second];
  }

protected:
  void add(File file) {
    const std::size_t index = files_.size();
    files_.push_back(std::move(file));
    for (const auto &name : files_.back().names()) {
      names_.push_back(name);
      shard_of_.emplace(name, index);
    }
  }
  const std::vector<File> &opened_files() const { return files_; }

  std::filesystem::path folder_;
  // The index, when sharded.
  std::filesystem::path index_;

private:
  std::vector<File> files_;
  std::vector<std::string> names_;
  std::map<std::string, std::size_t, std::less<>> shard_of_;
};

} // namespace detail

} // namespace metaguard
