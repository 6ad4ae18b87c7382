// RUN: %check_clang_tidy -std=c++17 %s metaguard-from-pretrained-in-meta-scope

// Device values the compiler computes: constexpr and const variables,
// constexpr functions, and conditionals whose condition is a constant are
// evaluated as Clang evaluates a constant expression. A value that is not
// constant stays unknown.

#include <metaguard/metaguard.h>

#include <cstdlib>
#include <string>

namespace fs = std::filesystem;

struct EncoderImpl : torch::nn::Module {
  explicit EncoderImpl(const metaguard::Config &);
};
TORCH_MODULE(Encoder);

constexpr bool kLowMem = true;
const bool kLowMemConst = true;
constexpr bool kHighMem = false;
const bool kFromEnvironment = std::getenv("LOW_MEM") != nullptr;
bool gLowMem = true; // May change: not a constant.

constexpr c10::DeviceType deviceFor(bool lowMem) {
  return lowMem ? c10::kMeta : c10::kCPU;
}
constexpr const char *deviceName(int gigabytes) {
  if (gigabytes < 8)
    return "meta";
  return "cpu";
}
constexpr c10::DeviceType kPicked = deviceFor(kLowMem);
int gigabytesFree();

void constantConditions(const fs::path &p) {
  {
    metaguard::set_default_device(kLowMem ? "meta" : "cpu");
    metaguard::from_pretrained<Encoder>(p);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
    metaguard::reset_default_device();
  }
  {
    metaguard::DeviceScope scope(kLowMemConst ? torch::Device(torch::kMeta)
                                              : torch::Device(torch::kCPU));
    metaguard::from_pretrained<Encoder>(p);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
  }
  {
    metaguard::DeviceScope scope(
        torch::Device(!kHighMem ? torch::kMeta : torch::kCPU));
    metaguard::from_pretrained<Encoder>(p);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
  }
  {
    std::string device = kLowMem ? "meta" : "cpu";
    metaguard::set_default_device(device);
    metaguard::from_pretrained<Encoder>(p);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
    metaguard::reset_default_device();
  }
}

void constexprFunctions(const fs::path &p) {
  {
    metaguard::DeviceScope scope(deviceFor(true));
    metaguard::from_pretrained<Encoder>(p);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
  }
  {
    metaguard::set_default_device(deviceName(4));
    metaguard::from_pretrained<Encoder>(p);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
    metaguard::reset_default_device();
  }
  {
    metaguard::DeviceScope scope(kPicked);
    metaguard::from_pretrained<Encoder>(p);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
  }
  {
    metaguard::set_default_device("xmeta" + 1); // Points at "meta".
    metaguard::from_pretrained<Encoder>(p);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
    metaguard::reset_default_device();
  }
}

// Near misses: the constant picks another device, or the value is not a
// constant (the check does not guess).
void notMeta(const fs::path &p) {
  {
    metaguard::set_default_device(kHighMem ? "meta" : "cpu");
    metaguard::from_pretrained<Encoder>(p);
  }
  {
    metaguard::DeviceScope scope(deviceFor(false));
    metaguard::from_pretrained<Encoder>(p);
  }
  {
    metaguard::set_default_device(deviceName(16));
    metaguard::from_pretrained<Encoder>(p);
  }
  {
    metaguard::set_default_device(kFromEnvironment ? "meta" : "cpu");
    metaguard::from_pretrained<Encoder>(p);
  }
  {
    metaguard::set_default_device(gLowMem ? "meta" : "cpu");
    metaguard::from_pretrained<Encoder>(p);
  }
  {
    metaguard::DeviceScope scope(deviceFor(gigabytesFree() < 8));
    metaguard::from_pretrained<Encoder>(p);
  }
  {
    metaguard::set_default_device(deviceName(gigabytesFree()));
    metaguard::from_pretrained<Encoder>(p);
  }
}

// A constant device that is not meta ends the meta state, inside a meta
// scope as after a meta setter.
void constantEndsTheState(const fs::path &p) {
  metaguard::set_default_device("meta");
  metaguard::set_default_device(kHighMem ? "meta" : "cpu");
  metaguard::from_pretrained<Encoder>(p);
  metaguard::MetaDeviceScope outer;
  {
    metaguard::DeviceScope inner(deviceFor(kHighMem));
    metaguard::from_pretrained<Encoder>(p);
  }
}
