// RUN: %check_clang_tidy -std=c++17 %s metaguard-from-pretrained-in-meta-scope

#include <metaguard/metaguard.h>

#include <string>

namespace fs = std::filesystem;

struct EncoderImpl : torch::nn::Module {
  explicit EncoderImpl(const metaguard::Config &);
};
TORCH_MODULE(Encoder);

// A class whose guard member opens a meta scope by its default member
// initialiser holds that scope for its objects' life, unless a constructor
// initialises the member itself.
struct EmptySession {
  metaguard::DeviceScope scope{torch::Device("meta")};
};
struct EmptySessionAssigned {
  metaguard::DeviceScope scope = metaguard::DeviceScope(torch::kMeta);
};
struct CpuSession {
  metaguard::DeviceScope scope{torch::kCPU};
};
struct OverriddenSession {
  OverriddenSession() : scope(torch::kCPU) {}
  metaguard::DeviceScope scope{torch::kMeta};
};
struct UnseenConstructorSession {
  UnseenConstructorSession(); // May initialise scope itself.
  metaguard::DeviceScope scope{torch::kMeta};
};

void memberInitialiserOpensAScope(const fs::path &p) {
  {
    EmptySession session;
    metaguard::from_pretrained<Encoder>(p);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
  }
  {
    EmptySessionAssigned session;
    metaguard::from_pretrained<Encoder>(p);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
  }
  metaguard::from_pretrained<Encoder>(p);
  {
    CpuSession session;
    metaguard::from_pretrained<Encoder>(p);
  }
  {
    OverriddenSession session;
    metaguard::from_pretrained<Encoder>(p);
  }
  {
    UnseenConstructorSession session;
    metaguard::from_pretrained<Encoder>(p);
  }
}
