// RUN: %check_clang_tidy -std=c++20 %s metaguard-from-pretrained-in-meta-scope

#include <metaguard/metaguard.h>

namespace fs = std::filesystem;
using metaguard::Config;

struct EncoderImpl : torch::nn::Module {
  explicit EncoderImpl(const Config &);
};
TORCH_MODULE(Encoder);

bool flag();

// ---- Lexical meta scopes -------------------------------------------------

void guardFromInitEmptyWeights(const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  auto e = metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:12: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active, so the loaded tensors would be left on the meta device without data; build the empty model with from_config/Model(config) there instead, move the load out of the scope, or pass an explicit device map [metaguard-from-pretrained-in-meta-scope]
  // CHECK-NOTES: :[[@LINE-3]]:8: note: meta-device scope 'guard' is active from here to the end of its block
  // CHECK-NOTES: :[[@LINE-3]]:12: note: if an empty model is what you want here, build it from its config
}

void namedMetaDeviceScope(const fs::path &p) {
  metaguard::MetaDeviceScope scope;
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-3]]:30: note: meta-device scope 'scope' is active
  // CHECK-NOTES: :[[@LINE-3]]:3: note: if an empty model is what you want here, build it from its config
}

void metaDeviceScopeWithArgument(const fs::path &p) {
  metaguard::MetaDeviceScope scope(false);
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights
  // CHECK-NOTES: :[[@LINE-3]]:30: note: meta-device scope 'scope'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: if an empty model is what you want here, build it from its config
}

void deviceScopeOnKMeta(const fs::path &p) {
  metaguard::DeviceScope scope(torch::kMeta);
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights
  // CHECK-NOTES: :[[@LINE-3]]:26: note: meta-device scope 'scope'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: if an empty model is what you want here, build it from its config
}

void deviceScopeOnDeviceString(const fs::path &p) {
  metaguard::DeviceScope scope(torch::Device("meta"));
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights
  // CHECK-NOTES: :[[@LINE-3]]:26: note: meta-device scope 'scope'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: if an empty model is what you want here, build it from its config
}

void deviceScopeOnDeviceOfType(const fs::path &p) {
  metaguard::DeviceScope scope{torch::Device(torch::kMeta)};
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights
  // CHECK-NOTES: :[[@LINE-3]]:26: note: meta-device scope 'scope'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: if an empty model is what you want here, build it from its config
}

void deviceScopeOnEnumerator(const fs::path &p) {
  metaguard::DeviceScope scope(c10::DeviceType::Meta);
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights
  // CHECK-NOTES: :[[@LINE-3]]:26: note: meta-device scope 'scope'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: if an empty model is what you want here, build it from its config
}

void deviceScopeOnStdString(const fs::path &p) {
  metaguard::DeviceScope scope(std::string("meta"));
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights
  // CHECK-NOTES: :[[@LINE-3]]:26: note: meta-device scope 'scope'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: if an empty model is what you want here, build it from its config
}

void deviceScopeOnCpuIsFine(const fs::path &p) {
  metaguard::DeviceScope cpu(torch::kCPU);
  metaguard::DeviceScope cuda(torch::Device("cuda:0"));
  metaguard::from_pretrained<Encoder>(p);
}

void deviceScopeOnUnknownDevice(const fs::path &p, torch::Device device) {
  metaguard::DeviceScope scope(device); // Not a constant: no guess.
  metaguard::from_pretrained<Encoder>(p);
}

constexpr c10::DeviceType kEmptyType = torch::kMeta;
const torch::Device kEmptyDevice(torch::kMeta);
const torch::Device kCpuDevice("cpu");

