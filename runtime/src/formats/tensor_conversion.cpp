#include "formats/tensor_conversion.h"

#include "core/file_errors.h"
#include "io/mapped_read.h"
#include "io/mappings.h"
#include "io/posix_file.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstring>
#include <sys/mman.h>

namespace metaguard::detail {
namespace {

// Below this, LibTorch's allocator is as fast as a mapping of its own.
constexpr std::size_t kOwnMappingFrom = std::size_t{1} << 20;
// The buffer of a chunked (misaligned) conversion.
constexpr std::int64_t kChunkBytes = std::int64_t{8} << 20;

// float32 -> bfloat16 with c10::BFloat16's rounding (nearest, ties to even;
// NaN -> 0x7FC0, as its scalar conversion does). Written so that it
// vectorises: converting loads are meant to cost little more than faulting in
// their output, and LibTorch's copy_ was twice as slow here.
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("O3")))
#endif
void float_to_bfloat16(const float *__restrict in, std::uint16_t *__restrict out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &in[i], sizeof bits);
    const std::uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
    out[i] = (bits & 0x7FFFFFFFu) > 0x7F800000u ? std::uint16_t{0x7FC0}
                                                : static_cast<std::uint16_t>(rounded);
  }
}

void convert(const char *bytes, const TensorInfo &info, torch::Dtype dtype, torch::Tensor &out) {
  if (dtype == torch::kFloat32 && out.scalar_type() == torch::kBFloat16 && out.device().is_cpu() &&
      out.is_contiguous())
    float_to_bfloat16(reinterpret_cast<const float *>(bytes),
                      static_cast<std::uint16_t *>(out.data_ptr()), out.numel());
  else
    out.copy_(torch::from_blob(const_cast<char *>(bytes), info.shape,
                               torch::TensorOptions().dtype(dtype)));
}

void read_converted_in_chunks(const TensorBytes &source, torch::Dtype dtype, torch::Tensor &out) {
  const std::int64_t element = static_cast<std::int64_t>(c10::elementSize(dtype));
  const std::int64_t total = source.info.nbytes() / element;
  const std::int64_t chunk = std::max<std::int64_t>(1, std::min(total, kChunkBytes / element));
  auto buffer = torch::empty({chunk}, torch::TensorOptions().dtype(dtype));
  auto flat = out.view({-1});
  for (std::int64_t first = 0; first < total; first += chunk) {
    const std::int64_t count = std::min(chunk, total - first);
    read_exact(source.fd, source.file, buffer.data_ptr(), static_cast<std::size_t>(count * element),
               source.offset() + first * element);
    if (dtype == torch::kBool)
      check_bool_bytes(source, static_cast<const char *>(buffer.data_ptr()), count, first);
    flat.narrow(0, first, count).copy_(buffer.narrow(0, 0, count));
  }
}

} // namespace

torch::Tensor empty_cpu(const std::vector<std::int64_t> &shape, torch::Dtype dtype) {
  const auto options = torch::TensorOptions().dtype(dtype);
  const std::size_t bytes =
      static_cast<std::size_t>(c10::multiply_integers(shape)) * c10::elementSize(dtype);
  if (bytes < kOwnMappingFrom)
    return torch::empty(shape, options);
  void *memory = map_anonymous(bytes, /*prefault=*/true);
  if (memory == nullptr)
    return torch::empty(shape, options);
  return torch::from_blob(
      memory, shape, [bytes](void *p) { ::munmap(p, bytes); }, options);
}

void check_bool_bytes(const TensorBytes &source, const char *bytes, std::int64_t count,
                      std::int64_t first) {
  std::int64_t bad = -1;
  guard_mapped_read(source.file, "tensor '" + source.info.name + "'", [&] {
    for (std::int64_t i = 0; i < count && bad < 0; ++i)
      if (static_cast<unsigned char>(bytes[i]) > 1)
        bad = i;
  });
  if (bad >= 0)
    fail_tensor(FormatKind::malformed, source.what, source.file, source.info.name,
                "BOOL element " + std::to_string(first + bad) + " is byte " +
                    std::to_string(static_cast<unsigned char>(bytes[bad])) +
                    "; only 0 and 1 are booleans");
}

void read_converted(const TensorBytes &source, torch::Dtype dtype, torch::Tensor &out) {
  const std::int64_t element = static_cast<std::int64_t>(c10::elementSize(dtype));
  const auto mapping = source.offset() % element == 0
                           ? map_read_only_range(source.fd, source.offset(), source.info.nbytes())
                           : nullptr;
  if (!mapping) {
    read_converted_in_chunks(source, dtype, out);
    return;
  }
  const char *bytes = mapping->at(source.offset());
  // MAP_POPULATE stops silently at the end of a truncated file.
  probe_mapped(source.file, "tensor '" + source.info.name + "'", bytes,
               static_cast<std::size_t>(source.info.nbytes()));
  if (dtype == torch::kBool)
    check_bool_bytes(source, bytes, source.info.nbytes());
  convert(bytes, source.info, dtype, out);
}

} // namespace metaguard::detail
