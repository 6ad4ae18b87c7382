// Private to the library: a PyTorch checkpoint (`pytorch_model.bin`, or
// shards listed by `pytorch_model.bin.index.json`) behind the reader
// interface. transformers 5 writes no such files but still reads them, and
// many published models have nothing else.
#pragma once

#include <metaguard/checkpoint_reader.h>

#include "formats/pytorch_file.h"

namespace metaguard::detail {

class PytorchCheckpoint : public ShardedCheckpoint<PytorchFile> {
public:
  // `layout` says which file or index to open (checkpoint_layout).
  PytorchCheckpoint(const CheckpointLayout &layout, const SafetensorsOptions &options);

  const char *format() const override { return "pytorch"; }
  std::map<std::string, std::string> metadata() const override { return metadata_; }

private:
  std::map<std::string, std::string> metadata_;
};

} // namespace metaguard::detail
