#include <metaguard/dtype.h>
#include <metaguard/errors.h>

namespace metaguard {
namespace {

struct DtypeRow {
  const char *name;
  int bits;
  std::optional<torch::Dtype> torch_dtype;
};

// The safetensors format's dtypes (reference implementation's Dtype enum).
// Rows without a LibTorch dtype are still here so that their sizes validate.
const DtypeRow kDtypes[] = {
    {"BOOL", 8, torch::kBool},
    {"U8", 8, torch::kUInt8},
    {"I8", 8, torch::kInt8},
    {"I16", 16, torch::kInt16},
    {"F16", 16, torch::kFloat16},
    {"BF16", 16, torch::kBFloat16},
    {"I32", 32, torch::kInt32},
    {"F32", 32, torch::kFloat32},
    {"C64", 64, torch::kComplexFloat},
    {"F64", 64, torch::kFloat64},
    {"I64", 64, torch::kInt64},
    {"U16", 16, std::nullopt},
    {"U32", 32, std::nullopt},
    {"U64", 64, std::nullopt},
    {"F8_E5M2", 8, std::nullopt},
    {"F8_E4M3", 8, std::nullopt},
    {"F8_E8M0", 8, std::nullopt},
    {"F6_E2M3", 6, std::nullopt},
    {"F6_E3M2", 6, std::nullopt},
    {"F4", 4, std::nullopt},
};

// PyTorch's names (str(dtype) without "torch.").
const std::pair<torch::Dtype, const char *> kTorchNames[] = {
    {torch::kFloat64, "float64"}, {torch::kFloat32, "float32"},
    {torch::kFloat16, "float16"}, {torch::kBFloat16, "bfloat16"},
    {torch::kInt64, "int64"},     {torch::kInt32, "int32"},
    {torch::kInt16, "int16"},     {torch::kInt8, "int8"},
    {torch::kUInt8, "uint8"},     {torch::kBool, "bool"},
    {torch::kComplexFloat, "complex64"}, {torch::kComplexDouble, "complex128"},
};

const DtypeRow *find_row(std::string_view name) {
  for (const auto &row : kDtypes)
    if (name == row.name)
      return &row;
  return nullptr;
}

} // namespace

std::optional<int> safetensors_dtype_bits(std::string_view name) {
  const DtypeRow *row = find_row(name);
  if (row == nullptr)
    return std::nullopt;
  return row->bits;
}

std::optional<torch::Dtype> torch_dtype_from_safetensors(std::string_view name) {
  const DtypeRow *row = find_row(name);
  if (row == nullptr)
    return std::nullopt;
  return row->torch_dtype;
}

std::string safetensors_dtype_name(torch::Dtype dtype) {
  for (const auto &row : kDtypes)
    if (row.torch_dtype == dtype)
      return row.name;
  throw Error(std::string("dtype ") + c10::toString(dtype) +
              " has no safetensors name; convert the tensor to one of F64, "
              "F32, F16, BF16, C64, I64, I32, I16, I8, U8, BOOL");
}

std::optional<std::string> torch_dtype_name(torch::Dtype dtype) {
  for (const auto &[d, name] : kTorchNames)
    if (d == dtype)
      return name;
  return std::nullopt;
}

std::optional<torch::Dtype> dtype_from_torch_name(std::string_view name) {
  for (const auto &[d, n] : kTorchNames)
    if (name == n)
      return d;
  return std::nullopt;
}

} // namespace metaguard
