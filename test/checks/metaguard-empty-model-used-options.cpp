// RUN: %check_clang_tidy -check-suffixes=DEFAULT %s metaguard-empty-model-used
// RUN: %check_clang_tidy -check-suffixes=LISTS %s metaguard-empty-model-used -- \
// RUN:   -config="{CheckOptions: [{key: metaguard-empty-model-used.WeightGivers, value: '::app::restore'}, {key: metaguard-empty-model-used.NeedsWeights, value: '::metaguard::save_pretrained;export_onnx'}]}"
// RUN: %check_clang_tidy -check-suffixes=SCOPES %s metaguard-empty-model-used -- \
// RUN:   -config="{CheckOptions: [{key: metaguard-empty-model-used.MetaScopeTypes, value: '::app::EmptyInit'}, {key: metaguard-empty-model-used.MetaScopeFunctions, value: '::app::on_meta'}, {key: metaguard-empty-model-used.DefaultDeviceSetters, value: '::app::use_device'}]}"
// RUN: %check_clang_tidy -check-suffixes=LOADERS %s metaguard-empty-model-used -- \
// RUN:   -config="{CheckOptions: [{key: metaguard-empty-model-used.LoaderFunctions, value: 'from_pretrained;::app::fill'}]}"

// The options: what gives weights and what needs them (WeightGivers,
// NeedsWeights, LoaderFunctions), and where the meta device is ambient (the
// options of metaguard-from-pretrained-in-meta-scope, by the same names).

#include <metaguard/metaguard.h>

namespace fs = std::filesystem;
using metaguard::Config;

struct EncoderImpl : torch::nn::Module {
  explicit EncoderImpl(const Config &);
  torch::Tensor forward(torch::Tensor x);
};
TORCH_MODULE(Encoder);

namespace app {
// Defined here, and neither gives weights by its body.
void restore(torch::nn::Module &model, const fs::path &dir) {}
void fill(torch::nn::Module &model, const fs::path &dir) {}
void export_onnx(const torch::nn::Module &model, const fs::path &out);
struct EmptyInit {
  EmptyInit();
  ~EmptyInit();
};
template <class F> decltype(auto) on_meta(F &&f) { return f(); }
void use_device(const char *name);
} // namespace app

Encoder skeleton(const Config &c) {
  auto guard = metaguard::init_empty_weights();
  return Encoder(c);
}

// WeightGivers replaces the list: load_weights gives no weights then,
// restore does.
void givers(const Config &c, const fs::path &dir, torch::Tensor x) {
  auto m = skeleton(c);
  metaguard::load_weights(*m, dir);
  m->forward(x);
  // CHECK-MESSAGES-LISTS: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'm' before it has weights
  auto n = skeleton(c);
  app::restore(*n, dir);
  n->forward(x);
  // CHECK-MESSAGES-DEFAULT: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'n' before it has weights
  // CHECK-MESSAGES-LOADERS: :[[@LINE-2]]:3: warning: running the forward pass of empty model 'n' before it has weights
}

// NeedsWeights: a function of the user's that needs them.
void needs(const Config &c, const fs::path &out) {
  auto m = skeleton(c);
  app::export_onnx(*m, out);
  // CHECK-MESSAGES-LISTS: :[[@LINE-1]]:3: warning: calling 'app::export_onnx' on empty model 'm' before it has weights
  metaguard::save_pretrained(*m, out);
  // CHECK-MESSAGES-DEFAULT: :[[@LINE-1]]:3: warning: calling 'metaguard::save_pretrained' on empty model 'm' before it has weights
  // CHECK-MESSAGES-LISTS: :[[@LINE-2]]:3: warning: calling 'metaguard::save_pretrained' on empty model 'm' before it has weights
  // CHECK-MESSAGES-LOADERS: :[[@LINE-3]]:3: warning: calling 'metaguard::save_pretrained' on empty model 'm' before it has weights
}

// The scopes of the user's.
void scopes(const Config &c, torch::Tensor x) {
  {
    app::EmptyInit init;
    Encoder m(c);
    m->forward(x);
    // CHECK-MESSAGES-SCOPES: :[[@LINE-1]]:5: warning: running the forward pass of empty model 'm' before it has weights
  }
  {
    auto m = app::on_meta([&] { return Encoder(c); });
    m->forward(x);
    // CHECK-MESSAGES-SCOPES: :[[@LINE-1]]:5: warning: running the forward pass of empty model 'm' before it has weights
  }
  {
    app::use_device("meta");
    Encoder m(c);
    app::use_device("cpu");
    m->forward(x);
    // CHECK-MESSAGES-SCOPES: :[[@LINE-1]]:5: warning: running the forward pass of empty model 'm' before it has weights
  }
}

// LoaderFunctions: a loader given the model gives it weights, whatever the
// other lists say.
void loaders(const Config &c, const fs::path &dir, torch::Tensor x) {
  auto m = skeleton(c);
  app::fill(*m, dir);
  m->forward(x);
  // CHECK-MESSAGES-DEFAULT: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'm' before it has weights
  // CHECK-MESSAGES-LISTS: :[[@LINE-2]]:3: warning: running the forward pass of empty model 'm' before it has weights
}
