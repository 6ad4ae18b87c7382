// RUN: %check_clang_tidy -std=c++20 %s metaguard-offloaded-parameter-move
//
// C++20: loader options written with designated initialisers, and the
// std::ranges algorithms and std::jthread.

#include <metaguard/metaguard.h>

#include <algorithm>
#include <stop_token>
#include <thread>

namespace fs = std::filesystem;
using metaguard::DeviceMap;

struct NetImpl : metaguard::PreTrainedModel {
  explicit NetImpl(const metaguard::Config &);
  torch::Tensor forward(torch::Tensor x);
  torch::Tensor weight;
};
TORCH_MODULE(Net);

void designatedDeviceMap(const fs::path &p, const DeviceMap &map) {
  auto m = metaguard::from_pretrained<Net>(p, {.device_map = map});
  m->to(torch::kCUDA);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving dispatched model 'm' with 'to'
  // CHECK-NOTES: :[[@LINE-3]]:12: note: 'm' is loaded by 'metaguard::from_pretrained' with an explicit device map here, which dispatches it
}

void designatedOffloadFolder(const fs::path &p, torch::Tensor x) {
  // An offload folder without a device map is ignored at run time.
  auto m = metaguard::from_pretrained<Net>(p, {.offload_folder = "offload"});
  m->weight.set_data(x);
}

void designatedBoth(const fs::path &p, const DeviceMap &map) {
  Net m = metaguard::from_pretrained<Net>(
      p, {.device_map = map, .offload_folder = "offload"});
  (*m).to(torch::kCUDA);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving dispatched model 'm' with 'to'
  // CHECK-NOTES: :[[@LINE-4]]:11: note: 'm' is loaded by 'metaguard::from_pretrained' with an explicit device map here
}

void designatedDtypeOnly(const fs::path &p) {
  auto m = metaguard::from_pretrained<Net>(p, {.dtype = torch::kHalf});
  m->to(torch::kCUDA); // Not dispatched: fine.
}

void optionsObjectDesignated(const fs::path &p, torch::Tensor x,
                             const DeviceMap &map) {
  metaguard::LoadOptions options{.device_map = map,
                                 .offload_folder = "offload"};
  auto m = metaguard::from_pretrained<Net>(p, options);
  for (auto params = m->parameters(); auto &param : params)
    param.copy_(x);
  // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'copy_' on a parameter of dispatched model 'm'
  // CHECK-NOTES: :[[@LINE-4]]:12: note: 'm' is loaded by 'metaguard::from_pretrained' with an explicit device map here
}

void optionsObjectFolderOnly(const fs::path &p, torch::Tensor x) {
  metaguard::LoadOptions options{.offload_folder = "offload"};
  auto m = metaguard::from_pretrained<Net>(p, options);
  for (auto params = m->parameters(); auto &param : params)
    param.copy_(x); // Not dispatched: the folder alone places nothing.
}

// ---- Maps without a "disk" entry offload nothing, whatever their form -------

void designatedSingleDeviceMap(const fs::path &p) {
  auto m = metaguard::from_pretrained<Net>(
      p, {.device_map = {{"", torch::kCUDA}}});
  m->to(torch::kCPU);
}

void designatedDeviceMapOn(const fs::path &p) {
  auto m = metaguard::from_pretrained<Net>(
      p, {.device_map = DeviceMap::on(torch::kCUDA)});
  m->to(torch::kCPU);
}

void designatedMapWithoutDisk(const fs::path &p) {
  auto m = metaguard::from_pretrained<Net>(
      p, {.device_map = {{"encoder", "cuda:0"}, {"head", torch::kCPU}},
          .offload_folder = "offload"});
  m->to(torch::kCPU);
}

void designatedMapWithDisk(const fs::path &p) {
  auto m = metaguard::from_pretrained<Net>(
      p, {.device_map = {{"encoder", "cpu"}, {"head", "disk"}},
          .offload_folder = "offload"});
  m->to(torch::kCUDA);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving dispatched model 'm' with 'to'
  // CHECK-NOTES: :[[@LINE-5]]:12: note: 'm' is loaded by 'metaguard::from_pretrained' with an explicit device map here
}

void reloadWithANewMapIsTheFix(const fs::path &p, const DeviceMap &map,
                               const DeviceMap &gpu_map) {
  auto m = metaguard::from_pretrained<Net>(p, {.device_map = map});
  m = metaguard::from_pretrained<Net>(p, {.device_map = gpu_map});
  m->to(torch::kHalf); // dtype only.
  auto fresh = metaguard::from_pretrained<Net>(p);
  m = fresh;
  m->to(torch::kCUDA); // m now holds the undispatched model.
}

// ---- std::ranges algorithms and std::jthread --------------------------------

void rangesForEach(Net m, const DeviceMap &map, torch::Tensor x) {
  metaguard::dispatch_model(*m, map);
  std::ranges::for_each(m->parameters(), [](torch::Tensor &p) { p.zero_(); });
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'lambda' changes a parameter of dispatched model 'm' in place (with 'zero_')
  // CHECK-NOTES: :[[@LINE-2]]:65: note: its parameter is changed here with 'zero_', in 'lambda'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
  auto named = m->named_parameters();
  std::ranges::for_each(named, [&](auto &item) { item.value().copy_(x); });
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'lambda' changes a parameter of dispatched model 'm' in place (with 'copy_')
  // CHECK-NOTES: :[[@LINE-2]]:50: note: its parameter is changed here with 'copy_', in 'lambda'
  // CHECK-NOTES: :[[@LINE-9]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
  std::vector<torch::Tensor> scaled;
  std::ranges::transform(m->parameters(), std::back_inserter(scaled),
                         [](const torch::Tensor &p) { return p.mul(2); });
}

void rangesForEachOverModels(std::vector<Net> &models, const DeviceMap &map) {
  metaguard::dispatch_model(*models.front(), map);
  std::ranges::for_each(models, [](Net &net) { net->to(torch::kCUDA); });
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'lambda' moves dispatched model 'models' (with 'to')
  // CHECK-NOTES: :[[@LINE-2]]:48: note: it is moved here with 'to', in 'lambda'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'models' is dispatched here by 'metaguard::dispatch_model'
  std::ranges::for_each(models, [](Net &net) { net->to(torch::kHalf); });
}

void jthreadMoves(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  std::jthread worker([&](std::stop_token) { m->to(torch::kCUDA); });
  // CHECK-NOTES: :[[@LINE-1]]:16: warning: 'lambda' moves dispatched model 'm' (with 'to')
  // CHECK-NOTES: :[[@LINE-2]]:46: note: it is moved here with 'to', in 'lambda'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
}
