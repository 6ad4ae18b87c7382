// RUN: %check_clang_tidy -check-suffixes=LOADERS %s metaguard-from-pretrained-in-meta-scope -- \
// RUN:   -config="{CheckOptions: [{key: metaguard-from-pretrained-in-meta-scope.LoaderFunctions, value: 'load_checkpoint;::app::Store::fetch'}]}"
// RUN: %check_clang_tidy -check-suffixes=TYPES %s metaguard-from-pretrained-in-meta-scope -- \
// RUN:   -config="{CheckOptions: [{key: metaguard-from-pretrained-in-meta-scope.MetaScopeTypes, value: '::app::EmptyInit'}, {key: metaguard-from-pretrained-in-meta-scope.DeviceScopeTypes, value: 'OnDevice'}]}"
// RUN: %check_clang_tidy -check-suffixes=FUNCS %s metaguard-from-pretrained-in-meta-scope -- \
// RUN:   -config="{CheckOptions: [{key: metaguard-from-pretrained-in-meta-scope.MetaScopeFunctions, value: '::app::on_meta'}, {key: metaguard-from-pretrained-in-meta-scope.DefaultDeviceSetters, value: '::app::use_device'}]}"
// RUN: %check_clang_tidy -check-suffixes=DEPTH0 %s metaguard-from-pretrained-in-meta-scope -- \
// RUN:   -config="{CheckOptions: [{key: metaguard-from-pretrained-in-meta-scope.CallDepth, value: 0}]}"
// RUN: %check_clang_tidy -check-suffixes=DEPTH1 %s metaguard-from-pretrained-in-meta-scope -- \
// RUN:   -config="{CheckOptions: [{key: metaguard-from-pretrained-in-meta-scope.CallDepth, value: 1}]}"

#include <metaguard/metaguard.h>

// FUNCS replaces MetaScopeFunctions, so metaguard::with_meta_device becomes an
// ordinary function whose body holds a MetaDeviceScope and calls f(): the
// lambda passed to it (below) is then reported there, in the header.
// CHECK-MESSAGES-FUNCS: metaguard.h:{{[0-9]+}}:{{[0-9]+}}: warning: 'lambda' loads pretrained weights (through 'metaguard::from_pretrained') while a meta-device scope is active

namespace fs = std::filesystem;

struct Encoder {};

namespace app {
Encoder load_checkpoint(const fs::path &p);
struct Store {
  static Encoder fetch(const fs::path &p);
};
struct Other {
  static Encoder fetch(const fs::path &p); // Not app::Store::fetch.
};
Encoder from_pretrained(const fs::path &p); // Not annotated.

struct EmptyInit {
  EmptyInit();
  ~EmptyInit();
};
struct OnDevice {
  explicit OnDevice(torch::Device device);
  ~OnDevice();
};
template <class F> auto on_meta(F &&f) { return f(); }
void use_device(const char *name);
} // namespace app

void loaderFunctions(const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  app::load_checkpoint(p);
  // CHECK-MESSAGES-LOADERS: :[[@LINE-1]]:3: warning: 'app::load_checkpoint' loads pretrained weights while a meta-device scope is active
  app::Store::fetch(p);
  // CHECK-MESSAGES-LOADERS: :[[@LINE-1]]:3: warning: 'app::Store::fetch' loads pretrained weights while a meta-device scope is active
  app::Other::fetch(p);
  // With MetaScopeTypes replaced (TYPES), init_empty_weights() is no longer
  // a meta scope, so nothing in this function is flagged.
  app::from_pretrained(p);
  // CHECK-MESSAGES-FUNCS: :[[@LINE-1]]:3: warning: 'app::from_pretrained' loads pretrained weights
  // CHECK-MESSAGES-DEPTH0: :[[@LINE-2]]:3: warning: 'app::from_pretrained' loads pretrained weights
  // CHECK-MESSAGES-DEPTH1: :[[@LINE-3]]:3: warning: 'app::from_pretrained' loads pretrained weights
  // The annotation still counts whatever LoaderFunctions says.
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-MESSAGES-LOADERS: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights
  // CHECK-MESSAGES-FUNCS: :[[@LINE-2]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights
  // CHECK-MESSAGES-DEPTH0: :[[@LINE-3]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights
  // CHECK-MESSAGES-DEPTH1: :[[@LINE-4]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights
}

void scopeTypes(const fs::path &p) {
  {
    app::EmptyInit empty;
    metaguard::from_pretrained<Encoder>(p);
    // CHECK-MESSAGES-TYPES: :[[@LINE-1]]:5: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
  }
  {
    app::OnDevice on(torch::kMeta);
    metaguard::from_pretrained<Encoder>(p);
    // CHECK-MESSAGES-TYPES: :[[@LINE-1]]:5: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
  }
  {
    app::OnDevice on(torch::Device("cpu"));
    metaguard::from_pretrained<Encoder>(p);
  }
}

void scopeFunctionsAndSetters(const fs::path &p) {
  app::on_meta([&] {
    return metaguard::from_pretrained<Encoder>(p);
    // CHECK-MESSAGES-FUNCS: :[[@LINE-1]]:12: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
  });
  metaguard::with_meta_device([&] {
    return metaguard::from_pretrained<Encoder>(p);
    // CHECK-MESSAGES-LOADERS: :[[@LINE-1]]:12: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
    // CHECK-MESSAGES-TYPES: :[[@LINE-2]]:12: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
    // CHECK-MESSAGES-DEPTH0: :[[@LINE-3]]:12: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
    // CHECK-MESSAGES-DEPTH1: :[[@LINE-4]]:12: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
  });
}

void setters(const fs::path &p) {
  app::use_device("meta");
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-MESSAGES-FUNCS: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
}

Encoder inner(const fs::path &p) { return metaguard::from_pretrained<Encoder>(p); }
Encoder outer(const fs::path &p) { return inner(p); }

void callDepth(const fs::path &p) {
  metaguard::MetaDeviceScope scope;
  inner(p);
  // CHECK-MESSAGES-LOADERS: :[[@LINE-1]]:3: warning: 'inner' loads pretrained weights (through 'metaguard::from_pretrained')
  // CHECK-MESSAGES-FUNCS: :[[@LINE-2]]:3: warning: 'inner' loads pretrained weights (through 'metaguard::from_pretrained')
  // CHECK-MESSAGES-DEPTH1: :[[@LINE-3]]:3: warning: 'inner' loads pretrained weights (through 'metaguard::from_pretrained')
  outer(p);
  // CHECK-MESSAGES-LOADERS: :[[@LINE-1]]:3: warning: 'outer' loads pretrained weights (through 'metaguard::from_pretrained')
  // CHECK-MESSAGES-FUNCS: :[[@LINE-2]]:3: warning: 'outer' loads pretrained weights (through 'metaguard::from_pretrained')
}
