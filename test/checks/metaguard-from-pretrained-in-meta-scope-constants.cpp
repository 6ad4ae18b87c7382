// RUN: %check_clang_tidy -std=c++20 %s metaguard-from-pretrained-in-meta-scope

// Device values that are constant without being literals: locals that only
// ever hold one kind of device, helpers that return a constant device,
// conditionals whose every branch is meta. Anything else stays unknown.

#include <metaguard/metaguard.h>

#include <string>

namespace fs = std::filesystem;

struct EncoderImpl : torch::nn::Module {
  explicit EncoderImpl(const metaguard::Config &);
};
TORCH_MODULE(Encoder);

bool flag();
void readName(const std::string &name);
void changeName(std::string &name);

void stringInitialisedWithALiteral(const fs::path &p) {
  std::string device = "meta";
  readName(device); // Only reads it.
  metaguard::set_default_device(device);
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
}

void stringAssignedALiteral(const fs::path &p) {
  std::string device;
  device = "meta";
  metaguard::set_default_device(device);
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
}

void stringAssignedMetaOnEveryBranch(const fs::path &p) {
  std::string device = "meta:0";
  if (flag())
    device = "meta";
  metaguard::DeviceScope scope(device);
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
}

void stringThatMayChange(const fs::path &p, const std::string &other) {
  {
    std::string device = "meta";
    if (flag())
      device = "cpu";
    metaguard::set_default_device(device);
    metaguard::from_pretrained<Encoder>(p);
  }
  {
    std::string device = "meta";
    device += ":1";
    metaguard::set_default_device(device);
    metaguard::from_pretrained<Encoder>(p);
  }
  {
    std::string device = "meta";
    changeName(device);
    metaguard::set_default_device(device);
    metaguard::from_pretrained<Encoder>(p);
  }
  {
    std::string device = "meta";
    device = other;
    metaguard::DeviceScope scope(device);
    metaguard::from_pretrained<Encoder>(p);
  }
  {
    std::string device = "meta";
    auto change = [&] { device = "cpu"; };
    change();
    metaguard::DeviceScope scope(device);
    metaguard::from_pretrained<Encoder>(p);
  }
  {
    std::string device = "meta";
    std::string &alias = device;
    alias = "cpu";
    metaguard::DeviceScope scope(device);
    metaguard::from_pretrained<Encoder>(p);
  }
}

torch::Device emptyDevice() { return torch::kMeta; }
const char *emptyDeviceName() { return flag() ? "meta" : "meta:0"; }
torch::Device pick(bool empty) {
  if (empty)
    return torch::kMeta;
  return torch::kCPU;
}
torch::Device fromParameter(torch::Device d) { return d; }

void helpersReturningADevice(const fs::path &p) {
  {
    metaguard::DeviceScope scope(emptyDevice());
    metaguard::from_pretrained<Encoder>(p);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
  }
  {
    metaguard::set_default_device(emptyDeviceName());
    metaguard::from_pretrained<Encoder>(p);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
    metaguard::reset_default_device();
  }
  {
    metaguard::DeviceScope scope(pick(true)); // Depends on the argument.
    metaguard::from_pretrained<Encoder>(p);
  }
  {
    metaguard::DeviceScope scope(fromParameter(torch::kMeta));
    metaguard::from_pretrained<Encoder>(p);
  }
}

void conditionals(const fs::path &p) {
  {
    metaguard::DeviceScope scope(flag() ? torch::kMeta : c10::DeviceType::Meta);
    metaguard::from_pretrained<Encoder>(p);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
  }
  {
    metaguard::DeviceScope scope(flag() ? torch::kMeta : torch::kCPU);
    metaguard::from_pretrained<Encoder>(p);
  }
}
