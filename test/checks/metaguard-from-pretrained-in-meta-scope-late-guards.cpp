// RUN: %check_clang_tidy -std=c++20 %s metaguard-from-pretrained-in-meta-scope

// Guards that start later than their holder: a DeviceScope emplaced into a
// std::optional, put into a std::unique_ptr by reset(new ...) or an
// assignment, or into a container. Such a scope has the device it is built
// with from there until the holder lets it go; a device that is not visible
// stays unknown (and hides the scopes outside it).

#include <metaguard/metaguard.h>

#include <deque>
#include <list>
#include <memory>
#include <optional>
#include <vector>

namespace fs = std::filesystem;
using metaguard::Config;
using metaguard::DeviceScope;

struct EncoderImpl : torch::nn::Module {
  explicit EncoderImpl(const Config &);
};
TORCH_MODULE(Encoder);

bool flag();
torch::Device pickDevice();

void optionalEmplacedOnAPath(const fs::path &p) {
  std::optional<DeviceScope> scope;
  metaguard::from_pretrained<Encoder>(p); // Not engaged yet.
  if (flag())
    scope.emplace(torch::kMeta);
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-6]]:30: note: meta-device scope 'scope'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: if an empty model is what you want here, build it from its config
  scope.reset();
  metaguard::from_pretrained<Encoder>(p);
}

void optionalInPlace(const fs::path &p) {
  std::optional<DeviceScope> scope(std::in_place, torch::Device("meta"));
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-3]]:30: note: meta-device scope 'scope'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: if an empty model is what you want here, build it from its config
  scope = std::nullopt;
  metaguard::from_pretrained<Encoder>(p);
}

void uniquePtrResetWithNew(const fs::path &p) {
  std::unique_ptr<DeviceScope> scope;
  scope.reset(new DeviceScope(torch::kMeta));
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-4]]:32: note: meta-device scope 'scope'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: if an empty model is what you want here, build it from its config
  scope.reset();
  metaguard::from_pretrained<Encoder>(p);
}

void uniquePtrAssigned(const fs::path &p) {
  std::unique_ptr<DeviceScope> scope;
  scope = std::make_unique<DeviceScope>(torch::kMeta);
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-4]]:32: note: meta-device scope 'scope'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: if an empty model is what you want here, build it from its config
  scope = nullptr;
  metaguard::from_pretrained<Encoder>(p);
}

void guardsInContainers(const fs::path &p) {
  std::deque<DeviceScope> scopes;
  scopes.emplace_back(torch::kMeta);
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-4]]:27: note: meta-device scope 'scopes'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: if an empty model is what you want here, build it from its config
  scopes.pop_back();
  metaguard::from_pretrained<Encoder>(p);
  std::vector<std::unique_ptr<DeviceScope>> owned;
  owned.push_back(std::make_unique<DeviceScope>(torch::Device("meta")));
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-4]]:45: note: meta-device scope 'owned'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: if an empty model is what you want here, build it from its config
  owned.clear();
  metaguard::from_pretrained<Encoder>(p);
}

// ---- Near misses ---------------------------------------------------------

void laterGuardsOnOtherDevices(const fs::path &p) {
  auto outer = metaguard::init_empty_weights();
  // The innermost scope wins: a CPU scope, or one whose device is not
  // known, hides the meta one outside it.
  std::optional<DeviceScope> cpu;
  cpu.emplace(torch::kCPU);
  metaguard::from_pretrained<Encoder>(p);
  std::unique_ptr<DeviceScope> unknown;
  unknown.reset(new DeviceScope(pickDevice()));
  metaguard::from_pretrained<Encoder>(p);
  std::list<DeviceScope> scopes;
  scopes.emplace_back(torch::kCUDA);
  metaguard::from_pretrained<Encoder>(p);
}

void metaGuardAlreadyLetGo(const fs::path &p) {
  std::optional<DeviceScope> scope;
  scope.emplace(torch::kMeta);
  scope.reset();
  metaguard::from_pretrained<Encoder>(p);
  std::deque<DeviceScope> scopes;
  scopes.emplace_back(torch::kMeta);
  scopes.clear();
  metaguard::from_pretrained<Encoder>(p);
}

// ---- Sessions of the user's in a std::optional -----------------------------

// A session whose object holds a meta scope (a guard member).
struct ScopeSession {
  ScopeSession() {}
  metaguard::MetaDeviceScope scope;
};
// A session whose constructor sets the default device and whose destructor
// resets it.
struct DefaultSession {
  DefaultSession() { metaguard::set_default_device("meta"); }
  ~DefaultSession() { metaguard::reset_default_device(); }
};
// One whose destructor leaves the default device as it is.
struct LeakySession {
  LeakySession() { metaguard::set_default_device("meta"); }
  ~LeakySession() {}
};

void optionalScopeSession(const fs::path &p) {
  std::optional<ScopeSession> session;
  metaguard::from_pretrained<Encoder>(p); // Not engaged yet.
  if (flag())
    session.emplace();
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-6]]:31: note: meta-device scope 'session'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: if an empty model is what you want here, build it from its config
  session.reset();
  metaguard::from_pretrained<Encoder>(p);
}

void optionalDefaultSession(const fs::path &p) {
  std::optional<DefaultSession> session;
  metaguard::from_pretrained<Encoder>(p); // Not engaged yet.
  if (flag())
    session.emplace();
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:5: note: 'DefaultSession::DefaultSession' returns with the default device set to meta, until the object it builds is destroyed
  // CHECK-NOTES: :[[@LINE-30]]:22: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-4]]:3: note: if an empty model is what you want here, build it from its config
  session.reset();
  metaguard::from_pretrained<Encoder>(p);
}

void optionalDefaultSessionSetToNullopt(const fs::path &p) {
  std::optional<DefaultSession> session;
  session.emplace();
  session = std::nullopt;
  metaguard::from_pretrained<Encoder>(p);
}

void optionalDefaultSessionEndsWithItsBlock(const fs::path &p) {
  {
    std::optional<DefaultSession> session;
    session.emplace();
  }
  metaguard::from_pretrained<Encoder>(p);
}

void optionalLeakySession(const fs::path &p) {
  std::optional<LeakySession> session;
  session.emplace();
  session.reset();
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'LeakySession::LeakySession' returns with the default device set to meta
  // CHECK-NOTES: :[[@LINE-53]]:20: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-4]]:3: note: if an empty model is what you want here, build it from its config
}