void constDeviceVariables(const fs::path &p) {
  {
    metaguard::DeviceScope scope(kEmptyType);
    metaguard::from_pretrained<Encoder>(p);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'metaguard::from_pretrained' loads pretrained weights
    // CHECK-NOTES: :[[@LINE-3]]:28: note: meta-device scope 'scope'
    // CHECK-NOTES: :[[@LINE-3]]:5: note: if an empty model is what you want here, build it from its config
  }
  {
    metaguard::DeviceScope scope(kEmptyDevice);
    metaguard::from_pretrained<Encoder>(p);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'metaguard::from_pretrained' loads pretrained weights
    // CHECK-NOTES: :[[@LINE-3]]:28: note: meta-device scope 'scope'
    // CHECK-NOTES: :[[@LINE-3]]:5: note: if an empty model is what you want here, build it from its config
  }
  {
    const auto local = torch::Device("meta");
    metaguard::DeviceScope scope(local);
    metaguard::from_pretrained<Encoder>(p);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'metaguard::from_pretrained' loads pretrained weights
    // CHECK-NOTES: :[[@LINE-3]]:28: note: meta-device scope 'scope'
    // CHECK-NOTES: :[[@LINE-3]]:5: note: if an empty model is what you want here, build it from its config
  }
  {
    metaguard::DeviceScope scope(kCpuDevice);
    metaguard::from_pretrained<Encoder>(p);
  }
}

void nonConstDeviceVariable(const fs::path &p, torch::Device other) {
  {
    torch::Device device = torch::kMeta; // Never changed: meta.
    metaguard::DeviceScope scope(device);
    metaguard::from_pretrained<Encoder>(p);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'metaguard::from_pretrained' loads pretrained weights
    // CHECK-NOTES: :[[@LINE-3]]:28: note: meta-device scope 'scope'
    // CHECK-NOTES: :[[@LINE-3]]:5: note: if an empty model is what you want here, build it from its config
  }
  {
    torch::Device device = torch::kMeta;
    if (flag())
      device = other; // May change: no guess.
    metaguard::DeviceScope scope(device);
    metaguard::from_pretrained<Encoder>(p);
  }
}

void lifetimeExtendedGuard(const fs::path &p) {
  const auto &guard = metaguard::init_empty_weights();
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights
  // CHECK-NOTES: :[[@LINE-3]]:15: note: meta-device scope 'guard'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: if an empty model is what you want here, build it from its config
}

void temporaryGuardIsGone(const fs::path &p) {
  metaguard::MetaDeviceScope();
  (void)metaguard::init_empty_weights();
  metaguard::DeviceScope{torch::kMeta};
  metaguard::from_pretrained<Encoder>(p);
}

void scopeEndedBeforeTheCall(const fs::path &p, const Config &c) {
  {
    auto guard = metaguard::init_empty_weights();
    auto skeleton = metaguard::from_config<Encoder>(c);
  }
  metaguard::from_pretrained<Encoder>(p);
}

void nestedBlocks(const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  {
    {
      metaguard::from_pretrained<Encoder>(p);
      // CHECK-NOTES: :[[@LINE-1]]:7: warning: 'metaguard::from_pretrained' loads pretrained weights
      // CHECK-NOTES: :[[@LINE-5]]:8: note: meta-device scope 'guard'
      // CHECK-NOTES: :[[@LINE-3]]:7: note: if an empty model is what you want here, build it from its config
    }
  }
}

void innermostScopeWins(const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  {
    metaguard::DeviceScope cpu(torch::kCPU);
    metaguard::from_pretrained<Encoder>(p);
  }
  metaguard::DeviceScope cpu(torch::kCPU);
  {
    metaguard::MetaDeviceScope inner;
    metaguard::from_pretrained<Encoder>(p);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'metaguard::from_pretrained' loads pretrained weights
    // CHECK-NOTES: :[[@LINE-3]]:32: note: meta-device scope 'inner'
    // CHECK-NOTES: :[[@LINE-3]]:5: note: if an empty model is what you want here, build it from its config
  }
}

void guardDeclaredAfterTheCall(const fs::path &p) {
  metaguard::from_pretrained<Encoder>(p);
  auto guard = metaguard::init_empty_weights();
}

