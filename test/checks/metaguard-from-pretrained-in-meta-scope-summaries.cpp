// RUN: %check_clang_tidy -std=c++20 %s metaguard-from-pretrained-in-meta-scope

// Function summaries: what a helper leaves the default device as, and loads
// followed through calls at any depth and through recursion.

#include <metaguard/metaguard.h>

#include <memory>
#include <optional>

namespace fs = std::filesystem;

struct EncoderImpl : torch::nn::Module {
  explicit EncoderImpl(const metaguard::Config &);
};
TORCH_MODULE(Encoder);

bool flag();

// ---- Default device at return ------------------------------------------------

void enterMeta() { metaguard::set_default_device("meta"); }
void enterMetaThroughAnother() { enterMeta(); }
void leaveMeta() { metaguard::reset_default_device(); }
void enterAndLeave() {
  metaguard::set_default_device("meta");
  metaguard::reset_default_device();
}
void enterMetaSometimes() {
  if (flag())
    metaguard::set_default_device(torch::kMeta);
}
void setUnknown(const std::string &name) {
  metaguard::set_default_device(name);
}
void leaveMetaSometimes() {
  if (flag())
    metaguard::set_default_device("cpu");
}

void helperSetsMeta(const fs::path &p) {
  enterMeta();
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'enterMeta' returns with the default device set to meta
  // CHECK-NOTES: :[[@LINE-24]]:20: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-4]]:3: note: if an empty model is what you want here, build it from its config
}

void helperOfHelperSetsMeta(const fs::path &p) {
  enterMetaThroughAnother();
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'enterMetaThroughAnother' returns with the default device set to meta
  // CHECK-NOTES: :[[@LINE-33]]:20: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-4]]:3: note: if an empty model is what you want here, build it from its config
}

void helperSetsMetaOnOnePath(const fs::path &p) {
  enterMetaSometimes();
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'enterMetaSometimes' returns with the default device set to meta
  // CHECK-NOTES: :[[@LINE-33]]:5: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-4]]:3: note: if an empty model is what you want here, build it from its config
}

void helperRestores(const fs::path &p) {
  metaguard::set_default_device("meta");
  leaveMeta();
  metaguard::from_pretrained<Encoder>(p);
  enterMeta();
  enterAndLeave(); // Ends with a reset.
  metaguard::from_pretrained<Encoder>(p);
}

void helperSetsUnknownDevice(const fs::path &p, const std::string &name) {
  enterMeta();
  setUnknown(name); // Unknown: the state ends (no guesses).
  metaguard::from_pretrained<Encoder>(p);
}

void helperResetsOnOnePath(const fs::path &p) {
  enterMeta();
  leaveMetaSometimes(); // Unknown afterwards: no finding.
  metaguard::from_pretrained<Encoder>(p);
}

void helperCalledAfterTheLoad(const fs::path &p) {
  metaguard::from_pretrained<Encoder>(p);
  enterMeta();
}

// ---- Loads at any depth, through recursion -----------------------------------

Encoder d5(const fs::path &p) { return metaguard::from_pretrained<Encoder>(p); }
Encoder d4(const fs::path &p) { return d5(p); }
Encoder d3(const fs::path &p) { return d4(p); }
Encoder d2(const fs::path &p) { return d3(p); }
Encoder d1(const fs::path &p) { return d2(p); }

void deepChain(const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  d1(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'd1' loads pretrained weights (through 'metaguard::from_pretrained') while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-3]]:8: note: meta-device scope 'guard'
  // CHECK-NOTES: :[[@LINE-11]]:40: note: 'metaguard::from_pretrained' loads the weights here, in 'd5'
}

Encoder evenLoad(const fs::path &p, int n);
Encoder oddLoad(const fs::path &p, int n) {
  return n == 0 ? metaguard::from_pretrained<Encoder>(p) : evenLoad(p, n - 1);
}
Encoder evenLoad(const fs::path &p, int n) { return oddLoad(p, n - 1); }

int evenCount(int n);
int oddCount(int n) { return n == 0 ? 0 : evenCount(n - 1); }
int evenCount(int n) { return n == 0 ? 1 : oddCount(n - 1); }

