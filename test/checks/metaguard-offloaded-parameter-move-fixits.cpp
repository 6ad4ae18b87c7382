// metaguard-offloaded-parameter-move offers no fix-it, not even on a note: the
// right change needs a device map or offload folder the check cannot know.
// --fix-notes leaves the code as it was.
//
// RUN: %check_clang_tidy -fix-notes %s metaguard-offloaded-parameter-move

#include <metaguard/metaguard.h>

using metaguard::Config;
using metaguard::DeviceMap;

struct NetImpl : metaguard::PreTrainedModel {
  explicit NetImpl(const Config &);
  torch::Tensor forward(torch::Tensor x);
};
TORCH_MODULE(Net);

void moveDispatched(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map, "offload");
  m->to(torch::kCUDA);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: moving dispatched model 'm' with 'to'
  // CHECK-FIXES: {{^}}  metaguard::dispatch_model(*m, map, "offload");
  // CHECK-FIXES-NEXT: {{^}}  m->to(torch::kCUDA);
}

void needsRemovedHooks(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map, "offload");
  metaguard::remove_hook_from_module(*m, /*recurse=*/true);
  m->forward(torch::Tensor());
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: '{{.*}}' needs the offloading hooks of 'm'
  // CHECK-FIXES: {{^}}  metaguard::remove_hook_from_module(*m, /*recurse=*/true);
  // CHECK-FIXES-NEXT: {{^}}  m->forward(torch::Tensor());
}
