// The C++ side of test_accelerate_offload.py: accelerate's offload folders
// read by metaguard, and metaguard's read by accelerate.
//
//   interop_accelerate_offload read FOLDER OUT
//       opens FOLDER with OffloadFolder and writes each tensor's raw bytes as
//       OUT/<name>.bin; prints {name: {"dtype", "shape"}} as JSON. A tensor
//       metaguard refuses is listed as {"error": message}.
//   interop_accelerate_offload write FILE.safetensors FOLDER
//       writes every tensor of FILE into FOLDER with offload_tensors.
//   interop_accelerate_offload forward FOLDER
//       builds Net (below) under init_empty_weights, puts all of it on "disk"
//       backed by FOLDER through a device map, runs it on a fixed input and
//       prints the output as a JSON list.
#include <metaguard/metaguard.h>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <fstream>
#include <iostream>
#include <map>

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The same layers as Net in test_accelerate_offload.py.
struct NetImpl : torch::nn::Module {
  NetImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(4, 8));
    norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({8})));
    fc2 = register_module("fc2", torch::nn::Linear(8, 3));
  }
  torch::Tensor forward(torch::Tensor x) {
    metaguard::OnloadGuard onload(*this);
    return fc2(norm(torch::relu(fc1(x.to(onload.device())))));
  }
  torch::nn::Linear fc1{nullptr};
  torch::nn::LayerNorm norm{nullptr};
  torch::nn::Linear fc2{nullptr};
};
TORCH_MODULE(Net);

int read(const fs::path &folder, const fs::path &out) {
  fs::create_directories(out);
  const metaguard::OffloadFolder offload(folder);
  json listing = json::object();
  for (const auto &name : offload.names()) {
    try {
      const torch::Tensor t = offload.load(name).contiguous();
      std::ofstream bytes(out / (name + ".bin"), std::ios::binary);
      bytes.write(static_cast<const char *>(t.data_ptr()), static_cast<std::streamsize>(t.nbytes()));
      listing[name] = {{"dtype", metaguard::numpy_dtype_name(t.scalar_type())}, {"shape", t.sizes().vec()}};
    } catch (const metaguard::OffloadError &e) {
      listing[name] = {{"error", e.what()}};
    }
  }
  std::cout << listing.dump() << "\n";
  return 0;
}

int write(const fs::path &file, const fs::path &folder) {
  const metaguard::SafetensorsFile source(file);
  std::map<std::string, torch::Tensor> tensors;
  for (const auto &name : source.names())
    tensors[name] = source.tensor(name);
  metaguard::offload_tensors(folder, tensors);
  return 0;
}

int forward(const fs::path &folder) {
  Net net{nullptr};
  {
    auto empty = metaguard::init_empty_weights();
    net = Net();
  }
  const auto map = metaguard::resolve_device_map(*net, metaguard::DeviceMap::on(metaguard::Placement::disk()));
  metaguard::attach_offload_hooks(*net, map, std::make_shared<metaguard::OffloadFolder>(folder));
  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::arange(8, torch::kFloat32).reshape({2, 4}) / 8.0 - 0.5;
  const torch::Tensor y = net->forward(x).contiguous();
  std::vector<float> values(y.data_ptr<float>(), y.data_ptr<float>() + y.numel());
  std::cout << json(values).dump() << "\n";
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  const std::string command = argc > 1 ? argv[1] : "";
  if (command == "read" && argc == 4)
    return read(argv[2], argv[3]);
  if (command == "write" && argc == 4)
    return write(argv[2], argv[3]);
  if (command == "forward" && argc == 3)
    return forward(argv[2]);
  std::cerr << "usage: interop_accelerate_offload read FOLDER OUT | write FILE.safetensors FOLDER | forward FOLDER\n";
  return 2;
}
