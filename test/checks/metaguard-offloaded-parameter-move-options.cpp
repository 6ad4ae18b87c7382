// RUN: %check_clang_tidy -check-suffixes=DISPATCH %s metaguard-offloaded-parameter-move -- \
// RUN:   -config="{CheckOptions: [{key: metaguard-offloaded-parameter-move.DispatchFunctions, value: '::app::place;shard'}]}"
// RUN: %check_clang_tidy -check-suffixes=LOADERS %s metaguard-offloaded-parameter-move -- \
// RUN:   -config="{CheckOptions: [{key: metaguard-offloaded-parameter-move.LoaderFunctions, value: 'load_model'}]}"
// RUN: %check_clang_tidy -check-suffixes=HOOKS %s metaguard-offloaded-parameter-move -- \
// RUN:   -config="{CheckOptions: [{key: metaguard-offloaded-parameter-move.HookRemovers, value: '::app::strip'}, {key: metaguard-offloaded-parameter-move.NeedsHooks, value: '::app::export_model'}]}"
// RUN: %check_clang_tidy -check-suffixes=MUTATORS %s metaguard-offloaded-parameter-move -- \
// RUN:   -config="{CheckOptions: [{key: metaguard-offloaded-parameter-move.ParameterMutators, value: 'fill_;zero_'}]}"
// RUN: %check_clang_tidy -check-suffixes=IGNORED %s metaguard-offloaded-parameter-move -- \
// RUN:   -config="{CheckOptions: [{key: metaguard-offloaded-parameter-move.IgnoredInPlaceMethods, value: 'requires_grad_;fill_'}]}"
// RUN: %check_clang_tidy -check-suffixes=DEFAULT %s metaguard-offloaded-parameter-move
//
// storeOptions: every option is listed with its default, and a set value
// round-trips.
// RUN: %clang_tidy --load=%plugin --checks=-*,metaguard-offloaded-parameter-move --config={} --dump-config \
// RUN:   | %flat_config | FileCheck %s -check-prefix=DUMP
// DUMP-DAG: metaguard-offloaded-parameter-move.DispatchFunctions: '::metaguard::dispatch_model'
// DUMP-DAG: metaguard-offloaded-parameter-move.LoaderFunctions: from_pretrained
// DUMP-DAG: metaguard-offloaded-parameter-move.HookRemovers: '::metaguard::remove_hook_from_module'
// DUMP-DAG: metaguard-offloaded-parameter-move.NeedsHooks: '::metaguard::save_pretrained;::metaguard::load_offloaded_parameter;::metaguard::verify_dispatch'
// DUMP-DAG: metaguard-offloaded-parameter-move.ParameterMutators: 'set_data;copy_;data'
// DUMP-DAG: metaguard-offloaded-parameter-move.IgnoredInPlaceMethods: 'requires_grad_;share_memory_;rename_;detach_'
// RUN: %clang_tidy --load=%plugin --checks=-*,metaguard-offloaded-parameter-move \
// RUN:   --config="{CheckOptions: [{key: metaguard-offloaded-parameter-move.ParameterMutators, value: 'fill_'}]}" --dump-config \
// RUN:   | %flat_config | FileCheck %s -check-prefix=SET
// SET: metaguard-offloaded-parameter-move.ParameterMutators: fill_

#include <metaguard/metaguard.h>

namespace fs = std::filesystem;
using metaguard::DeviceMap;

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x);
  torch::Tensor weight;
};
TORCH_MODULE(Net);

namespace app {
void place(torch::nn::Module &model, const DeviceMap &map);
void strip(torch::nn::Module &model);
void export_model(const torch::nn::Module &model, const fs::path &dir);
Net load_model(const fs::path &dir, const metaguard::LoadOptions &options);
} // namespace app
namespace cluster {
void shard(torch::nn::Module &model, int ways); // Bare name: any namespace.
}

// DispatchFunctions replaces the default: app::place and any `shard`
// dispatch, metaguard::dispatch_model no longer does.
void ownDispatcher(Net m, const DeviceMap &map) {
  app::place(*m, map);
  m->to(torch::kCUDA);
  // CHECK-MESSAGES-DISPATCH: :[[@LINE-1]]:3: warning: moving dispatched model 'm' with 'to'
}

void bareDispatcherName(Net m) {
  cluster::shard(*m, 2);
  m->to(torch::kCUDA);
  // CHECK-MESSAGES-DISPATCH: :[[@LINE-1]]:3: warning: moving dispatched model 'm' with 'to'
}

void defaultDispatcher(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  m->to(torch::kCUDA);
  // CHECK-MESSAGES-LOADERS: :[[@LINE-1]]:3: warning: moving dispatched model 'm' with 'to'
  // CHECK-MESSAGES-HOOKS: :[[@LINE-2]]:3: warning: moving dispatched model 'm' with 'to'
  // CHECK-MESSAGES-MUTATORS: :[[@LINE-3]]:3: warning: moving dispatched model 'm' with 'to'
  // CHECK-MESSAGES-DEFAULT: :[[@LINE-4]]:3: warning: moving dispatched model 'm' with 'to'
  // CHECK-MESSAGES-IGNORED: :[[@LINE-5]]:3: warning: moving dispatched model 'm' with 'to'
}