void recursion(const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  evenLoad(p, 4);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'evenLoad' loads pretrained weights (through 'metaguard::from_pretrained') while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-3]]:8: note: meta-device scope 'guard'
  // CHECK-NOTES: :[[@LINE-13]]:19: note: 'metaguard::from_pretrained' loads the weights here, in 'oddLoad'
  evenCount(4); // Recursive, loads nothing.
}

// A helper that sets the default device itself before loading is out of reach
// of the caller's default device, but not of the caller's scope.
Encoder loadsOnCpu(const fs::path &p) {
  metaguard::set_default_device("cpu");
  return metaguard::from_pretrained<Encoder>(p);
}
Encoder loadsOnCpuThroughAnother(const fs::path &p) { return loadsOnCpu(p); }

void ownSetterShieldsOnlyFromTheDefault(const fs::path &p) {
  {
    metaguard::set_default_device("meta");
    loadsOnCpuThroughAnother(p);
  }
  {
    auto guard = metaguard::init_empty_weights();
    loadsOnCpuThroughAnother(p);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'loadsOnCpuThroughAnother' loads pretrained weights (through 'metaguard::from_pretrained') while a meta-device scope is active
    // CHECK-NOTES: :[[@LINE-3]]:10: note: meta-device scope 'guard'
    // CHECK-NOTES: :[[@LINE-14]]:10: note: 'metaguard::from_pretrained' loads the weights here, in 'loadsOnCpu'
  }
}

// ---- Guards held in other ways ------------------------------------------------

void optionalGuard(const fs::path &p) {
  std::optional<metaguard::MetaDeviceScope> scope;
  metaguard::from_pretrained<Encoder>(p); // Not engaged yet.
  if (flag())
    scope.emplace();
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-6]]:45: note: meta-device scope 'scope'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: if an empty model is what you want here, build it from its config
  scope.reset();
  metaguard::from_pretrained<Encoder>(p);
}

void optionalGuardInPlace(const fs::path &p) {
  std::optional<metaguard::MetaDeviceScope> scope(std::in_place);
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-3]]:45: note: meta-device scope 'scope'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: if an empty model is what you want here, build it from its config
  scope = std::nullopt;
  metaguard::from_pretrained<Encoder>(p);
}

void optionalGuardNeverEngaged(const fs::path &p) {
  std::optional<metaguard::MetaDeviceScope> scope;
  metaguard::from_pretrained<Encoder>(p);
}

void uniquePtrGuard(const fs::path &p) {
  auto scope = std::make_unique<metaguard::MetaDeviceScope>();
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-3]]:8: note: meta-device scope 'scope'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: if an empty model is what you want here, build it from its config
  scope.reset();
  metaguard::from_pretrained<Encoder>(p);
}

void uniquePtrGuardAssignedLater(const fs::path &p) {
  std::unique_ptr<metaguard::MetaDeviceScope> scope;
  metaguard::from_pretrained<Encoder>(p);
  scope = std::make_unique<metaguard::MetaDeviceScope>();
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-5]]:47: note: meta-device scope 'scope'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: if an empty model is what you want here, build it from its config
}

void emptyHolderUnderOuterScope(const fs::path &p) {
  auto outer = metaguard::init_empty_weights();
  std::optional<metaguard::DeviceScope> cpu; // Never engaged: outer decides.
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-4]]:8: note: meta-device scope 'outer'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: if an empty model is what you want here, build it from its config
}

// An RAII class of the user's whose object holds a meta scope.
class EmptyModelBuilder {
public:
  explicit EmptyModelBuilder(const fs::path &dir) : dir_(dir) {}

private:
  metaguard::MetaDeviceScope scope_;
  fs::path dir_;
};
class DerivedBuilder : public EmptyModelBuilder {
  using EmptyModelBuilder::EmptyModelBuilder;
};
class RefersToAScope { // Does not hold one.
public:
  explicit RefersToAScope(metaguard::MetaDeviceScope &s) : scope_(s) {}

private:
  metaguard::MetaDeviceScope &scope_;
};

void raiiClassMember(const fs::path &p) {
  {
    EmptyModelBuilder builder(p);
    metaguard::from_pretrained<Encoder>(p);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
    // CHECK-NOTES: :[[@LINE-3]]:23: note: meta-device scope 'builder'
    // CHECK-NOTES: :[[@LINE-3]]:5: note: if an empty model is what you want here, build it from its config
  }
  {
    DerivedBuilder builder(p);
    metaguard::from_pretrained<Encoder>(p);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
    // CHECK-NOTES: :[[@LINE-3]]:20: note: meta-device scope 'builder'
    // CHECK-NOTES: :[[@LINE-3]]:5: note: if an empty model is what you want here, build it from its config
  }
  metaguard::from_pretrained<Encoder>(p);
}

