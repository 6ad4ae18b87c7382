// RUN: %check_clang_tidy %s metaguard-offloaded-parameter-move

#include <metaguard/metaguard.h>

#include <memory>

namespace fs = std::filesystem;
using metaguard::Config;
using metaguard::DeviceMap;

struct NetImpl : metaguard::PreTrainedModel {
  explicit NetImpl(const Config &);
  torch::Tensor forward(torch::Tensor x);
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(Net);

struct BlockImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x);
  torch::Tensor weight;
  torch::Tensor bias;
};
TORCH_MODULE(Block);

struct BigImpl : metaguard::PreTrainedModel {
  explicit BigImpl(const Config &);
  torch::Tensor forward(torch::Tensor x);
  Block enc{nullptr};
  Block head{nullptr};
};
TORCH_MODULE(Big);

bool flag();

// ---- 1. Moving a dispatched model -----------------------------------------

void moveThroughHolder(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map, "offload");
  m->to(torch::kCUDA);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving dispatched model 'm' with 'to' leaves its offloaded parameters behind their hooks as meta tensors whose weights can no longer be found; change where it runs through the device map instead: reload it with a new device_map, or call dispatch_model with a new map [metaguard-offloaded-parameter-move]
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
}

void moveModuleObject(NetImpl &net, const DeviceMap &map) {
  metaguard::dispatch_model(net, map);
  net.to(torch::Device("cuda:0"));
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving dispatched model 'net' with 'to'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'net' is dispatched here by 'metaguard::dispatch_model'
}

void moveThroughDeref(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m.ptr(), map);
  (*m).to(torch::kCUDA, torch::kHalf);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving dispatched model 'm' with 'to'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'm' is dispatched here
}

void dispatchThroughGet(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m.get(), map);
  m->to(torch::kCPU);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving dispatched model 'm' with 'to'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'm' is dispatched here
}

void sharedPtrModel(const Config &cfg, const DeviceMap &map) {
  auto model = std::make_shared<NetImpl>(cfg);
  metaguard::dispatch_model(*model, map);
  model->to(torch::kCUDA);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving dispatched model 'model' with 'to'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'model' is dispatched here
}

void dtypeOnlyIsFine(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  m->to(torch::kHalf); // Like accelerate: a dtype change keeps the hooks.
}

void moveBeforeDispatchIsFine(Net m, const DeviceMap &map) {
  m->to(torch::kCUDA);
  metaguard::dispatch_model(*m, map);
}

void neverDispatched(Net m) { m->to(torch::kCUDA); }

void dispatchedOnOneBranch(Net m, const DeviceMap &map) {
  if (flag())
    metaguard::dispatch_model(*m, map);
  m->to(torch::kCUDA);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving dispatched model 'm' with 'to'
  // CHECK-NOTES: :[[@LINE-3]]:5: note: 'm' is dispatched here
}

void exclusiveBranches(Net m, const DeviceMap &map) {
  if (flag())
    metaguard::dispatch_model(*m, map);
  else
    m->to(torch::kCUDA);
}

void loopBackEdge(Net m, const DeviceMap &map) {
  for (int i = 0; i < 3; ++i) {
    m->to(torch::kCUDA);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: moving dispatched model 'm' with 'to'
    // CHECK-NOTES: :[[@LINE+1]]:5: note: 'm' is dispatched here
    metaguard::dispatch_model(*m, map);
  }
}

void earlyReturnBeforeDispatch(Net m, const DeviceMap &map) {
  if (flag()) {
    m->to(torch::kCUDA);
    return;
  }
  metaguard::dispatch_model(*m, map);
}

void newModelInTheVariable(Net m, const Config &cfg, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  m = Net(cfg); // A fresh, undispatched model.
  m->to(torch::kCUDA);
}

void resetEndsTheModel(const Config &cfg, const DeviceMap &map) {
  auto model = std::make_shared<NetImpl>(cfg);
  metaguard::dispatch_model(*model, map);
  model.reset();
  model = std::make_shared<NetImpl>(cfg);
  model->to(torch::kCUDA);
}

void referenceAlias(Net m, const DeviceMap &map) {
  auto &module = *m;
  metaguard::dispatch_model(module, map);
  m->to(torch::kCUDA);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving dispatched model 'm' with 'to'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'm' is dispatched here
}

// ---- Dispatched by a loader whose options visibly place it ------------------

