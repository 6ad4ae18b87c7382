// safetensors dtype names ("F32", "BF16", "U16", ...) and their LibTorch
// counterparts. Shared by the safetensors reader/writer and anything else that
// needs the same table (e.g. offload code reading checkpoint shards).
#pragma once

#include <torch/types.h>

#include <optional>
#include <string>
#include <string_view>

namespace metaguard {

// Bits per element of a dtype named in the safetensors format, including the
// ones LibTorch 1.13 cannot hold (U16, U32, U64, F8_*, F4, F6_*): the reader
// needs their size to validate a file it can still partly load. nullopt for a
// name the format does not define.
std::optional<int> safetensors_dtype_bits(std::string_view name);

// The LibTorch dtype of a safetensors dtype name; nullopt when LibTorch has
// none (or the name is unknown).
std::optional<torch::Dtype> torch_dtype_from_safetensors(std::string_view name);

// The safetensors name of a LibTorch dtype; throws Error for a dtype the format
// cannot represent (e.g. quantized types, complex double).
std::string safetensors_dtype_name(torch::Dtype dtype);

// PyTorch's name of a dtype without its "torch." ("float32", "bfloat16"):
// what transformers writes as config.json's "dtype" and accelerate in an
// offload index. nullopt for a dtype outside the table (quantized types).
std::optional<std::string> torch_dtype_name(torch::Dtype dtype);
// The dtype of such a name; nullopt for a name LibTorch cannot hold.
std::optional<torch::Dtype> dtype_from_torch_name(std::string_view name);

} // namespace metaguard