void refersToAScopeOnly(metaguard::MetaDeviceScope *unused, const fs::path &p);

// A guard passed by reference: the function runs inside the caller's scope.
Encoder buildUnder(metaguard::MetaDeviceScope &scope, const fs::path &p) {
  return metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:10: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-3]]:48: note: meta-device scope 'scope' is passed in here, so it is active for the whole function
  // CHECK-NOTES: :[[@LINE-3]]:10: note: if an empty model is what you want here, build it from its config
}

void callsBuildUnder(const fs::path &p) {
  metaguard::MetaDeviceScope scope;
  buildUnder(scope, p); // Reported inside, once.
}

void cpuScopeInsideAPassedGuard(metaguard::MetaDeviceScope &scope,
                                const fs::path &p) {
  metaguard::DeviceScope cpu(torch::kCPU);
  metaguard::from_pretrained<Encoder>(p);
}

// ---- Options built by helpers ---------------------------------------------------

metaguard::LoadOptions cpuOptions() {
  metaguard::LoadOptions options;
  options.device_map = {{"", torch::kCPU}};
  return options;
}
metaguard::LoadOptions cpuOptionsThroughAnother() { return cpuOptions(); }
metaguard::LoadOptions halfOptions() {
  metaguard::LoadOptions options;
  options.dtype = torch::kHalf;
  return options;
}

void optionsFromHelpers(const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  metaguard::from_pretrained<Encoder>(p, cpuOptions());
  auto options = cpuOptionsThroughAnother();
  metaguard::from_pretrained<Encoder>(p, options);
  metaguard::from_pretrained<Encoder>(p, halfOptions()); // No device map.
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-6]]:8: note: meta-device scope 'guard'
}

// ---- Calls through function pointers and std::function set once ---------------

Encoder loadHelper(const fs::path &p) {
  return metaguard::from_pretrained<Encoder>(p);
}
Encoder noLoadHelper(const fs::path &p);

void throughPointers(const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  auto load = &loadHelper;
  load(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'loadHelper' loads pretrained weights (through 'metaguard::from_pretrained') while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-4]]:8: note: meta-device scope 'guard'
  // CHECK-NOTES: :[[@LINE-10]]:10: note: 'metaguard::from_pretrained' loads the weights here, in 'loadHelper'
  Encoder (*maybe)(const fs::path &) = &loadHelper;
  if (flag())
    maybe = &noLoadHelper; // Two targets: not followed.
  maybe(p);
  std::function<Encoder(const fs::path &)> build = [](const fs::path &dir) {
    return metaguard::from_pretrained<Encoder>(dir);
  };
  build(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'lambda' loads pretrained weights (through 'metaguard::from_pretrained') while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-15]]:8: note: meta-device scope 'guard'
  // CHECK-NOTES: :[[@LINE-5]]:12: note: 'metaguard::from_pretrained' loads the weights here, in 'lambda'
}

// ---- Virtual calls: every override visible in the translation unit -----------

struct Builder {
  virtual ~Builder() = default;
  virtual Encoder build(const fs::path &p) = 0;
  virtual void prepare() {}
};
struct PretrainedBuilder : Builder {
  Encoder build(const fs::path &p) override {
    return metaguard::from_pretrained<Encoder>(p);
  }
};
struct EmptyBuilder final : Builder {
  Encoder build(const fs::path &p) override;
  void prepare() override { metaguard::set_default_device("meta"); }
};

void virtualCalls(Builder &b, EmptyBuilder &e, const fs::path &p) {
  {
    auto guard = metaguard::init_empty_weights();
    b.build(p);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'PretrainedBuilder::build' loads pretrained weights (through 'metaguard::from_pretrained') while a meta-device scope is active
    // CHECK-NOTES: :[[@LINE-3]]:10: note: meta-device scope 'guard'
    // CHECK-NOTES: :[[@LINE-14]]:12: note: 'metaguard::from_pretrained' loads the weights here, in 'PretrainedBuilder::build'
    e.build(p); // A final class: only its own build, which is not visible.
  }
  b.prepare(); // One override may leave the default device meta.
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'EmptyBuilder::prepare' returns with the default device set to meta
  // CHECK-NOTES: :[[@LINE-16]]:29: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-4]]:3: note: if an empty model is what you want here, build it from its config
}