// LoaderFunctions: app::load_model dispatches when its options place the
// model; metaguard::from_pretrained still counts through its
// loads_weights annotation.
void ownLoader(const fs::path &p, const DeviceMap &map) {
  metaguard::LoadOptions options;
  options.device_map = map;
  auto m = app::load_model(p, options);
  m->to(torch::kCUDA);
  // CHECK-MESSAGES-LOADERS: :[[@LINE-1]]:3: warning: moving dispatched model 'm' with 'to'
  auto n = metaguard::from_pretrained<Net>(p, options);
  n->to(torch::kCUDA);
  // CHECK-MESSAGES-LOADERS: :[[@LINE-1]]:3: warning: moving dispatched model 'n' with 'to'
  // CHECK-MESSAGES-DISPATCH: :[[@LINE-2]]:3: warning: moving dispatched model 'n' with 'to'
  // CHECK-MESSAGES-HOOKS: :[[@LINE-3]]:3: warning: moving dispatched model 'n' with 'to'
  // CHECK-MESSAGES-MUTATORS: :[[@LINE-4]]:3: warning: moving dispatched model 'n' with 'to'
  // CHECK-MESSAGES-DEFAULT: :[[@LINE-5]]:3: warning: moving dispatched model 'n' with 'to'
  // CHECK-MESSAGES-IGNORED: :[[@LINE-6]]:3: warning: moving dispatched model 'n' with 'to'
}

// HookRemovers / NeedsHooks replace the defaults.
void ownHookFunctions(Net m, const DeviceMap &map, const fs::path &out) {
  metaguard::dispatch_model(*m, map);
  app::strip(*m);
  app::export_model(*m, out);
  // CHECK-MESSAGES-HOOKS: :[[@LINE-1]]:3: warning: 'app::export_model' needs the offloading hooks of 'm'
}

void defaultHookFunctions(Net m, const DeviceMap &map, const fs::path &out) {
  metaguard::dispatch_model(*m, map);
  metaguard::remove_hook_from_module(*m, true);
  metaguard::save_pretrained(*m, out);
  // CHECK-MESSAGES-LOADERS: :[[@LINE-1]]:3: warning: 'metaguard::save_pretrained' needs the offloading hooks of 'm'
  // CHECK-MESSAGES-MUTATORS: :[[@LINE-2]]:3: warning: 'metaguard::save_pretrained' needs the offloading hooks of 'm'
  // CHECK-MESSAGES-DEFAULT: :[[@LINE-3]]:3: warning: 'metaguard::save_pretrained' needs the offloading hooks of 'm'
  // CHECK-MESSAGES-IGNORED: :[[@LINE-4]]:3: warning: 'metaguard::save_pretrained' needs the offloading hooks of 'm'
}

// ParameterMutators replaces the listed methods (set_data is no longer
// flagged); in-place methods (a trailing underscore) are flagged whatever it
// says, except those IgnoredInPlaceMethods names.
void ownMutators(Net m, const DeviceMap &map, torch::Tensor x) {
  metaguard::dispatch_model(*m, map);
  m->weight.fill_(0.5);
  // CHECK-MESSAGES-LOADERS: :[[@LINE-1]]:3: warning: 'fill_' on a parameter of dispatched model 'm'
  // CHECK-MESSAGES-HOOKS: :[[@LINE-2]]:3: warning: 'fill_' on a parameter of dispatched model 'm'
  // CHECK-MESSAGES-MUTATORS: :[[@LINE-3]]:3: warning: 'fill_' on a parameter of dispatched model 'm'
  // CHECK-MESSAGES-DEFAULT: :[[@LINE-4]]:3: warning: 'fill_' on a parameter of dispatched model 'm'
  m->weight.zero_();
  // CHECK-MESSAGES-LOADERS: :[[@LINE-1]]:3: warning: 'zero_' on a parameter of dispatched model 'm'
  // CHECK-MESSAGES-HOOKS: :[[@LINE-2]]:3: warning: 'zero_' on a parameter of dispatched model 'm'
  // CHECK-MESSAGES-MUTATORS: :[[@LINE-3]]:3: warning: 'zero_' on a parameter of dispatched model 'm'
  // CHECK-MESSAGES-DEFAULT: :[[@LINE-4]]:3: warning: 'zero_' on a parameter of dispatched model 'm'
  // CHECK-MESSAGES-IGNORED: :[[@LINE-5]]:3: warning: 'zero_' on a parameter of dispatched model 'm'
  m->weight.set_data(x);
  // CHECK-MESSAGES-LOADERS: :[[@LINE-1]]:3: warning: 'set_data' on a parameter of dispatched model 'm'
  // CHECK-MESSAGES-HOOKS: :[[@LINE-2]]:3: warning: 'set_data' on a parameter of dispatched model 'm'
  // CHECK-MESSAGES-DEFAULT: :[[@LINE-3]]:3: warning: 'set_data' on a parameter of dispatched model 'm'
  // CHECK-MESSAGES-IGNORED: :[[@LINE-4]]:3: warning: 'set_data' on a parameter of dispatched model 'm'
  m->weight.data().copy_(x);
  // CHECK-MESSAGES-LOADERS: :[[@LINE-1]]:3: warning: 'copy_' on a parameter of dispatched model 'm'
  // CHECK-MESSAGES-HOOKS: :[[@LINE-2]]:3: warning: 'copy_' on a parameter of dispatched model 'm'
  // CHECK-MESSAGES-DEFAULT: :[[@LINE-3]]:3: warning: 'copy_' on a parameter of dispatched model 'm'
  // CHECK-MESSAGES-IGNORED: :[[@LINE-4]]:3: warning: 'copy_' on a parameter of dispatched model 'm'
  m->weight.requires_grad_(false); // Ignored by default.
}