void guardInBranch(const fs::path &p) {
  if (flag()) {
    auto guard = metaguard::init_empty_weights();
    metaguard::from_pretrained<Encoder>(p);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'metaguard::from_pretrained' loads pretrained weights
    // CHECK-NOTES: :[[@LINE-3]]:10: note: meta-device scope 'guard'
    // CHECK-NOTES: :[[@LINE-3]]:5: note: if an empty model is what you want here, build it from its config
  } else {
    metaguard::from_pretrained<Encoder>(p);
  }
  metaguard::from_pretrained<Encoder>(p);
}

void guardInIfInitStatement(const fs::path &p) {
  if (auto guard = metaguard::init_empty_weights(); flag()) {
    metaguard::from_pretrained<Encoder>(p);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'metaguard::from_pretrained' loads pretrained weights
    // CHECK-NOTES: :[[@LINE-3]]:12: note: meta-device scope 'guard'
    // CHECK-NOTES: :[[@LINE-3]]:5: note: if an empty model is what you want here, build it from its config
  }
  metaguard::from_pretrained<Encoder>(p);
}

void guardInLoopBody(const fs::path &p) {
  for (int i = 0; i < 3; ++i) {
    metaguard::from_pretrained<Encoder>(p); // Before the guard: fine.
    auto guard = metaguard::init_empty_weights();
    metaguard::from_pretrained<Encoder>(p);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'metaguard::from_pretrained' loads pretrained weights
    // CHECK-NOTES: :[[@LINE-3]]:10: note: meta-device scope 'guard'
    // CHECK-NOTES: :[[@LINE-3]]:5: note: if an empty model is what you want here, build it from its config
  }
}

void fromConfigIsTheIntendedPattern(const Config &c) {
  auto guard = metaguard::init_empty_weights();
  auto a = metaguard::from_config<Encoder>(c);
  Encoder b(c);
  auto d = std::make_shared<EncoderImpl>(c);
  torch::nn::Linear head(4, 4);
}

void loadWeightsIsNotAnnotated(torch::nn::Module &m, const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  metaguard::load_weights(m, p);
}

// ---- Default device, flow-sensitive --------------------------------------

void defaultDeviceMeta(const fs::path &p) {
  metaguard::set_default_device("meta");
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta, so the loaded tensors would be left on the meta device without data; build the empty model with from_config/Model(config) there instead, reset the default device before the load, or pass an explicit device map [metaguard-from-pretrained-in-meta-scope]
  // CHECK-NOTES: :[[@LINE-3]]:3: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-3]]:3: note: if an empty model is what you want here, build it from its config
}

void defaultDeviceMetaThenReset(const fs::path &p) {
  metaguard::set_default_device(torch::kMeta);
  metaguard::set_default_device(torch::kCPU);
  metaguard::from_pretrained<Encoder>(p);
}

void defaultDeviceEveryOverload(const fs::path &p) {
  using namespace std::literals;
  metaguard::set_default_device(torch::Device("meta"));
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:3: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-3]]:3: note: if an empty model is what you want here, build it from its config
  metaguard::set_default_device("cuda:0");
  metaguard::set_default_device(std::string("meta"));
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:3: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-3]]:3: note: if an empty model is what you want here, build it from its config
  metaguard::set_default_device("cpu"sv);
  metaguard::set_default_device("meta"sv);
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:3: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-3]]:3: note: if an empty model is what you want here, build it from its config
  metaguard::set_default_device(c10::DeviceType::CPU);
  metaguard::set_default_device(c10::kMeta);
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:3: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-3]]:3: note: if an empty model is what you want here, build it from its config
}

void defaultDeviceMetaOnOneBranch(const fs::path &p) {
  if (flag())
    metaguard::set_default_device("meta");
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:5: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-3]]:3: note: if an empty model is what you want here, build it from its config
}

void defaultDeviceResetOnOneBranch(const fs::path &p) {
  metaguard::set_default_device("meta");
  if (flag())
    metaguard::set_default_device("cpu");
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-5]]:3: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-3]]:3: note: if an empty model is what you want here, build it from its config
}

void defaultDeviceResetOnEveryBranch(const fs::path &p) {
  metaguard::set_default_device("meta");
  if (flag())
    metaguard::set_default_device("cpu");
  else
    metaguard::set_default_device(torch::kCUDA);
  metaguard::from_pretrained<Encoder>(p);
}

