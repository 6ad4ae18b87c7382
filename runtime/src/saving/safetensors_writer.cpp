#include <metaguard/dtype.h>
#include <metaguard/safetensors.h>

#include "saving/safetensors_writer.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

namespace metaguard {
namespace {

struct Prepared {
  std::string name;
  std::string dtype;
  std::size_t element_size;
  torch::Tensor data; // CPU, contiguous
};

[[noreturn]] void fail_tensor(const std::filesystem::path &file, const std::string &name,
                              const std::string &reason) {
  throw FormatError(FormatError::Kind::unsupported, "cannot save '" + file.string() + "': tensor '" + name + "': " + reason);
}

Prepared prepare(const std::filesystem::path &file, const std::string &name,
                 const torch::Tensor &tensor) {
  if (name == "__metadata__")
    fail_tensor(file, name, "the name is reserved for the header's metadata");
  if (!tensor.defined())
    fail_tensor(file, name, "the tensor is undefined");
  if (tensor.is_meta())
    fail_tensor(file, name,
                "the tensor is on the meta device and holds no data (was the model built "
                "under a meta scope and never loaded, or offloaded without its hook?)");
  if (tensor.layout() != torch::kStrided)
    fail_tensor(file, name, "only dense (strided) tensors can be saved");
  std::string dtype;
  try {
    dtype = safetensors_dtype_name(tensor.scalar_type());
  } catch (const Error &e) {
    fail_tensor(file, name, e.what());
  }
  torch::Tensor data = tensor.detach().to(torch::kCPU).contiguous();
  return {name, dtype, static_cast<std::size_t>(data.element_size()), data};
}

std::vector<Prepared> prepare_all(const std::filesystem::path &file, const NamedTensors &tensors) {
  std::vector<Prepared> prepared;
  std::set<std::string> seen;
  for (const auto &[name, tensor] : tensors) {
    if (!seen.insert(name).second)
      fail_tensor(file, name, "the name is given twice");
    prepared.push_back(prepare(file, name, tensor));
  }
  // The reference's order: larger elements first keeps every tensor aligned
  // to its element size (the data section starts at a multiple of 8), so
  // readers can use the bytes in place; then by name, for determinism.
  std::sort(prepared.begin(), prepared.end(), [](const Prepared &a, const Prepared &b) {
    if (a.element_size != b.element_size)
      return a.element_size > b.element_size;
    return a.name < b.name;
  });
  return prepared;
}

std::string json_string(const std::filesystem::path &file, const std::string &text,
                         const std::string &what) {
  try {
    return nlohmann::json(text).dump();
  } catch (const nlohmann::json::exception &) {
    throw FormatError(FormatError::Kind::malformed, "cannot save '" + file.string() + "': " + what + " is not valid UTF-8");
  }
}

std::string build_header(const std::filesystem::path &file, const std::vector<Prepared> &tensors,
                         const std::map<std::string, std::string> &metadata) {
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto &[key, value] : metadata) {
      header += (first ? "" : ",") + json_string(file, key, "metadata key '" + key + "'") + ":" +
                json_string(file, value, "metadata value of '" + key + "'");
      first = false;
    }
    header += "}";
  }
  std::int64_t offset = 0;
  for (const auto &t : tensors) {
    const std::int64_t end = offset + t.data.numel() * static_cast<std::int64_t>(t.element_size);
    std::string shape;
    for (const auto dim : t.data.sizes())
      shape += (shape.empty() ? "" : ",") + std::to_string(dim);
    header += (header.size() > 1 ? "," : "") + json_string(file, t.name, "tensor name '" + t.name + "'") +
              ":{\"dtype\":\"" + t.dtype + "\",\"shape\":[" + shape + "],\"data_offsets\":[" +
              std::to_string(offset) + "," + std::to_string(end) + "]}";
    offset = end;
  }
  header += "}";
  // Padding with spaces (valid JSON whitespace) makes the data section start
  // at a multiple of 8, as the reference does.
  header.append((8 - header.size() % 8) % 8, ' ');
  return header;
}

} // namespace

namespace detail {

void write_safetensors(AtomicFile &out, const NamedTensors &tensors,
                       const std::map<std::string, std::string> &metadata) {
  const auto prepared = prepare_all(out.target(), tensors);
  const std::string header = build_header(out.target(), prepared, metadata);
  unsigned char length[8];
  std::uint64_t n = header.size();
  for (auto &byte : length) {
    byte = static_cast<unsigned char>(n & 0xFF);
    n >>= 8;
  }
  out.write(length, sizeof length);
  out.write(header.data(), header.size());
  for (const auto &t : prepared)
    out.write(t.data.data_ptr(), t.data.numel() * t.element_size);
}

} // namespace detail

void save_safetensors(const std::filesystem::path &file, const NamedTensors &tensors,
                      const std::map<std::string, std::string> &metadata) {
  detail::AtomicFile out(file);
  detail::write_safetensors(out, tensors, metadata);
  out.finish();
  out.publish();
  detail::sync_directory(file.parent_path().empty() ? "." : file.parent_path());
}

} // namespace metaguard