void loaderWithDeviceMap(const fs::path &p, const DeviceMap &map) {
  metaguard::LoadOptions options;
  options.device_map = map;
  auto m = metaguard::from_pretrained<Net>(p, options);
  m->to(torch::kCUDA);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving dispatched model 'm' with 'to'
  // CHECK-NOTES: :[[@LINE-3]]:12: note: 'm' is loaded by 'metaguard::from_pretrained' with an explicit device map here, which dispatches it
}

void loaderWithOffloadFolder(const fs::path &p) {
  metaguard::LoadOptions options;
  options.offload_folder = "offload";
  Net m = metaguard::from_pretrained<Net>(p, options);
  m->to(torch::kCUDA); // No device map: the runtime ignores the folder.
}

void loaderWithOffloadFolderAndMap(const fs::path &p) {
  metaguard::LoadOptions options;
  options.offload_folder = "offload";
  options.device_map = {{"", "cpu"}, {"head", "disk"}};
  Net m = metaguard::from_pretrained<Net>(p, options);
  m->to(torch::kCUDA);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving dispatched model 'm' with 'to'
  // CHECK-NOTES: :[[@LINE-3]]:11: note: 'm' is loaded by 'metaguard::from_pretrained' with an explicit device map here, which dispatches it
}

void loaderWithMapWithoutDisk(const fs::path &p) {
  metaguard::LoadOptions options;
  options.device_map = {{"", "cpu"}, {"head", torch::kCUDA}};
  Net m = metaguard::from_pretrained<Net>(p, options);
  m->to(torch::kCUDA); // Everything is in memory: no hooks.
}

void loaderWithoutPlacement(const fs::path &p) {
  auto m = metaguard::from_pretrained<Net>(p);
  m->to(torch::kCUDA); // Loaded onto one device, no hooks: fine.
}

void deviceMapSetAfterTheLoad(const fs::path &p, const DeviceMap &map) {
  metaguard::LoadOptions options;
  auto m = metaguard::from_pretrained<Net>(p, options);
  options.device_map = map;
  m->to(torch::kCUDA);
}

void assignedFromLoader(const fs::path &p, const DeviceMap &map) {
  Net m{nullptr};
  metaguard::LoadOptions options;
  options.device_map = map;
  m = metaguard::from_pretrained<Net>(p, options);
  m->to(torch::kCUDA);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving dispatched model 'm' with 'to'
  // CHECK-NOTES: :[[@LINE-3]]:7: note: 'm' is loaded by 'metaguard::from_pretrained' with an explicit device map here
}

// ---- Submodules -----------------------------------------------------------

void moveSubmoduleOfDispatched(Big big, const DeviceMap &map) {
  metaguard::dispatch_model(*big, map);
  big->enc->to(torch::kCUDA);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving 'big.enc' of dispatched model 'big' with 'to'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'big' is dispatched here
}

void moveModelWithDispatchedSubmodule(Big big, const DeviceMap &map) {
  metaguard::dispatch_model(*big->enc, map);
  big->to(torch::kCUDA);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving dispatched model 'big' with 'to'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'big.enc' is dispatched here
}

void moveSiblingOfDispatchedSubmodule(Big big, const DeviceMap &map) {
  metaguard::dispatch_model(*big->enc, map);
  big->head->to(torch::kCUDA);
}

struct Runner {
  Net net{nullptr};
  void start(const DeviceMap &map) {
    metaguard::dispatch_model(*net, map);
    net->to(torch::kCUDA);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: moving dispatched model 'net' with 'to'
    // CHECK-NOTES: :[[@LINE-3]]:5: note: 'net' is dispatched here
  }
};

// ---- 2. Replacing or moving parameters by hand -----------------------------