void defaultDeviceEarlyReturn(const fs::path &p) {
  if (flag()) {
    metaguard::set_default_device("meta");
    return;
  }
  metaguard::from_pretrained<Encoder>(p);
}

void defaultDeviceLoopBackEdge(const fs::path &p) {
  for (int i = 0; i < 2; ++i) {
    metaguard::from_pretrained<Encoder>(p);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
    // CHECK-NOTES: :[[@LINE+2]]:5: note: the default device is set to meta here
    // CHECK-NOTES: :[[@LINE-3]]:5: note: if an empty model is what you want here, build it from its config
    metaguard::set_default_device("meta");
  }
}

void defaultDeviceLoopResetFirst(const fs::path &p) {
  while (flag()) {
    metaguard::set_default_device("cpu");
    metaguard::from_pretrained<Encoder>(p);
    metaguard::set_default_device("meta");
  }
}

void defaultDeviceUnknownArgument(const fs::path &p, const std::string &name) {
  metaguard::set_default_device("meta");
  metaguard::set_default_device(name); // Unknown: the state ends.
  metaguard::from_pretrained<Encoder>(p);
}

void defaultDeviceUnknownOnly(const fs::path &p, torch::Device device) {
  metaguard::set_default_device(device);
  metaguard::from_pretrained<Encoder>(p);
}

void defaultDeviceLoadBeforeSet(const fs::path &p) {
  metaguard::from_pretrained<Encoder>(p);
  metaguard::set_default_device("meta");
}

void defaultDeviceUnderCpuScope(const fs::path &p) {
  metaguard::set_default_device("meta");
  metaguard::DeviceScope cpu(torch::kCPU); // A scope wins over the default.
  metaguard::from_pretrained<Encoder>(p);
}

// ---- with_meta_device -----------------------------------------------------

void withMetaDeviceLambda(const fs::path &p, const Config &c) {
  auto e = metaguard::with_meta_device([&] {
    return metaguard::from_pretrained<Encoder>(p);
    // CHECK-NOTES: :[[@LINE-1]]:12: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
    // CHECK-NOTES: :[[@LINE-3]]:12: note: 'metaguard::with_meta_device' runs this lambda on the meta device
    // CHECK-NOTES: :[[@LINE-3]]:12: note: if an empty model is what you want here, build it from its config
  });
  auto f = metaguard::with_meta_device(
      [&] { return metaguard::from_config<Encoder>(c); });
}

void lambdaScopeOverriddenInside(const fs::path &p) {
  metaguard::with_meta_device([&] {
    metaguard::DeviceScope cpu(torch::kCPU);
    metaguard::from_pretrained<Encoder>(p);
  });
}

Encoder loadEncoder(const fs::path &p) {
  return metaguard::from_pretrained<Encoder>(p);
}

void withMetaDeviceNamedCallable(const fs::path &p) {
  auto build = [&] { return metaguard::from_pretrained<Encoder>(p); };
  metaguard::with_meta_device(build);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'lambda' loads pretrained weights (through 'metaguard::from_pretrained') while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-2]]:3: note: 'metaguard::with_meta_device' runs 'lambda' on the meta device
  // CHECK-NOTES: :[[@LINE-4]]:29: note: 'metaguard::from_pretrained' loads the weights here, in 'lambda'
}

void lambdaDefinedInScopeNotCalled(const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  auto later = [&] { return metaguard::from_pretrained<Encoder>(p); };
}

void lambdaCalledInScope(const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  auto build = [&] { return metaguard::from_pretrained<Encoder>(p); };
  auto e = build();
  // CHECK-NOTES: :[[@LINE-1]]:12: warning: 'lambda' loads pretrained weights (through 'metaguard::from_pretrained') while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-4]]:8: note: meta-device scope 'guard'
  // CHECK-NOTES: :[[@LINE-4]]:29: note: 'metaguard::from_pretrained' loads the weights here, in 'lambda'
}

// ---- Explicit device map ---------------------------------------------------

