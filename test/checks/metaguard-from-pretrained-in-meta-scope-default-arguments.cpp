// RUN: %check_clang_tidy -std=c++17 %s metaguard-from-pretrained-in-meta-scope

// A helper that sets the default device its parameter gives sets meta where
// a call passes a meta device, or leaves out an argument whose default is
// meta; other arguments end the state as any other device does.

#include <metaguard/metaguard.h>

#include <string>

namespace fs = std::filesystem;

struct EncoderImpl : torch::nn::Module {
  explicit EncoderImpl(const metaguard::Config &);
};
TORCH_MODULE(Encoder);

void use_device(const std::string &d = "meta") {
  metaguard::set_default_device(d);
}

void defaultArgumentIsMeta(const fs::path &p) {
  use_device();
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'use_device' returns with the default device set to meta
  // CHECK-NOTES: :[[@LINE-4]]:3: note: default argument "meta" of parameter 'd' used here
  // CHECK-NOTES: :[[@LINE-9]]:3: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-5]]:3: note: if an empty model is what you want here, build it from its config
}

void argumentIsCpu(const fs::path &p) {
  use_device("cpu");
  metaguard::from_pretrained<Encoder>(p);
}

void cpuAfterTheDefault(const fs::path &p) {
  use_device();
  use_device("cpu");
  metaguard::from_pretrained<Encoder>(p);
}

void argumentIsMeta(const fs::path &p) {
  use_device(std::string("meta"));
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'use_device' returns with the default device set to meta
  // CHECK-NOTES: :[[@LINE-4]]:14: note: a meta device is passed to parameter 'd' here
  // CHECK-NOTES: :[[@LINE-30]]:3: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-5]]:3: note: if an empty model is what you want here, build it from its config
}

// An argument that is not known ends the state, as a setter given it does.
void argumentNotKnown(const fs::path &p, const std::string &dev) {
  metaguard::set_default_device("meta");
  use_device(dev);
  metaguard::from_pretrained<Encoder>(p);
}

// A device type as default argument.
void use_type(c10::DeviceType t = torch::kMeta) {
  metaguard::set_default_device(t);
}

void deviceTypeDefault(const fs::path &p) {
  use_type();
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'use_type' returns with the default device set to meta
  // CHECK-NOTES: :[[@LINE-4]]:3: note: default argument torch::kMeta of parameter 't' used here
  // CHECK-NOTES: :[[@LINE-9]]:3: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-5]]:3: note: if an empty model is what you want here, build it from its config
  use_type(torch::kCPU);
  metaguard::from_pretrained<Encoder>(p);
}

// Through a second helper that passes its own parameter on.
void enter(const std::string &name = "meta") { use_device(name); }

void throughTwoHelpers(const fs::path &p) {
  enter();
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'enter' returns with the default device set to meta
  // CHECK-NOTES: :[[@LINE-4]]:3: note: default argument "meta" of parameter 'name' used here
  // CHECK-NOTES: :[[@LINE-67]]:3: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-5]]:3: note: if an empty model is what you want here, build it from its config
  enter("cpu");
  metaguard::from_pretrained<Encoder>(p);
}

// A parameter the helper changes before it sets the device is not what the
// caller passed.
void changed(std::string d = "meta") {
  d = "cpu";
  metaguard::set_default_device(d);
}
// A setting after the parameter's decides.
void resetAfter(const std::string &d = "meta") {
  metaguard::set_default_device(d);
  metaguard::reset_default_device();
}

void notTheArgument(const fs::path &p) {
  changed();
  metaguard::from_pretrained<Encoder>(p);
  resetAfter();
  metaguard::from_pretrained<Encoder>(p);
}

// A constructor whose parameter's default argument is meta.
struct Session {
  explicit Session(const std::string &device = "meta") {
    metaguard::set_default_device(device);
  }
};

void constructorDefaultArgument(const fs::path &p) {
  Session s;
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:11: note: 'Session::Session' returns with the default device set to meta
  // CHECK-NOTES: :[[@LINE-4]]:11: note: default argument "meta" of parameter 'device' used here
  // CHECK-NOTES: :[[@LINE-10]]:5: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-5]]:3: note: if an empty model is what you want here, build it from its config
}

void constructorGivenCpu(const fs::path &p) {
  Session s("cpu");
  metaguard::from_pretrained<Encoder>(p);
}

// A copy of the parameter that nothing changes is what the caller passed: a
// local initialised from it, or a data member the constructor initialises
// from it (the usual RAII session).
void copied(const std::string &dev = "meta") {
  std::string d = dev;
  metaguard::set_default_device(d);
}

struct MemberSession {
  explicit MemberSession(std::string d = "meta") : dev_(std::move(d)) {
    metaguard::set_default_device(dev_);
  }
  std::string dev_;
};

void copiedIntoALocal(const fs::path &p) {
  copied();
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'copied' returns with the default device set to meta
  // CHECK-NOTES: :[[@LINE-4]]:3: note: default argument "meta" of parameter 'dev' used here
  // CHECK-NOTES: :[[@LINE-16]]:3: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-5]]:3: note: if an empty model is what you want here, build it from its config
  copied("cpu");
  metaguard::from_pretrained<Encoder>(p);
}

void copiedIntoAMember(const fs::path &p) {
  MemberSession s;
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:17: note: 'MemberSession::MemberSession' returns with the default device set to meta
  // CHECK-NOTES: :[[@LINE-4]]:17: note: default argument "meta" of parameter 'd' used here
  // CHECK-NOTES: :[[@LINE-23]]:5: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-5]]:3: note: if an empty model is what you want here, build it from its config
}

// The member passed on to another helper that sets it.
struct ForwardingSession {
  explicit ForwardingSession(std::string d = "meta") : dev_(std::move(d)) {
    use_device(dev_);
  }
  std::string dev_;
};

void memberPassedOn(const fs::path &p) {
  ForwardingSession s;
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:21: note: 'ForwardingSession::ForwardingSession' returns with the default device set to meta
  // CHECK-NOTES: :[[@LINE-4]]:21: note: default argument "meta" of parameter 'd' used here
  // CHECK-NOTES: :[[@LINE-165]]:3: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-5]]:3: note: if an empty model is what you want here, build it from its config
}

void memberSessionOnTheCpu(const fs::path &p) {
  MemberSession s("cpu");
  metaguard::from_pretrained<Encoder>(p);
}

// A value computed from the parameter is not the parameter: the helper sets
// a device that is not known, which ends the state (no guesses).
void prefixed(const std::string &dev = "meta") {
  metaguard::set_default_device(std::string() + dev);
}
// A member the constructor's body changes is not what the caller passed.
struct ChangedSession {
  explicit ChangedSession(std::string d = "meta") : dev_(std::move(d)) {
    dev_ = "cpu";
    metaguard::set_default_device(dev_);
  }
  std::string dev_;
};

void notTheParameter(const fs::path &p) {
  metaguard::set_default_device("meta");
  prefixed();
  metaguard::from_pretrained<Encoder>(p);
  ChangedSession s;
  metaguard::from_pretrained<Encoder>(p);
}