// The only trigger of the function is a virtual call whose override leaves
// the default device meta.
void virtualCallAlone(Builder &b, const fs::path &p) {
  b.prepare();
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'EmptyBuilder::prepare' returns with the default device set to meta
  // CHECK-NOTES: :[[@LINE-27]]:29: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-4]]:3: note: if an empty model is what you want here, build it from its config
}

// ---- Constructors that set the default device ----------------------------------

struct MetaSession {
  MetaSession() { metaguard::set_default_device("meta"); }
};
struct SessionThroughHelper {
  SessionThroughHelper() { enterMeta(); }
};
struct SessionMember {
  SessionMember() : session_() {}
  MetaSession session_;
};

void constructorSetsMeta(const fs::path &p) {
  MetaSession s;
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:15: note: 'MetaSession::MetaSession' returns with the default device set to meta
  // CHECK-NOTES: :[[@LINE-15]]:19: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-4]]:3: note: if an empty model is what you want here, build it from its config
}

void constructorThroughHelper(const fs::path &p) {
  SessionThroughHelper s;
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:24: note: 'SessionThroughHelper::SessionThroughHelper' returns with the default device set to meta
  // CHECK-NOTES: :[[@LINE-370]]:20: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-4]]:3: note: if an empty model is what you want here, build it from its config
}

void constructorMemberInitialiser(const fs::path &p) {
  SessionMember s;
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:17: note: 'SessionMember::SessionMember' returns with the default device set to meta
  // CHECK-NOTES: :[[@LINE-33]]:19: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-4]]:3: note: if an empty model is what you want here, build it from its config
}

void constructorOfATemporary(const fs::path &p) {
  MetaSession(); // Nothing ends what its constructor did.
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'MetaSession::MetaSession' returns with the default device set to meta
  // CHECK-NOTES: :[[@LINE-42]]:19: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-4]]:3: note: if an empty model is what you want here, build it from its config
}

// An RAII session: its destructor resets the default device, so the object's
// life is a scope.
struct ScopedMetaSession {
  ScopedMetaSession() { metaguard::set_default_device("meta"); }
  ~ScopedMetaSession() { metaguard::reset_default_device(); }
};
struct HoldsScopedSession { // Its implicit destructor destroys the session.
  ScopedMetaSession session;
};
struct OpaqueSession {
  OpaqueSession() { metaguard::set_default_device("meta"); }
  ~OpaqueSession(); // Not visible: assumed to end it.
};
struct SessionThatStaysMeta {
  SessionThatStaysMeta() { metaguard::set_default_device("meta"); }
  ~SessionThatStaysMeta() { flag(); } // Leaves it meta.
};

Encoder scopedSessionInHelper(const fs::path &p) {
  ScopedMetaSession s;
  return metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:10: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:21: note: 'ScopedMetaSession::ScopedMetaSession' returns with the default device set to meta, until the object it builds is destroyed
  // CHECK-NOTES: :[[@LINE-20]]:25: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-4]]:10: note: if an empty model is what you want here, build it from its config
}