void designatedDeviceMap(const fs::path &p, const metaguard::DeviceMap &map) {
  auto guard = metaguard::init_empty_weights();
  metaguard::from_pretrained<Encoder>(p, {.device_map = map});
  metaguard::from_pretrained<Encoder>(
      p, metaguard::LoadOptions{.device_map = {{"", torch::kCPU}},
                                .strict = false});
  metaguard::from_pretrained<Encoder>(p, {.dtype = torch::kHalf});
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights
  // CHECK-NOTES: :[[@LINE-7]]:8: note: meta-device scope 'guard'
}

void optionsObjectWithDeviceMap(const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  metaguard::LoadOptions options;
  options.dtype = torch::kHalf;
  metaguard::from_pretrained<Encoder>(p, options);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights
  // CHECK-NOTES: :[[@LINE-5]]:8: note: meta-device scope 'guard'
  options.device_map = {{"", torch::kCPU}};
  metaguard::from_pretrained<Encoder>(p, options);
}

void optionsObjectMapModified(const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  metaguard::LoadOptions options;
  options.device_map.emplace("encoder", torch::kCPU);
  metaguard::from_pretrained<Encoder>(p, options);
}

void optionsObjectMapOnOneBranch(const fs::path &p) {
  metaguard::set_default_device("meta");
  metaguard::LoadOptions options;
  if (flag())
    options.device_map = {{"", torch::kCPU}};
  metaguard::from_pretrained<Encoder>(p, options); // Visibly set on a path.
}

void optionsObjectInitialised(const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  metaguard::LoadOptions options{.device_map = {{"", torch::kCPU}}};
  metaguard::from_pretrained<Encoder>(p, options);
}

void optionsFromParameter(const fs::path &p,
                          const metaguard::LoadOptions &options) {
  auto guard = metaguard::init_empty_weights();
  metaguard::from_pretrained<Encoder>(p, options);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights
  // CHECK-NOTES: :[[@LINE-3]]:8: note: meta-device scope 'guard'
}

// ---- Other loaders ----------------------------------------------------------

METAGUARD_LOADS_WEIGHTS Encoder loadMyEncoder(const fs::path &p);

struct Model {
  static Model from_pretrained(const fs::path &p);
};

namespace user {
Encoder from_pretrained(const std::string &name);
} // namespace user

