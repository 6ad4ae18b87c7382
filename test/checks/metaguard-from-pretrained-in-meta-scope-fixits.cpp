// Fix-its of metaguard-from-pretrained-in-meta-scope. None is certain (the user
// may want the empty model, or the load moved out of the scope, or a device
// map), so the only one, from_pretrained<M>(dir) -> from_config<M>(load_config(dir)),
// hangs on a note: --fix leaves the file alone, --fix-notes applies it.
//
// RUN: %check_clang_tidy -fix %s metaguard-from-pretrained-in-meta-scope -check-suffixes=,UNFIXED
// RUN: %check_clang_tidy -fix-notes %s metaguard-from-pretrained-in-meta-scope -check-suffixes=,FIXED
// RUN: %clang_tidy --load=%plugin --config={} --checks=-*,metaguard-from-pretrained-in-meta-scope \
// RUN:   -export-fixes=%t.yaml %s -- -std=c++17 -I %S/Inputs > /dev/null
// RUN: FileCheck -check-prefix=YAML %s < %t.yaml

#include <metaguard/metaguard.h>

namespace fs = std::filesystem;
namespace mg = metaguard;
using metaguard::Config;

struct EncoderImpl : torch::nn::Module {
  explicit EncoderImpl(const Config &);
};
TORCH_MODULE(Encoder);

void qualified(const fs::path &dir) {
  auto guard = metaguard::init_empty_weights();
  auto e = metaguard::from_pretrained<Encoder>(dir);
  // CHECK-MESSAGES: :[[@LINE-1]]:12: warning: 'metaguard::from_pretrained' loads pretrained weights while a meta-device scope is active
  // CHECK-FIXES-UNFIXED: {{^}}  auto e = metaguard::from_pretrained<Encoder>(dir);
  // CHECK-FIXES-FIXED: {{^}}  auto e = metaguard::from_config<Encoder>(metaguard::load_config(dir));
}

void throughAlias(const fs::path &dir) {
  mg::MetaDeviceScope scope;
  auto e = mg::from_pretrained<Encoder>(dir / "encoder");
  // CHECK-MESSAGES: :[[@LINE-1]]:12: warning: 'metaguard::from_pretrained' loads pretrained weights
  // CHECK-FIXES-UNFIXED: {{^}}  auto e = mg::from_pretrained<Encoder>(dir / "encoder");
  // CHECK-FIXES-FIXED: {{^}}  auto e = mg::from_config<Encoder>(mg::load_config(dir / "encoder"));
}

void unqualified(const fs::path &dir) {
  using metaguard::from_pretrained;
  auto e = metaguard::with_meta_device([&] { return from_pretrained<Encoder>(dir); });
  // CHECK-MESSAGES: :[[@LINE-1]]:53: warning: 'metaguard::from_pretrained' loads pretrained weights
  // CHECK-FIXES-FIXED: {{^}}  auto e = metaguard::with_meta_device([&] { return from_config<Encoder>(metaguard::load_config(dir)); });
}

void defaultDevice(const fs::path &dir) {
  metaguard::set_default_device("meta");
  auto e = metaguard::from_pretrained<Encoder>(dir);
  // CHECK-MESSAGES: :[[@LINE-1]]:12: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-FIXES-FIXED: {{^}}  auto e = metaguard::from_config<Encoder>(metaguard::load_config(dir));
}

// No rewrite: the LoadOptions would be dropped.
void withOptions(const fs::path &dir, const metaguard::LoadOptions &options) {
  auto guard = metaguard::init_empty_weights();
  auto e = metaguard::from_pretrained<Encoder>(dir, options);
  // CHECK-MESSAGES: :[[@LINE-1]]:12: warning: 'metaguard::from_pretrained' loads pretrained weights
  // CHECK-FIXES: {{^}}  auto e = metaguard::from_pretrained<Encoder>(dir, options);
}

// No rewrite: spelled in a macro.
#define LOAD_ENCODER(dir) metaguard::from_pretrained<Encoder>(dir)
void inMacro(const fs::path &dir) {
  auto guard = metaguard::init_empty_weights();
  auto e = LOAD_ENCODER(dir);
  // CHECK-MESSAGES: :[[@LINE-1]]:12: warning: 'metaguard::from_pretrained' loads pretrained weights
  // CHECK-FIXES: {{^}}  auto e = LOAD_ENCODER(dir);
}

// No rewrite: a user's own loader has no from_config to go to.
struct Custom {
  static Custom from_pretrained(const fs::path &dir);
};
void userLoader(const fs::path &dir) {
  auto guard = metaguard::init_empty_weights();
  auto c = Custom::from_pretrained(dir);
  // CHECK-MESSAGES: :[[@LINE-1]]:12: warning: 'Custom::from_pretrained' loads pretrained weights
  // CHECK-FIXES: {{^}}  auto c = Custom::from_pretrained(dir);
}

// The note carries the replacements in the exported fixes; the warning has none.
// YAML:      DiagnosticName: metaguard-from-pretrained-in-meta-scope
// YAML-NEXT: DiagnosticMessage:
// YAML-NEXT: Message: '''metaguard::from_pretrained'' loads pretrained weights while a meta-device scope is active
// YAML:      Replacements: []
// YAML:      Notes:
// YAML-NEXT: - Message: 'meta-device scope ''guard'' is active
// YAML:      Replacements: []
// YAML-NEXT: - Message: if an empty model is what you want here, build it from its config
// YAML-NEXT: FilePath:
// YAML-NEXT: FileOffset:
// YAML-NEXT: Replacements:
// YAML-NEXT: - FilePath:
// YAML-NEXT: Offset:
// YAML-NEXT: Length: 15
// YAML-NEXT: ReplacementText: from_config
// YAML:      ReplacementText: 'metaguard::load_config('
// YAML:      ReplacementText: ')'
