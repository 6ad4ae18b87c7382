// RUN: %check_clang_tidy -std=c++17 %s metaguard-from-pretrained-in-meta-scope -- \
// RUN:   -config="{CheckOptions: [{key: metaguard-from-pretrained-in-meta-scope.DeviceScopeTypes, value: '::metaguard::DeviceScope;::MovableScope'}]}"

// RAII sessions that set the default device (the constructor sets it, the
// destructor resets it) held in a local std::optional, std::unique_ptr or
// raw pointer: the default device is meta from the statement that puts a
// meta session there until the holder lets it go (reset(), `=
// std::nullopt`, `= {}`, `= nullptr`, `delete`) or ends with its block.

#include <metaguard/metaguard.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace fs = std::filesystem;

struct EncoderImpl : torch::nn::Module {
  explicit EncoderImpl(const metaguard::Config &);
};
TORCH_MODULE(Encoder);

// A session that sets the device it is given (meta by default). Moving one
// hands the session over: the object moved from resets nothing.
struct Session {
  explicit Session(const std::string &device = "meta") {
    metaguard::set_default_device(device);
  }
  Session(Session &&other) noexcept
      : active_(std::exchange(other.active_, false)) {}
  Session &operator=(Session &&other) noexcept {
    active_ = std::exchange(other.active_, false);
    return *this;
  }
  ~Session() {
    if (active_)
      metaguard::reset_default_device();
  }
  bool active_ = true;
};

// One without a parameter.
struct MetaSession {
  MetaSession() { metaguard::set_default_device("meta"); }
  MetaSession(MetaSession &&other) noexcept
      : active_(std::exchange(other.active_, false)) {}
  MetaSession &operator=(MetaSession &&other) noexcept {
    active_ = std::exchange(other.active_, false);
    return *this;
  }
  ~MetaSession() {
    if (active_)
      metaguard::reset_default_device();
  }
  bool active_ = true;
};

// ---- std::optional, started by an assignment --------------------------------

void optionalAssigned(const fs::path &p) {
  std::optional<MetaSession> s;
  metaguard::from_pretrained<Encoder>(p); // Not engaged yet.
  s = MetaSession();
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:7: note: 'MetaSession::MetaSession' returns with the default device set to meta, until the object it builds is destroyed
  // CHECK-NOTES: :[[@LINE-23]]:19: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-4]]:3: note: if an empty model is what you want here, build it from its config
  s.reset();
  metaguard::from_pretrained<Encoder>(p);
}

void optionalAssignedWithMetaDefault(const fs::path &p) {
  std::optional<Session> s;
  s = Session{};
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:7: note: 'Session::Session' returns with the default device set to meta, until the object it builds is destroyed
  // CHECK-NOTES: :[[@LINE-4]]:7: note: default argument "meta" of parameter 'device' used here
  // CHECK-NOTES: :[[@LINE-53]]:5: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-5]]:3: note: if an empty model is what you want here, build it from its config
  s = {}; // Empties the optional, as s.reset() does.
  metaguard::from_pretrained<Encoder>(p);
}

void optionalAssignedMeta(const fs::path &p) {
  std::optional<Session> s;
  s = Session("meta");
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:7: note: 'Session::Session' returns with the default device set to meta, until the object it builds is destroyed
  // CHECK-NOTES: :[[@LINE-4]]:15: note: a meta device is passed to parameter 'device' here
  // CHECK-NOTES: :[[@LINE-66]]:5: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-5]]:3: note: if an empty model is what you want here, build it from its config
  s = std::nullopt;
  metaguard::from_pretrained<Encoder>(p);
}

// ---- std::optional, started by std::in_place --------------------------------

void optionalInPlace(const fs::path &p) {
  std::optional<Session> s{std::in_place, "meta"};
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:26: note: 'Session::Session' returns with the default device set to meta, until the object it builds is destroyed
  // CHECK-NOTES: :[[@LINE-4]]:43: note: a meta device is passed to parameter 'device' here
  // CHECK-NOTES: :[[@LINE-80]]:5: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-5]]:3: note: if an empty model is what you want here, build it from its config
  s.reset();
  metaguard::from_pretrained<Encoder>(p);
}

void optionalInPlaceParens(const fs::path &p) {
  std::optional<MetaSession> s(std::in_place);
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:30: note: 'MetaSession::MetaSession' returns with the default device set to meta, until the object it builds is destroyed
  // CHECK-NOTES: :[[@LINE-74]]:19: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-4]]:3: note: if an empty model is what you want here, build it from its config
  s = {};
  metaguard::from_pretrained<Encoder>(p);
}

// ---- std::unique_ptr and new ------------------------------------------------

