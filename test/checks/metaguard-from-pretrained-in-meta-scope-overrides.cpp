// RUN: %check_clang_tidy -std=c++17 %s metaguard-from-pretrained-in-meta-scope

// A virtual call ends a meta default device when every override that can
// run resets it. A pure virtual declaration without a body never runs (the
// call dispatches to an override), so it keeps nothing meta.

#include <metaguard/metaguard.h>

namespace fs = std::filesystem;

struct EncoderImpl : torch::nn::Module {
  explicit EncoderImpl(const metaguard::Config &);
};
TORCH_MODULE(Encoder);

struct Device {
  virtual ~Device() = default;
  virtual void reset_device() = 0;
};
struct CpuDevice : Device {
  void reset_device() override { metaguard::set_default_device("cpu"); }
};
struct ResetDevice : Device {
  void reset_device() override { metaguard::reset_default_device(); }
};

void everyOverrideResets(Device *obj, const fs::path &p) {
  metaguard::set_default_device("meta");
  obj->reset_device();
  metaguard::from_pretrained<Encoder>(p); // Every override resets it.
}

void everyOverrideResetsThroughAReference(Device &obj, const fs::path &p) {
  metaguard::set_default_device("meta");
  obj.reset_device();
  metaguard::from_pretrained<Encoder>(p);
}

// A qualified call runs the method it names: here an override that resets.
void qualifiedCall(CpuDevice &obj, const fs::path &p) {
  metaguard::set_default_device("meta");
  obj.CpuDevice::reset_device();
  metaguard::from_pretrained<Encoder>(p);
}

// One override of another hierarchy leaves the default device as it is.
struct Stage {
  virtual ~Stage() = default;
  virtual void reset_device() = 0;
};
struct CpuStage : Stage {
  void reset_device() override { metaguard::set_default_device("cpu"); }
};
struct LoggingStage : Stage {
  void reset_device() override { log(); }
  static void log();
};

void oneOverrideKeepsMeta(Stage *obj, const fs::path &p) {
  metaguard::set_default_device("meta");
  obj->reset_device();
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-4]]:3: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'LoggingStage::reset_device' may run here and does not reset the default device
  // CHECK-NOTES: :[[@LINE-4]]:3: note: if an empty model is what you want here, build it from its config
}

// Called on the derived class that resets, the call is not of the override
// that keeps meta.
void derivedThatResets(CpuStage *obj, const fs::path &p) {
  metaguard::set_default_device("meta");
  obj->reset_device();
  metaguard::from_pretrained<Encoder>(p);
}

// A pure virtual method with no override visible: nothing is known about
// what the call does, so it changes nothing (the earlier meta setting
// stays).
struct Opaque {
  virtual ~Opaque() = default;
  virtual void reset_device() = 0;
};

void noOverrideVisible(Opaque *obj, const fs::path &p) {
  metaguard::set_default_device("meta");
  obj->reset_device();
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-4]]:3: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-3]]:3: note: if an empty model is what you want here, build it from its config
}
