// Private to the library: the safetensors writer, shared by save_safetensors
// and save_pretrained (which writes several files before publishing any).
#pragma once

#include <metaguard/safetensors.h>

#include "io/posix_file.h"

#include <map>
#include <string>

namespace metaguard::detail {

// Writes `tensors` as a safetensors file into `out` (not finished or
// published). Throws FormatError naming out.target() and the tensor.
void write_safetensors(AtomicFile &out, const NamedTensors &tensors,
                       const std::map<std::string, std::string> &metadata);

} // namespace metaguard::detail