void otherLoaders(const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  loadMyEncoder(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'loadMyEncoder' loads pretrained weights
  // CHECK-NOTES: :[[@LINE-3]]:8: note: meta-device scope 'guard'
  Model::from_pretrained(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'Model::from_pretrained' loads pretrained weights
  // CHECK-NOTES: :[[@LINE-6]]:8: note: meta-device scope 'guard'
  user::from_pretrained("bert");
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'user::from_pretrained' loads pretrained weights
  // CHECK-NOTES: :[[@LINE-9]]:8: note: meta-device scope 'guard'
}

// ---- Through calls ------------------------------------------------------------

struct CompositeImpl : torch::nn::Module {
  explicit CompositeImpl(const fs::path &encoder_dir) {
    encoder = register_module(
        "encoder", metaguard::from_pretrained<Encoder>(encoder_dir).ptr());
  }
  std::shared_ptr<EncoderImpl> encoder;
};
TORCH_MODULE(Composite);

void compositeBuiltUnderMeta(const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  Composite model(p);
  // CHECK-NOTES: :[[@LINE-1]]:13: warning: 'Composite::Composite' loads pretrained weights (through 'metaguard::from_pretrained') while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-3]]:8: note: meta-device scope 'guard'
  // CHECK-NOTES: :[[@LINE-11]]:20: note: 'metaguard::from_pretrained' loads the weights here, in 'CompositeImpl::CompositeImpl'
  auto impl = std::make_shared<CompositeImpl>(p);
  // CHECK-NOTES: :[[@LINE-1]]:15: warning: 'std::make_shared' loads pretrained weights (through 'metaguard::from_pretrained')
  // CHECK-NOTES: :[[@LINE-7]]:8: note: meta-device scope 'guard'
  // CHECK-NOTES: :[[@LINE-15]]:20: note: 'metaguard::from_pretrained' loads the weights here, in 'CompositeImpl::CompositeImpl'
}

struct WithDefaultMemberFromPath { // Builds nothing pretrained.
  explicit WithDefaultMemberFromPath(const fs::path &) {}
};

struct WithDefaultMember {
  Encoder encoder = metaguard::from_pretrained<Encoder>("bert");
};

void defaultMemberInitialiser() {
  metaguard::MetaDeviceScope scope;
  WithDefaultMember holder;
  // CHECK-NOTES: :[[@LINE-1]]:21: warning: 'WithDefaultMember::WithDefaultMember' loads pretrained weights (through 'metaguard::from_pretrained')
  // CHECK-NOTES: :[[@LINE-3]]:30: note: meta-device scope 'scope'
  // CHECK-NOTES: :[[@LINE-8]]:21: note: 'metaguard::from_pretrained' loads the weights here, in 'WithDefaultMember::WithDefaultMember'
}

Encoder level3(const fs::path &p) { return metaguard::from_pretrained<Encoder>(p); }
Encoder level2(const fs::path &p) { return level3(p); }
Encoder level1(const fs::path &p) { return level2(p); }
Encoder level0(const fs::path &p) { return level1(p); }

void loadsFollowedAtAnyDepth(const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  level1(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'level1' loads pretrained weights (through 'metaguard::from_pretrained')
  // CHECK-NOTES: :[[@LINE-3]]:8: note: meta-device scope 'guard'
  // CHECK-NOTES: :[[@LINE-10]]:44: note: 'metaguard::from_pretrained' loads the weights here, in 'level3'
  level0(p); // Four calls deep: found through the summaries.
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'level0' loads pretrained weights (through 'metaguard::from_pretrained')
  // CHECK-NOTES: :[[@LINE-7]]:8: note: meta-device scope 'guard'
  // CHECK-NOTES: :[[@LINE-14]]:44: note: 'metaguard::from_pretrained' loads the weights here, in 'level3'
}

Encoder loadsUnderItsOwnCpuScope(const fs::path &p) {
  metaguard::DeviceScope cpu(torch::kCPU);
  return metaguard::from_pretrained<Encoder>(p);
}

Encoder loadsWithDeviceMap(const fs::path &p) {
  return metaguard::from_pretrained<Encoder>(p, {.device_map = {{"", torch::kCPU}}});
}

Encoder loadsUnderItsOwnMetaScope(const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  return metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:10: warning: 'metaguard::from_pretrained' loads pretrained weights
  // CHECK-NOTES: :[[@LINE-3]]:8: note: meta-device scope 'guard'
  // CHECK-NOTES: :[[@LINE-3]]:10: note: if an empty model is what you want here, build it from its config
}

int noLoad(int x) { return x + 1; }

void calleesThatHandleTheDevice(const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  loadsUnderItsOwnCpuScope(p);
  loadsWithDeviceMap(p);
  loadsUnderItsOwnMetaScope(p); // Reported inside, once.
  noLoad(1);
}

Encoder resetsDefaultFirst(const fs::path &p) {
  metaguard::set_default_device("cpu");
  return metaguard::from_pretrained<Encoder>(p);
}

void defaultDeviceThroughCalls(const fs::path &p) {
  metaguard::set_default_device("meta");
  loadEncoder(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'loadEncoder' loads pretrained weights (through 'metaguard::from_pretrained') while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:3: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-196]]:10: note: 'metaguard::from_pretrained' loads the weights here, in 'loadEncoder'
  resetsDefaultFirst(p); // Leaves the default device "cpu": the state ends.
  loadEncoder(p);
}

// ---- Templates and macros ---------------------------------------------------

template <class M> M loadUnderMeta(const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  return metaguard::from_pretrained<M>(p);
  // CHECK-NOTES: :[[@LINE-1]]:10: warning: 'metaguard::from_pretrained' loads pretrained weights
  // CHECK-NOTES: :[[@LINE-3]]:8: note: meta-device scope 'guard'
}

void instantiateTwice(const fs::path &p) {
  loadUnderMeta<Encoder>(p);
  loadUnderMeta<Composite>(p);
}

template <class M> M neverInstantiated(const fs::path &p) {
  metaguard::MetaDeviceScope scope;
  return M::from_pretrained(p);
  // CHECK-NOTES: :[[@LINE-1]]:10: warning: 'M::from_pretrained' loads pretrained weights
  // CHECK-NOTES: :[[@LINE-3]]:30: note: meta-device scope 'scope'
}

#define LOAD_ENCODER(path) metaguard::from_pretrained<Encoder>(path)
#define EMPTY_WEIGHTS() auto macro_guard = metaguard::init_empty_weights()

void macros(const fs::path &p) {
  EMPTY_WEIGHTS();
  LOAD_ENCODER(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights
  // CHECK-NOTES: :[[@LINE-3]]:3: note: meta-device scope 'macro_guard'
}

// ---- Loaders that build the model on meta themselves -----------------------

// Like metaguard::from_pretrained: builds the model under meta, then loads.
template <class M>
METAGUARD_LOADS_WEIGHTS M loadBuiltOnMeta(const fs::path &p) {
  M model = [&] {
    metaguard::MetaDeviceScope scope;
    return M(p);
  }();
  return model;
}

void loaderBuildsCompositeOnMeta(const fs::path &p) {
  loadBuiltOnMeta<Composite>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'loadBuiltOnMeta' builds 'Composite' on the meta device, and building it loads pretrained weights (through 'metaguard::from_pretrained'), which would be left on the meta device without data
  // CHECK-NOTES: :{{[0-9]+}}:20: note: 'metaguard::from_pretrained' loads the weights here, in 'CompositeImpl::CompositeImpl'
  loadBuiltOnMeta<WithDefaultMemberFromPath>(p);
}

// ---- Module holders and make_shared do not count towards CallDepth ---------

void holderLoad2(const fs::path &p) { metaguard::from_pretrained<Encoder>(p); }
void holderLoad1(const fs::path &p) { holderLoad2(p); }

struct DeepImpl : torch::nn::Module {
  explicit DeepImpl(const fs::path &p) { holderLoad1(p); }
};
TORCH_MODULE(Deep);

void loadThreeUserCallsBelowAHolder(const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  Deep holder(p);
  // CHECK-NOTES: :[[@LINE-1]]:8: warning: 'Deep::Deep' loads pretrained weights (through 'metaguard::from_pretrained') while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-3]]:8: note: meta-device scope 'guard'
  // CHECK-NOTES: :[[@LINE-13]]:39: note: 'metaguard::from_pretrained' loads the weights here, in 'holderLoad2'
  auto shared = std::make_shared<DeepImpl>(p);
  // CHECK-NOTES: :[[@LINE-1]]:17: warning: 'std::make_shared' loads pretrained weights (through 'metaguard::from_pretrained')
  // CHECK-NOTES: :[[@LINE-7]]:8: note: meta-device scope 'guard'
  // CHECK-NOTES: :[[@LINE-17]]:39: note: 'metaguard::from_pretrained' loads the weights here, in 'holderLoad2'
  DeepImpl plain(p);
  // CHECK-NOTES: :[[@LINE-1]]:12: warning: 'DeepImpl::DeepImpl' loads pretrained weights (through 'metaguard::from_pretrained')
  // CHECK-NOTES: :[[@LINE-11]]:8: note: meta-device scope 'guard'
  // CHECK-NOTES: :[[@LINE-21]]:39: note: 'metaguard::from_pretrained' loads the weights here, in 'holderLoad2'
}

// ---- reset_default_device ends the meta state ------------------------------

void resetEndsTheMetaDefault(const fs::path &p) {
  metaguard::set_default_device("meta");
  metaguard::reset_default_device();
  metaguard::from_pretrained<Encoder>(p);
}

void resetOnOnePathOnly(const fs::path &p) {
  metaguard::set_default_device("meta");
  if (flag())
    metaguard::reset_default_device();
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-5]]:3: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-3]]:3: note: if an empty model is what you want here, build it from its config
}
