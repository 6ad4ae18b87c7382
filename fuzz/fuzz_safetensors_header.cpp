// Fuzz target: the safetensors header parser over bytes alone (no file, no
// mapping, no tensor), so that it runs at memory speed: the header length,
// then the JSON header and its layout against the input's size.
#include "fuzz_util.h"

#include <metaguard/safetensors_header.h>

#include <algorithm>

using namespace metaguard_fuzz;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string_view file = as_text(data, size);
  const auto file_size = static_cast<std::int64_t>(size);
  expect_typed_errors([&] {
    const std::uint64_t length = metaguard::safetensors_header_length(
        file.substr(0, metaguard::kSafetensorsProbeBytes), file_size,
        /*max_header_size=*/file_size, "fuzz.safetensors");
    if (length > size - 8)
      violated("an accepted header length runs past the end of the input");
    const auto header = metaguard::parse_safetensors_header(file.substr(8, length), file_size,
                                                            "fuzz.safetensors");
    // What validation guarantees: the tensors tile the data section.
    std::int64_t expected = 0;
    for (const auto &info : header.tensors) {
      if (info.begin != expected || info.end < info.begin)
        violated("validated tensors do not tile the data section");
      expected = info.end;
    }
    if (header.data_offset + expected != file_size)
      violated("validated tensors do not end at the end of the input");
  });
  return 0;
}
