// C++17 code has no designated initialisers: device maps come through an
// options object or a positional initialiser.
// RUN: %check_clang_tidy -std=c++17 %s metaguard-from-pretrained-in-meta-scope

#include <metaguard/metaguard.h>

namespace fs = std::filesystem;

struct Encoder {};

void optionsObjectAssigned(const fs::path &p, const metaguard::DeviceMap &map) {
  auto guard = metaguard::init_empty_weights();
  metaguard::LoadOptions options;
  options.device_map = map;
  metaguard::from_pretrained<Encoder>(p, options);
}

void optionsObjectInsert(const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  metaguard::LoadOptions options;
  options.device_map.insert({"", torch::kCPU});
  metaguard::from_pretrained<Encoder>(p, options);
}

void optionsObjectWithoutMap(const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  metaguard::LoadOptions options{};
  options.strict = false;
  options.offload_folder = "/tmp/offload"; // Not a device map.
  metaguard::from_pretrained<Encoder>(p, options);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
}

void optionsObjectOfAnotherVariable(const fs::path &p,
                                    const metaguard::DeviceMap &map) {
  auto guard = metaguard::init_empty_weights();
  metaguard::LoadOptions with_map, without_map;
  with_map.device_map = map;
  metaguard::from_pretrained<Encoder>(p, without_map);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
}

void optionsMapAssignedAfterTheCall(const fs::path &p,
                                    const metaguard::DeviceMap &map) {
  metaguard::set_default_device("meta");
  metaguard::LoadOptions options;
  metaguard::from_pretrained<Encoder>(p, options);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  options.device_map = map;
}

void positionalInitialiser(const fs::path &p, const metaguard::DeviceMap &map) {
  auto guard = metaguard::init_empty_weights();
  metaguard::from_pretrained<Encoder>(p, metaguard::LoadOptions{map});
  metaguard::from_pretrained<Encoder>(p, {map, torch::kHalf});
  metaguard::from_pretrained<Encoder>(p, metaguard::LoadOptions{});
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
  metaguard::from_pretrained<Encoder>(p, {});
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
}

void optionsCopiedFromAnother(const fs::path &p, const metaguard::DeviceMap &map) {
  auto guard = metaguard::init_empty_weights();
  metaguard::LoadOptions options = metaguard::LoadOptions{map};
  metaguard::from_pretrained<Encoder>(p, options);
}

template <class T> struct Loader {
  static T load(const fs::path &p) {
    metaguard::MetaDeviceScope scope;
    return metaguard::from_pretrained<T>(p);
    // CHECK-MESSAGES: :[[@LINE-1]]:12: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
  }
};

void classTemplateInstantiatedTwice(const fs::path &p) {
  Loader<Encoder>::load(p);
  Loader<int>::load(p);
}

#define WITH_EMPTY_WEIGHTS(body)                                               \
  do {                                                                         \
    auto macro_scope = metaguard::init_empty_weights();                        \
    body;                                                                      \
  } while (false)

void loaderAsMacroArgument(const fs::path &p) {
  WITH_EMPTY_WEIGHTS(metaguard::from_pretrained<Encoder>(p));
  // CHECK-MESSAGES: :[[@LINE-1]]:22: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
}
