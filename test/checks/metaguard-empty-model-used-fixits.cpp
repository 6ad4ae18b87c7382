// Fix-its of metaguard-empty-model-used. One rewrite is certain: a model this
// function builds from a config it read with metaguard::load_config(dir),
// used where the meta device is no longer ambient, gets
// `metaguard::load_weights(<model>, dir);` before its first use. It hangs on
// a note: --fix leaves the file alone, --fix-notes applies it.
//
// RUN: %check_clang_tidy -fix %s metaguard-empty-model-used -check-suffixes=,UNFIXED
// RUN: %check_clang_tidy -fix-notes %s metaguard-empty-model-used -check-suffixes=,FIXED
// RUN: %clang_tidy --load=%plugin --config={} --checks=-*,metaguard-empty-model-used \
// RUN:   -export-fixes=%t.yaml %s -- -std=c++17 -I %S/Inputs > /dev/null
// RUN: FileCheck -check-prefix=YAML %s < %t.yaml

#include <metaguard/metaguard.h>

namespace fs = std::filesystem;
using metaguard::Config;

struct EncoderImpl : torch::nn::Module {
  explicit EncoderImpl(const Config &);
  torch::Tensor forward(torch::Tensor x);
};
TORCH_MODULE(Encoder);

bool flag();

void configVariable(const fs::path &dir, const fs::path &out) {
  const Config config = metaguard::load_config(dir);
  Encoder m{nullptr};
  {
    auto guard = metaguard::init_empty_weights();
    m = metaguard::from_config<Encoder>(config);
  }
  metaguard::save_pretrained(*m, out);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: calling 'metaguard::save_pretrained' on empty model 'm' before it has weights
  // CHECK-FIXES-UNFIXED: {{^}}  metaguard::save_pretrained(*m, out);
  // CHECK-FIXES-FIXED: {{^}}  metaguard::load_weights(*m, dir);
  // CHECK-FIXES-FIXED-NEXT: {{^}}  metaguard::save_pretrained(*m, out);
}

// The config read in place; two uses, one load (before the first).
void configInPlace(const fs::path &dir, torch::Tensor x) {
  metaguard::set_default_device("meta");
  Encoder m(metaguard::load_config(dir));
  metaguard::reset_default_device();
  if (flag())
    m->forward(x);
  // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: running the forward pass of empty model 'm' before it has weights
  m->forward(x);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'm' before it has weights
  // CHECK-FIXES-FIXED: {{^}}  metaguard::reset_default_device();
  // CHECK-FIXES-FIXED-NEXT: {{^}}  metaguard::load_weights(*m, dir);
  // CHECK-FIXES-FIXED-NEXT: {{^}}  if (flag())
  // CHECK-FIXES-FIXED-NEXT: {{^}}    m->forward(x);
}

// A module object, not a holder: no `*`.
void moduleObject(const fs::path &checkpoint, torch::Tensor x) {
  const auto config = metaguard::load_config(checkpoint);
  metaguard::set_default_device("meta");
  EncoderImpl impl(config);
  metaguard::reset_default_device();
  impl.forward(x);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'impl' before it has weights
  // CHECK-FIXES-FIXED: {{^}}  metaguard::load_weights(impl, checkpoint);
  // CHECK-FIXES-FIXED-NEXT: {{^}}  impl.forward(x);
}

// No rewrite: the meta device is still ambient, where a load loads nothing.
void stillMeta(const fs::path &weights, torch::Tensor x) {
  auto guard = metaguard::init_empty_weights();
  Encoder m(metaguard::load_config(weights));
  m->forward(x);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'm' before it has weights
  // CHECK-FIXES: {{^}}  Encoder m(metaguard::load_config(weights));
  // CHECK-FIXES-NEXT: {{^}}  m->forward(x);
}

// No rewrite: where the weights are is not known.
void configFromCaller(const Config &config, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Encoder(config); });
  m->forward(x);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'm' before it has weights
  // CHECK-FIXES: {{^}}  auto m = metaguard::with_meta_device([&] { return Encoder(config); });
  // CHECK-FIXES-NEXT: {{^}}  m->forward(x);
}

// No rewrite: the folder is an expression, not a variable the use sees.
void folderExpression(const fs::path &root, torch::Tensor x) {
  metaguard::set_default_device("meta");
  Encoder m(metaguard::load_config(root / "encoder"));
  metaguard::reset_default_device();
  m->forward(x);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'm' before it has weights
  // CHECK-FIXES: {{^}}  metaguard::reset_default_device();
  // CHECK-FIXES-NEXT: {{^}}  m->forward(x);
}

// The note carries the insertion in the exported fixes; the warning has none.
// YAML:      DiagnosticName: metaguard-empty-model-used
// YAML-NEXT: DiagnosticMessage:
// YAML-NEXT: Message: 'calling ''metaguard::save_pretrained'' on empty model ''m'' before it has weights
// YAML:      Replacements: []
// YAML:      Notes:
// YAML:      - Message: load its weights before using it
// YAML-NEXT: FilePath:
// YAML-NEXT: FileOffset:
// YAML-NEXT: Replacements:
// YAML-NEXT: - FilePath:
// YAML-NEXT: Offset:
// YAML-NEXT: Length: 0
// YAML-NEXT: ReplacementText: "metaguard::load_weights(*m, dir);\n  "