void uniquePtrReset(const fs::path &p) {
  std::unique_ptr<MetaSession> s;
  s.reset(new MetaSession);
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:15: note: 'MetaSession::MetaSession' returns with the default device set to meta, until the object it builds is destroyed
  // CHECK-NOTES: :[[@LINE-88]]:19: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-4]]:3: note: if an empty model is what you want here, build it from its config
  s.reset();
  metaguard::from_pretrained<Encoder>(p);
}

void uniquePtrAssigned(const fs::path &p) {
  std::unique_ptr<Session> s;
  s = std::make_unique<Session>("meta");
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:7: note: 'Session::Session' returns with the default device set to meta, until the object it builds is destroyed
  // CHECK-NOTES: :[[@LINE-4]]:33: note: a meta device is passed to parameter 'device' here
  // CHECK-NOTES: :[[@LINE-118]]:5: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-5]]:3: note: if an empty model is what you want here, build it from its config
  s = nullptr;
  metaguard::from_pretrained<Encoder>(p);
}

void initialisedThenEmptied(const fs::path &p) {
  auto s = std::make_unique<MetaSession>();
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:12: note: 'MetaSession::MetaSession' returns with the default device set to meta, until the object it builds is destroyed
  // CHECK-NOTES: :[[@LINE-112]]:19: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-4]]:3: note: if an empty model is what you want here, build it from its config
  s.reset();
  metaguard::from_pretrained<Encoder>(p);
  s = std::make_unique<MetaSession>();
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:7: note: 'MetaSession::MetaSession' returns with the default device set to meta, until the object it builds is destroyed
  // CHECK-NOTES: :[[@LINE-120]]:19: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-4]]:3: note: if an empty model is what you want here, build it from its config
  s = {};
  metaguard::from_pretrained<Encoder>(p);
}

void rawPointer(const fs::path &p) {
  MetaSession *s = new MetaSession;
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:24: note: 'MetaSession::MetaSession' returns with the default device set to meta, until the object it builds is destroyed
  // CHECK-NOTES: :[[@LINE-131]]:19: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-4]]:3: note: if an empty model is what you want here, build it from its config
  delete s;
  metaguard::from_pretrained<Encoder>(p);
}

// ---- Near misses ------------------------------------------------------------

void endsWithItsBlock(const fs::path &p) {
  {
    std::optional<Session> a{std::in_place, "meta"};
    std::optional<MetaSession> b;
    b = MetaSession();
    std::unique_ptr<Session> c;
    c = std::make_unique<Session>("meta");
    std::unique_ptr<MetaSession> d;
    d.reset(new MetaSession);
  }
  metaguard::from_pretrained<Encoder>(p);
}

void sessionsOnTheCpu(const fs::path &p) {
  std::optional<Session> a{std::in_place, "cpu"};
  metaguard::from_pretrained<Encoder>(p);
  std::optional<Session> b;
  b = Session("cpu");
  metaguard::from_pretrained<Encoder>(p);
  std::unique_ptr<Session> c;
  c.reset(new Session("cpu"));
  metaguard::from_pretrained<Encoder>(p);
  c = std::make_unique<Session>("cpu");
  metaguard::from_pretrained<Encoder>(p);
}

void resetBeforeTheLoad(const fs::path &p) {
  std::optional<Session> a;
  a = Session("meta");
  a = {};
  std::unique_ptr<Session> b = std::make_unique<Session>("meta");
  b = nullptr;
  metaguard::from_pretrained<Encoder>(p);
}

// Putting a session into a holder that may hold one already destroys the
// old one after the new one is built: its destructor resets the device.
void replacedWhileHeld(const fs::path &p) {
  auto s = std::make_unique<MetaSession>();
  s = std::make_unique<MetaSession>();
  metaguard::from_pretrained<Encoder>(p);
}

// ---- Guards of a class that can be moved: `= {}` empties the holder too -----
// (metaguard::DeviceScope cannot be moved, so an optional of it is neither
// assigned a guard nor `{}`; MovableScope is listed in DeviceScopeTypes.)

struct MovableScope {
  explicit MovableScope(torch::Device device);
  MovableScope(MovableScope &&) noexcept;
  MovableScope &operator=(MovableScope &&) noexcept;
  ~MovableScope();
};

void movableGuardAssigned(const fs::path &p) {
  std::optional<MovableScope> scope;
  scope = MovableScope(torch::kMeta);
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-4]]:31: note: meta-device scope 'scope'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: if an empty model is what you want here, build it from its config
  scope = {};
  metaguard::from_pretrained<Encoder>(p);
}

// The innermost scope wins: a CPU guard hides the meta scope around it.
void movableGuardOnTheCpu(const fs::path &p) {
  auto outer = metaguard::init_empty_weights();
  std::optional<MovableScope> scope;
  scope = MovableScope(torch::kCPU);
  metaguard::from_pretrained<Encoder>(p);
}