void setDataByName(Net m, const DeviceMap &map, torch::Tensor x) {
  metaguard::dispatch_model(*m, map);
  m->named_parameters()["fc.weight"].set_data(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'set_data' on a parameter of dispatched model 'm' goes behind its offloading hook: the hook loads the offloaded weights into the tensor it registered, so the parameter is cut off from them or the change is silently lost; to read or change a copy, use load_offloaded_parameter, and to move parameters, reload the model or call dispatch_model with a new device map [metaguard-offloaded-parameter-move]
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'm' is dispatched here
}

void setDataThroughFind(Net m, const DeviceMap &map, torch::Tensor x) {
  metaguard::dispatch_model(*m, map);
  if (auto *w = m->named_parameters().find("fc.weight"))
    w->set_data(x);
  // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'set_data' on a parameter of dispatched model 'm'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'm' is dispatched here
}

void moveEveryParameter(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  for (auto &p : m->parameters())
    p.set_data(p.to(torch::kCUDA));
  // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'set_data' on a parameter of dispatched model 'm'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'm' is dispatched here
}

void copyIntoNamedItems(Net m, const DeviceMap &map, torch::Tensor x) {
  metaguard::dispatch_model(*m, map);
  for (auto &item : m->named_parameters())
    item.value().copy_(x);
  // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'copy_' on a parameter of dispatched model 'm'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'm' is dispatched here
}

void copyThroughItemArrow(Net m, const DeviceMap &map, torch::Tensor x) {
  metaguard::dispatch_model(*m, map);
  for (auto item : m->named_parameters())
    item->copy_(x);
  // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'copy_' on a parameter of dispatched model 'm'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'm' is dispatched here
}

void submoduleMember(Big big, const DeviceMap &map, torch::Tensor x) {
  metaguard::dispatch_model(*big, map);
  big->enc->weight.set_data(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'set_data' on a parameter of 'big.enc' of dispatched model 'big'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'big' is dispatched here
}

void assignThroughData(Big big, const DeviceMap &map, torch::Tensor x) {
  metaguard::dispatch_model(*big, map);
  big->enc->weight.data() = x;
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: assigning to a parameter of 'big.enc' of dispatched model 'big'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'big' is dispatched here
}

void replaceMemberTensor(Big big, const DeviceMap &map) {
  metaguard::dispatch_model(*big, map);
  big->head->bias = torch::zeros({4});
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: assigning to a parameter of 'big.head' of dispatched model 'big'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'big' is dispatched here
}

void inPlaceAdd(Big big, const DeviceMap &map, torch::Tensor x) {
  metaguard::dispatch_model(*big, map);
  big->enc->weight += x;
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: assigning to a parameter of 'big.enc' of dispatched model 'big'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'big' is dispatched here
}

void reRegister(Big big, const DeviceMap &map, torch::Tensor x) {
  metaguard::dispatch_model(*big, map);
  big->enc->register_parameter("weight", x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: re-registering a parameter of 'big.enc' of dispatched model 'big'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'big' is dispatched here
}

void localHandleSharesTheTensor(Net m, const DeviceMap &map, torch::Tensor x) {
  metaguard::dispatch_model(*m, map);
  auto w = m->named_parameters()["fc.weight"];
  w.copy_(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'copy_' on a parameter of dispatched model 'm'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'm' is dispatched here
}

void parameterList(Net m, const DeviceMap &map, torch::Tensor x) {
  metaguard::dispatch_model(*m, map);
  std::vector<torch::Tensor> params = m->parameters();
  params[0].set_data(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'set_data' on a parameter of dispatched model 'm'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'm' is dispatched here
}

void copiesAreFine(Net m, const DeviceMap &map, torch::Tensor x) {
  metaguard::dispatch_model(*m, map);
  auto w = metaguard::load_offloaded_parameter(*m, "fc.weight");
  w.copy_(x);
  w.set_data(w.to(torch::kCUDA));
  auto moved = m->named_parameters()["fc.weight"].to(torch::kCUDA);
  moved.copy_(x);
  auto cloned = m->named_parameters()["fc.weight"].clone();
  cloned.set_data(x);
}

void readingIsFine(Big big, const DeviceMap &map) {
  metaguard::dispatch_model(*big, map);
  auto total = big->enc->weight.sum();
  auto view = big->enc->weight.data().sum();
  bool offloaded = big->enc->weight.is_meta();
  for (const auto &p : big->parameters())
    total = p.sum();
}

void rebindingALocalHandleIsFine(Big big, const DeviceMap &map) {
  metaguard::dispatch_model(*big, map);
  torch::Tensor w = big->enc->weight;
  w = torch::zeros({4});
}

void parametersChangedBeforeDispatch(Big big, const DeviceMap &map,
                                     torch::Tensor x) {
  big->enc->weight.set_data(x);
  big->head->bias = x;
  metaguard::dispatch_model(*big, map);
}

void parametersOfAnotherModel(Big big, Big other, const DeviceMap &map,
                              torch::Tensor x) {
  metaguard::dispatch_model(*big, map);
  other->enc->weight.set_data(x);
}

void parameterOfDispatchedSubmoduleOnly(Big big, const DeviceMap &map,
                                        torch::Tensor x) {
  metaguard::dispatch_model(*big->enc, map);
  big->head->weight.set_data(x); // Not under the dispatched submodule.
  big->enc->weight.set_data(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'set_data' on a parameter of 'big.enc' of dispatched model 'big'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'big.enc' is dispatched here
}

// ---- 3. Removing hooks, then needing them ----------------------------------

void removeThenSave(Net m, const DeviceMap &map, const fs::path &out) {
  metaguard::dispatch_model(*m, map);
  metaguard::remove_hook_from_module(*m, /*recurse=*/true);
  metaguard::save_pretrained(*m, out);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::save_pretrained' needs the offloading hooks of 'm', but they were removed on a path to here and the model was not dispatched again; its offloaded parameters are meta tensors with no way back to their weights, and dispatching it again cannot find them either: reload the model with its device map, or read what you need with load_offloaded_parameter before removing the hooks [metaguard-offloaded-parameter-move]
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'metaguard::remove_hook_from_module' removes the hooks of 'm' here
  // CHECK-NOTES: :[[@LINE-5]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
}

void removeThenVerify(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  metaguard::remove_hook_from_module(*m);
  metaguard::verify_dispatch(*m);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::verify_dispatch' needs the offloading hooks of 'm'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'metaguard::remove_hook_from_module' removes the hooks of 'm' here
  // CHECK-NOTES: :[[@LINE-5]]:3: note: 'm' is dispatched here
}

void removeThenLoadParameter(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  metaguard::remove_hook_from_module(*m, true);
  auto w = metaguard::load_offloaded_parameter(*m, "fc.weight");
  // CHECK-NOTES: :[[@LINE-1]]:12: warning: 'metaguard::load_offloaded_parameter' needs the offloading hooks of 'm'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'metaguard::remove_hook_from_module' removes the hooks of 'm' here
  // CHECK-NOTES: :[[@LINE-5]]:3: note: 'm' is dispatched here
}

void removeThenForward(Net m, const DeviceMap &map, torch::Tensor x) {
  metaguard::dispatch_model(*m, map);
  metaguard::remove_hook_from_module(*m, true);
  auto y = m(x);
  // CHECK-NOTES: :[[@LINE-1]]:12: warning: 'forward' needs the offloading hooks of 'm'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'metaguard::remove_hook_from_module' removes the hooks of 'm' here
  // CHECK-NOTES: :[[@LINE-5]]:3: note: 'm' is dispatched here
  auto z = m->forward(x);
  // CHECK-NOTES: :[[@LINE-1]]:12: warning: 'forward' needs the offloading hooks of 'm'
  // CHECK-NOTES: :[[@LINE-7]]:3: note: 'metaguard::remove_hook_from_module' removes the hooks of 'm' here
  // CHECK-NOTES: :[[@LINE-9]]:3: note: 'm' is dispatched here
}

void reDispatchAfterRemoval(Net m, const DeviceMap &map, const fs::path &out) {
  metaguard::dispatch_model(*m, map);
  metaguard::remove_hook_from_module(*m, true);
  // Dispatching reads the offloaded weights through the hooks: it cannot.
  metaguard::dispatch_model(*m, map);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::dispatch_model' needs the offloading hooks of 'm'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'metaguard::remove_hook_from_module' removes the hooks of 'm' here
  // CHECK-NOTES: :[[@LINE-6]]:3: note: 'm' is dispatched here
  metaguard::save_pretrained(*m, out); // The dispatch above is the mistake.
}

void reDispatchInMemoryAfterRemoval(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  metaguard::remove_hook_from_module(*m, true);
  metaguard::dispatch_model(*m, DeviceMap::on(torch::kCPU));
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::dispatch_model' needs the offloading hooks of 'm'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'metaguard::remove_hook_from_module' removes the hooks of 'm' here
  // CHECK-NOTES: :[[@LINE-5]]:3: note: 'm' is dispatched here
}

void reloadAfterRemoval(Net m, const DeviceMap &map, const fs::path &p,
                        const fs::path &out) {
  metaguard::dispatch_model(*m, map);
  metaguard::remove_hook_from_module(*m, true);
  metaguard::LoadOptions options;
  options.device_map = map;
  m = metaguard::from_pretrained<Net>(p, options);
  metaguard::save_pretrained(*m, out);
}

void removedOnOneBranch(Net m, const DeviceMap &map, const fs::path &out) {
  metaguard::dispatch_model(*m, map);
  if (flag())
    metaguard::remove_hook_from_module(*m, true);
  metaguard::save_pretrained(*m, out);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::save_pretrained' needs the offloading hooks of 'm'
  // CHECK-NOTES: :[[@LINE-3]]:5: note: 'metaguard::remove_hook_from_module' removes the hooks of 'm' here
  // CHECK-NOTES: :[[@LINE-6]]:3: note: 'm' is dispatched here
}

void reDispatchedOnOneBranchOnly(Net m, const DeviceMap &map,
                                 const fs::path &out) {
  metaguard::dispatch_model(*m, map);
  metaguard::remove_hook_from_module(*m, true);
  if (flag())
    metaguard::dispatch_model(*m, map);
  // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'metaguard::dispatch_model' needs the offloading hooks of 'm'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'metaguard::remove_hook_from_module' removes the hooks of 'm' here
  // CHECK-NOTES: :[[@LINE-6]]:3: note: 'm' is dispatched here
  metaguard::verify_dispatch(*m);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::verify_dispatch' needs the offloading hooks of 'm'
  // CHECK-NOTES: :[[@LINE-8]]:3: note: 'metaguard::remove_hook_from_module' removes the hooks of 'm' here
  // CHECK-NOTES: :[[@LINE-10]]:3: note: 'm' is dispatched here
}

void removeFromOneSubmodule(Big big, const DeviceMap &map, torch::Tensor x) {
  metaguard::dispatch_model(*big, map);
  metaguard::remove_hook_from_module(*big->enc);
  big->head->forward(x); // Its hook is still there.
  big->enc->forward(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'forward' needs the offloading hooks of 'big.enc'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'metaguard::remove_hook_from_module' removes the hooks of 'big.enc' here
  // CHECK-NOTES: :[[@LINE-6]]:3: note: 'big' is dispatched here
}

void removeWithoutDispatch(Net m, const fs::path &out) {
  // Nothing in this function dispatched m: nothing to lose here.
  metaguard::remove_hook_from_module(*m, true);
  metaguard::save_pretrained(*m, out);
}

void saveBeforeRemoval(Net m, const DeviceMap &map, const fs::path &out) {
  metaguard::dispatch_model(*m, map);
  metaguard::save_pretrained(*m, out);
  metaguard::remove_hook_from_module(*m, true);
}

void removalInALoop(Net m, const DeviceMap &map, const fs::path &out) {
  metaguard::dispatch_model(*m, map);
  for (int i = 0; i < 2; ++i) {
    metaguard::save_pretrained(*m, out);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'metaguard::save_pretrained' needs the offloading hooks of 'm'
    // CHECK-NOTES: :[[@LINE+2]]:5: note: 'metaguard::remove_hook_from_module' removes the hooks of 'm' here
    // CHECK-NOTES: :[[@LINE-5]]:3: note: 'm' is dispatched here
    metaguard::remove_hook_from_module(*m, true);
  }
}

// ---- Functions of this file that return a dispatched model -----------------

Net loadPlaced(const fs::path &p, const DeviceMap &map) {
  metaguard::LoadOptions options;
  options.device_map = map;
  return metaguard::from_pretrained<Net>(p, options);
}

Net dispatched(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  return m;
}

Net loadPlacedTwice(const fs::path &p, const DeviceMap &map) {
  return loadPlaced(p, map);
}

Net loadOnCpu(const fs::path &p) {
  metaguard::LoadOptions options;
  options.device_map = {{"", torch::kCPU}}; // One device: nothing offloaded.
  return metaguard::from_pretrained<Net>(p, options);
}

void modelFromAFactory(const fs::path &p, const DeviceMap &map) {
  auto m = loadPlaced(p, map);
  m->to(torch::kCUDA);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving dispatched model 'm' with 'to'
  // CHECK-NOTES: :[[@LINE-3]]:12: note: 'm' comes from 'loadPlaced', which returns a dispatched model
  // CHECK-NOTES: :[[@LINE-23]]:10: note: 'loadPlaced' loads it with 'metaguard::from_pretrained' and an explicit device map here, which dispatches it
}

void parameterOfAFactoryResult(Net m, const DeviceMap &map, torch::Tensor x) {
  Net d = dispatched(m, map);
  d->named_parameters()["fc.weight"].set_data(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'set_data' on a parameter of dispatched model 'd'
  // CHECK-NOTES: :[[@LINE-3]]:11: note: 'd' comes from 'dispatched', which returns a dispatched model
  // CHECK-NOTES: :[[@LINE-27]]:3: note: 'dispatched' dispatches it here with 'metaguard::dispatch_model'
}

void factoryOfAFactory(const fs::path &p, const DeviceMap &map,
                       const fs::path &out) {
  Net m{nullptr};
  m = loadPlacedTwice(p, map);
  metaguard::remove_hook_from_module(*m, true);
  metaguard::save_pretrained(*m, out);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::save_pretrained' needs the offloading hooks of 'm'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'metaguard::remove_hook_from_module' removes the hooks of 'm' here
  // CHECK-NOTES: :[[@LINE-5]]:7: note: 'm' comes from 'loadPlacedTwice', which returns a dispatched model
  // CHECK-NOTES: :[[@LINE-34]]:10: note: 'loadPlacedTwice' gets it from 'loadPlaced' here
  // CHECK-NOTES: :[[@LINE-44]]:10: note: 'loadPlaced' loads it with 'metaguard::from_pretrained' and an explicit device map here, which dispatches it
}

void factoryWithoutOffload(const fs::path &p) {
  auto m = loadOnCpu(p);
  m->to(torch::kCUDA);
}

// ---- Single-device maps offload nothing ------------------------------------

void backInMemory(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map, "offload");
  metaguard::dispatch_model(*m, {{"", torch::kCPU}}); // All in memory again.
  m->to(torch::kCUDA);
}

void backInMemoryWithSeveralDevices(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map, "offload");
  metaguard::dispatch_model(*m, {{"encoder", "cuda:0"}, {"", torch::kCPU}});
  m->to(torch::kCUDA);
}

void placedOnOneDevice(Net m) {
  metaguard::dispatch_model(*m, DeviceMap::on("cuda:0"));
  m->to(torch::kCPU);
}

void everythingOnDisk(Net m) {
  metaguard::dispatch_model(*m, DeviceMap::on("disk"), "offload");
  m->to(torch::kCUDA);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving dispatched model 'm' with 'to'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
}

void loadedOnOneDevice(const fs::path &p) {
  metaguard::LoadOptions options;
  options.device_map = DeviceMap::on(torch::kCPU);
  auto m = metaguard::from_pretrained<Net>(p, options);
  m->to(torch::kCUDA);
}

// ---- Module lists: an element stands for the list ---------------------------

struct StackImpl : metaguard::PreTrainedModel {
  torch::Tensor forward(torch::Tensor x);
  torch::nn::ModuleList blocks{nullptr};
};
TORCH_MODULE(Stack);

void moduleListElements(Stack model, const DeviceMap &map, torch::Tensor x) {
  metaguard::dispatch_model(*model, map);
  model->blocks[0]->as<BlockImpl>()->weight.set_data(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'set_data' on a parameter of 'model.blocks' of dispatched model 'model'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'model' is dispatched here
  metaguard::remove_hook_from_module(*model->blocks[1], true);
  auto w = metaguard::load_offloaded_parameter(*model, "blocks.1.weight");
  // CHECK-NOTES: :[[@LINE-1]]:12: warning: 'metaguard::load_offloaded_parameter' needs the offloading hooks of 'model'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'metaguard::remove_hook_from_module' removes the hooks of 'model.blocks' here
  // CHECK-NOTES: :[[@LINE-8]]:3: note: 'model' is dispatched here
}

// ---- Macros, templates, lambdas ---------------------------------------------

#define TO_GPU(model) (model)->to(torch::kCUDA)

void moveInMacro(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  TO_GPU(m);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving dispatched model 'm' with 'to'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'm' is dispatched here
}

#define DISPATCH(model, map) metaguard::dispatch_model(*(model), (map))

void dispatchInMacro(Net m, const DeviceMap &map) {
  DISPATCH(m, map);
  m->to(torch::kCUDA);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving dispatched model 'm' with 'to'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'm' is dispatched here
}

template <class Model> void dispatchAndMove(Model m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  m->to(torch::kCUDA);
  // One warning for the two instantiations below.
  // CHECK-NOTES: :[[@LINE-2]]:3: warning: moving dispatched model 'm' with 'to'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'm' is dispatched here
}

template <class Model> void dispatchOnlyTemplate(Model m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  m->to(torch::kHalf);
}

void instantiate(Net n, Big b, const DeviceMap &map) {
  dispatchAndMove(n, map);
  dispatchAndMove(b, map);
  dispatchOnlyTemplate(n, map);
}

void insideLambda(Net m, const DeviceMap &map) {
  auto run = [&] {
    metaguard::dispatch_model(*m, map);
    m->to(torch::kCUDA);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: moving dispatched model 'm' with 'to'
    // CHECK-NOTES: :[[@LINE-3]]:5: note: 'm' is dispatched here
  };
  run();
}