void raiiSessions(const fs::path &p) {
  {
    ScopedMetaSession s;
    metaguard::from_pretrained<Encoder>(p);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
    // CHECK-NOTES: :[[@LINE-3]]:23: note: 'ScopedMetaSession::ScopedMetaSession' returns with the default device set to meta, until the object it builds is destroyed
    // CHECK-NOTES: :[[@LINE-30]]:25: note: the default device is set to meta here
    // CHECK-NOTES: :[[@LINE-4]]:5: note: if an empty model is what you want here, build it from its config
  }
  metaguard::from_pretrained<Encoder>(p); // The session has ended.
  ScopedMetaSession(); // Ends at the end of the statement.
  metaguard::from_pretrained<Encoder>(p);
  scopedSessionInHelper(p); // Restores the default device before returning.
  metaguard::from_pretrained<Encoder>(p);
  {
    HoldsScopedSession h;
    metaguard::from_pretrained<Encoder>(p);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
    // CHECK-NOTES: :[[@LINE-3]]:24: note: 'HoldsScopedSession::HoldsScopedSession' returns with the default device set to meta, until the object it builds is destroyed
    // CHECK-NOTES: :[[@LINE-43]]:25: note: the default device is set to meta here
    // CHECK-NOTES: :[[@LINE-4]]:5: note: if an empty model is what you want here, build it from its config
  }
  metaguard::from_pretrained<Encoder>(p);
  {
    OpaqueSession o;
    metaguard::from_pretrained<Encoder>(p);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
    // CHECK-NOTES: :[[@LINE-3]]:19: note: 'OpaqueSession::OpaqueSession' returns with the default device set to meta, until the object it builds is destroyed
    // CHECK-NOTES: :[[@LINE-45]]:21: note: the default device is set to meta here
    // CHECK-NOTES: :[[@LINE-4]]:5: note: if an empty model is what you want here, build it from its config
  }
  metaguard::from_pretrained<Encoder>(p);
  {
    SessionThatStaysMeta k;
  }
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-4]]:26: note: 'SessionThatStaysMeta::SessionThatStaysMeta' returns with the default device set to meta
  // CHECK-NOTES: :[[@LINE-51]]:28: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-4]]:3: note: if an empty model is what you want here, build it from its config
}

// A reset by a destructor ends a meta default device set before the object.
struct ResetOnExit {
  ~ResetOnExit() { metaguard::reset_default_device(); }
};

void resetByADestructor(const fs::path &p) {
  metaguard::set_default_device("meta");
  {
    ResetOnExit r;
  }
  metaguard::from_pretrained<Encoder>(p);
}

// A reference that extends a temporary session's life: the session lasts for
// the reference's block.
void lifetimeExtendedSession(const fs::path &p) {
  {
    const ScopedMetaSession &session = ScopedMetaSession();
    metaguard::from_pretrained<Encoder>(p);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
    // CHECK-NOTES: :[[@LINE-3]]:40: note: 'ScopedMetaSession::ScopedMetaSession' returns with the default device set to meta, until the object it builds is destroyed
    // CHECK-NOTES: :[[@LINE-87]]:25: note: the default device is set to meta here
    // CHECK-NOTES: :[[@LINE-4]]:5: note: if an empty model is what you want here, build it from its config
  }
  metaguard::from_pretrained<Encoder>(p);
}

// A session that ends on the way out of a helper restores the caller's
// default device.
void sessionInside() { ScopedMetaSession session; }

void helperWithASession(const fs::path &p) {
  metaguard::set_default_device("meta");
  sessionInside();
  metaguard::from_pretrained<Encoder>(p);
}

// Sessions a smart pointer owns: std::make_unique / std::make_shared run the
// constructor in a system header; the pointer's end of life runs the
// destructor.
void smartPointerSessions(const fs::path &p) {
  {
    auto session = std::make_unique<ScopedMetaSession>();
    metaguard::from_pretrained<Encoder>(p);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
    // CHECK-NOTES: :[[@LINE-3]]:20: note: 'ScopedMetaSession::ScopedMetaSession' returns with the default device set to meta, until the object it builds is destroyed
    // CHECK-NOTES: :[[@LINE-112]]:25: note: the default device is set to meta here
    // CHECK-NOTES: :[[@LINE-4]]:5: note: if an empty model is what you want here, build it from its config
  }
  metaguard::from_pretrained<Encoder>(p); // The session ended with its pointer.
  {
    auto shared = std::make_shared<ScopedMetaSession>();
    metaguard::from_pretrained<Encoder>(p);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
    // CHECK-NOTES: :[[@LINE-3]]:19: note: 'ScopedMetaSession::ScopedMetaSession' returns with the default device set to meta, until the object it builds is destroyed
    // CHECK-NOTES: :[[@LINE-121]]:25: note: the default device is set to meta here
    // CHECK-NOTES: :[[@LINE-4]]:5: note: if an empty model is what you want here, build it from its config
  }
  metaguard::from_pretrained<Encoder>(p);
}

void smartPointerSessionThatStaysMeta(const fs::path &p) {
  {
    auto session = std::make_unique<MetaSession>();
  }
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-4]]:20: note: 'MetaSession::MetaSession' returns with the default device set to meta
  // CHECK-NOTES: :[[@LINE-183]]:19: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-4]]:3: note: if an empty model is what you want here, build it from its config
}
