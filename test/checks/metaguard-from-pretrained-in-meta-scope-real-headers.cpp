// The check on the real runtime header and the real LibTorch headers, so the
// matchers are proven on the real types (torch::Device, c10::DeviceType,
// metaguard::DeviceScope, ...), not only on the mocks.
// REQUIRES: real-headers
// RUN: %check_clang_tidy -no-mocks %torch_std %s metaguard-from-pretrained-in-meta-scope -- -- -I %runtime_include %torch_includes

#include <metaguard/metaguard.h>
#include <torch/torch.h>

#include <filesystem>
#include <memory>

namespace fs = std::filesystem;

struct EncoderImpl : torch::nn::Module {
  EncoderImpl() { proj = register_module("proj", torch::nn::Linear(8, 8)); }
  explicit EncoderImpl(const metaguard::Config &) : EncoderImpl() {}
  torch::nn::Linear proj{nullptr};
};
TORCH_MODULE(Encoder);

// A user's own loader, marked with the runtime's macro.
METAGUARD_LOADS_WEIGHTS Encoder loadEncoder(const fs::path &dir);

namespace hub {
// A loader found by name (LoaderFunctions defaults to from_pretrained).
template <class Model> Model from_pretrained(const fs::path &dir);
} // namespace hub

void underInitEmptyWeights(const fs::path &dir) {
  auto guard = metaguard::init_empty_weights();
  Encoder skeleton; // Building under meta is the point of the scope.
  auto encoder = hub::from_pretrained<Encoder>(dir);
  // CHECK-NOTES: :[[@LINE-1]]:18: warning: 'hub::from_pretrained' loads pretrained weights while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-4]]:8: note: meta-device scope 'guard' is active from here to the end of its block
}

void underDeviceScopes(const fs::path &dir) {
  {
    metaguard::DeviceScope scope(torch::kMeta);
    loadEncoder(dir);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'loadEncoder' loads pretrained weights while a meta-device scope is active
    // CHECK-NOTES: :[[@LINE-3]]:28: note: meta-device scope 'scope'
  }
  {
    metaguard::DeviceScope scope(torch::Device("meta"));
    loadEncoder(dir);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'loadEncoder' loads pretrained weights while a meta-device scope is active
    // CHECK-NOTES: :[[@LINE-3]]:28: note: meta-device scope 'scope'
  }
  {
    metaguard::DeviceScope scope{c10::Device(c10::DeviceType::Meta)};
    loadEncoder(dir);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'loadEncoder' loads pretrained weights while a meta-device scope is active
    // CHECK-NOTES: :[[@LINE-3]]:28: note: meta-device scope 'scope'
  }
  {
    metaguard::MetaDeviceScope meta;
    metaguard::DeviceScope cpu(torch::kCPU);
    loadEncoder(dir); // The innermost scope is the CPU.
  }
}

void defaultDevice(const fs::path &dir) {
  metaguard::set_default_device("meta");
  loadEncoder(dir);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'loadEncoder' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:3: note: the default device is set to meta here
  metaguard::set_default_device(torch::kCPU);
  loadEncoder(dir);
  metaguard::set_default_device(std::string("meta"));
  loadEncoder(dir);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'loadEncoder' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:3: note: the default device is set to meta here
}

struct CompositeImpl : torch::nn::Module {
  explicit CompositeImpl(const fs::path &dir) {
    encoder = register_module("encoder", loadEncoder(dir));
    head = register_module("head", torch::nn::Linear(8, 2));
  }
  Encoder encoder{nullptr};
  torch::nn::Linear head{nullptr};
};
TORCH_MODULE(Composite);

void compositeUnderMeta(const fs::path &dir) {
  auto guard = metaguard::init_empty_weights();
  Composite model(dir);
  // CHECK-NOTES: :[[@LINE-1]]:13: warning: 'Composite::Composite' loads pretrained weights (through 'loadEncoder') while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-3]]:8: note: meta-device scope 'guard'
  // CHECK-NOTES: :[[@LINE-13]]:42: note: 'loadEncoder' loads the weights here, in 'CompositeImpl::CompositeImpl'
  auto head = torch::nn::Linear(4, 4); // Plain construction: fine.
}

void withMetaDevice(const fs::path &dir) {
  auto skeleton = metaguard::with_meta_device([] { return Encoder(); });
  auto loaded = metaguard::with_meta_device([&] { return loadEncoder(dir); });
  // CHECK-NOTES: :[[@LINE-1]]:58: warning: 'loadEncoder' loads pretrained weights while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-2]]:17: note: 'metaguard::with_meta_device' runs this lambda on the meta device
}

void runtimeLoader(const fs::path &dir, const metaguard::Config &config) {
  auto guard = metaguard::init_empty_weights();
  auto skeleton = metaguard::from_config<Encoder>(config);
  auto loaded = metaguard::from_pretrained<Encoder>(dir);
  // CHECK-NOTES: :[[@LINE-1]]:17: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-4]]:8: note: meta-device scope 'guard'
  // CHECK-NOTES: :[[@LINE-3]]:17: note: if an empty model is what you want here, build it from its config
  metaguard::LoadOptions options;
  options.device_map = metaguard::DeviceMap::on(torch::kCPU);
  auto placed = metaguard::from_pretrained<Encoder>(dir, options);
}
