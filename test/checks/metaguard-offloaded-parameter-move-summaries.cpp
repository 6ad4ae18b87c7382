// RUN: %check_clang_tidy %s metaguard-offloaded-parameter-move

// Function summaries: what helpers, lambdas and apply() do to a dispatched
// model passed to them, factories at any depth, and has_offloaded_parameters
// branches that make a move safe.

#include <metaguard/metaguard.h>

#include <memory>

namespace fs = std::filesystem;
using metaguard::Config;
using metaguard::DeviceMap;

struct NetImpl : metaguard::PreTrainedModel {
  explicit NetImpl(const Config &);
  torch::Tensor forward(torch::Tensor x);
  torch::Tensor weight;
};
TORCH_MODULE(Net);

bool flag();

// ---- Helpers that move / mutate / strip their argument -----------------------

void toGpu(Net &m) { m->to(torch::kCUDA); }
void toGpuThroughAnother(int, Net &model) { toGpu(model); }
void zeroWeight(NetImpl &net, torch::Tensor z) { net.weight.set_data(z); }
void strip(torch::nn::Module &module) {
  metaguard::remove_hook_from_module(module, true);
}
void looksOnly(const Net &m) { (void)m; }
void movesOnlyWhenNothingIsOffloaded(Net &m) {
  if (!metaguard::has_offloaded_parameters(*m))
    m->to(torch::kCUDA);
}

void helperMovesTheModel(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  toGpu(m);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'toGpu' moves dispatched model 'm' (with 'to'), which leaves its offloaded parameters behind their hooks as meta tensors whose weights can no longer be found; change where it runs through the device map instead: reload it with a new device_map, or call dispatch_model with a new map [metaguard-offloaded-parameter-move]
  // CHECK-NOTES: :[[@LINE-16]]:22: note: it is moved here with 'to', in 'toGpu'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
}

void helperOfHelperMovesIt(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  toGpuThroughAnother(1, m);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'toGpuThroughAnother' moves dispatched model 'm' (with 'to')
  // CHECK-NOTES: :[[@LINE-24]]:22: note: it is moved here with 'to', in 'toGpu'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
}

void helperMutatesAParameter(NetImpl &net, const DeviceMap &map,
                             torch::Tensor z) {
  metaguard::dispatch_model(net, map);
  zeroWeight(net, z);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'zeroWeight' changes a parameter of dispatched model 'net' in place (with 'set_data'), behind its offloading hook
  // CHECK-NOTES: :[[@LINE-31]]:50: note: its parameter is changed here with 'set_data', in 'zeroWeight'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'net' is dispatched here by 'metaguard::dispatch_model'
}

void helperStripsThenSave(Net m, const DeviceMap &map, const fs::path &dir) {
  metaguard::dispatch_model(*m, map);
  strip(*m);
  metaguard::save_pretrained(*m, dir);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::save_pretrained' needs the offloading hooks of 'm', but they were removed on a path to here
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'strip' removes the hooks of 'm' here
  // CHECK-NOTES: :[[@LINE-39]]:3: note: its hooks are removed here with 'metaguard::remove_hook_from_module', in 'strip'
  // CHECK-NOTES: :[[@LINE-6]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
}

void helpersThatAreFine(Net m, const DeviceMap &map) {
  toGpu(m); // Before the dispatch.
  metaguard::dispatch_model(*m, map);
  looksOnly(m);
  movesOnlyWhenNothingIsOffloaded(m);
}

void helperOnAnotherModel(Net m, Net other, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  toGpu(other);
}

// Recursion: the effect is found through the cycle.
void moveAfterCountdown(Net &m, int n);
void countdown(Net &m, int n) {
  if (n > 0)
    moveAfterCountdown(m, n - 1);
}
void moveAfterCountdown(Net &m, int n) {
  if (n == 0)
    m->to(torch::kCUDA);
  else
    countdown(m, n);
}

void recursiveHelper(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  countdown(m, 3);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'countdown' moves dispatched model 'm' (with 'to')
  // CHECK-NOTES: :[[@LINE-9]]:5: note: it is moved here with 'to', in 'moveAfterCountdown'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
}

// ---- Factories at any depth -------------------------------------------------

Net f3(const fs::path &p, const DeviceMap &map) {
  metaguard::LoadOptions options;
  options.device_map = map;
  return metaguard::from_pretrained<Net>(p, options);
}
Net f2(const fs::path &p, const DeviceMap &map) { return f3(p, map); }
Net f1(const fs::path &p, const DeviceMap &map) { return f2(p, map); }
Net f0(const fs::path &p, const DeviceMap &map) { return f1(p, map); }
Net fm1(const fs::path &p, const DeviceMap &map) { return f0(p, map); }

void deepFactory(const fs::path &p, const DeviceMap &map) {
  Net m = fm1(p, map);
  m->to(torch::kCUDA);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving dispatched model 'm' with 'to'
  // CHECK-NOTES: :[[@LINE-3]]:11: note: 'm' comes from 'fm1', which returns a dispatched model
  // CHECK-NOTES: :[[@LINE-7]]:59: note: 'fm1' gets it from 'f0' here
  // CHECK-NOTES: :[[@LINE-9]]:58: note: 'f0' gets it from 'f1' here
  // CHECK-NOTES: :[[@LINE-11]]:58: note: 'f1' gets it from 'f2' here
  // CHECK-NOTES: :[[@LINE-13]]:58: note: 'f2' gets it from 'f3' here
  // CHECK-NOTES: :[[@LINE-16]]:10: note: 'f3' loads it with 'metaguard::from_pretrained' and an explicit device map here, which dispatches it
}

// ---- Lambdas and apply() ------------------------------------------------------

void lambdaCapturesAndMoves(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  auto moveIt = [&] { m->to(torch::kCUDA); };
  auto lookAtIt = [&] { (void)m; };
  lookAtIt();
  moveIt();
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'lambda' moves dispatched model 'm' (with 'to')
  // CHECK-NOTES: :[[@LINE-5]]:23: note: it is moved here with 'to', in 'lambda'
  // CHECK-NOTES: :[[@LINE-7]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
}

void lambdaCapturedByCopy(Net m, const DeviceMap &map) {
  auto moveIt = [m]() mutable { m->to(torch::kCUDA); };
  moveIt(); // Before the dispatch.
  metaguard::dispatch_model(*m, map);
  moveIt();
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'lambda' moves dispatched model 'm' (with 'to')
  // CHECK-NOTES: :[[@LINE-5]]:33: note: it is moved here with 'to', in 'lambda'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
}

void lambdaOnItsOwnModel(Net m, const Config &c, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  auto fresh = [&] {
    Net other(c);
    other->to(torch::kCUDA);
  };
  fresh();
}

void applyMutatesParameters(Net m, const DeviceMap &map, torch::Tensor z) {
  metaguard::dispatch_model(*m, map);
  m->apply([&](torch::nn::Module &module) {
    for (auto &p : module.parameters())
      p.set_data(z);
  });
  // CHECK-NOTES: :[[@LINE-4]]:3: warning: 'apply' changes a parameter of dispatched model 'm' in place (with 'set_data'), behind its offloading hook
  // CHECK-NOTES: :[[@LINE-3]]:7: note: its parameter is changed here with 'set_data', in 'lambda'
  // CHECK-NOTES: :[[@LINE-7]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
  m->apply([](torch::nn::Module &module) { (void)module; });
}

// ---- has_offloaded_parameters makes a move safe --------------------------------

void guardedMoves(Net m, const DeviceMap &map, torch::Tensor z) {
  metaguard::dispatch_model(*m, map);
  if (!metaguard::has_offloaded_parameters(*m))
    m->to(torch::kCUDA);
  if (metaguard::has_offloaded_parameters(*m)) {
    // Keep it where the map put it.
  } else {
    m->weight.set_data(z);
  }
  if (flag() && !metaguard::has_offloaded_parameters(*m))
    toGpu(m);
  if (flag() || !metaguard::has_offloaded_parameters(*m))
    m->to(torch::kCUDA);
  // CHECK-NOTES: :[[@LINE-1]]:5: warning: moving dispatched model 'm' with 'to'
  // CHECK-NOTES: :[[@LINE-13]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
}

void earlyReturnWhenOffloaded(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  if (metaguard::has_offloaded_parameters(*m))
    return;
  m->to(torch::kCUDA);
}

void storedQuery(Net m, const DeviceMap &map, torch::Tensor z) {
  metaguard::dispatch_model(*m, map);
  const bool offloaded = metaguard::has_offloaded_parameters(*m);
  if (!offloaded)
    m->to(torch::kCUDA);
  auto anyOnDisk = metaguard::has_offloaded_parameters(*m);
  if (anyOnDisk)
    return;
  m->weight.set_data(z);
}

void storedQueryChangedLater(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  bool offloaded = metaguard::has_offloaded_parameters(*m);
  offloaded = flag();
  if (!offloaded)
    m->to(torch::kCUDA);
  // CHECK-NOTES: :[[@LINE-1]]:5: warning: moving dispatched model 'm' with 'to'
  // CHECK-NOTES: :[[@LINE-6]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
}

void storedQueryOnAnotherModel(Net m, Net other, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  const bool offloaded = metaguard::has_offloaded_parameters(*other);
  if (!offloaded)
    m->to(torch::kCUDA);
  // CHECK-NOTES: :[[@LINE-1]]:5: warning: moving dispatched model 'm' with 'to'
  // CHECK-NOTES: :[[@LINE-5]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
}

void queryOnAnotherModel(Net m, Net other, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  if (!metaguard::has_offloaded_parameters(*other))
    m->to(torch::kCUDA);
  // CHECK-NOTES: :[[@LINE-1]]:5: warning: moving dispatched model 'm' with 'to'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
}

// ---- Options built by helpers ---------------------------------------------------

metaguard::LoadOptions offloadOptions(const fs::path &folder) {
  metaguard::LoadOptions options;
  options.device_map = {{"encoder", "disk"}, {"", torch::kCPU}};
  options.offload_folder = folder;
  return options;
}
metaguard::LoadOptions offloadOptionsThroughAnother(const fs::path &folder) {
  return offloadOptions(folder);
}
metaguard::LoadOptions gpuOnlyOptions() {
  metaguard::LoadOptions options;
  options.device_map = DeviceMap::on(torch::kCUDA);
  return options;
}

void optionsFromHelpers(const fs::path &p) {
  auto m = metaguard::from_pretrained<Net>(p, offloadOptionsThroughAnother(p));
  m->to(torch::kCUDA);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving dispatched model 'm' with 'to'
  // CHECK-NOTES: :[[@LINE-3]]:12: note: 'm' is loaded by 'metaguard::from_pretrained' with an explicit device map here, which dispatches it
  auto g = metaguard::from_pretrained<Net>(p, gpuOnlyOptions());
  g->to(torch::kCPU); // A single-device map offloads nothing.
}

// ---- Dispatched models in standard containers -------------------------------------
// Elements are not told apart: an element stands for its container.

void dispatchedModelsInAVector(const fs::path &p, const DeviceMap &map) {
  metaguard::LoadOptions options;
  options.device_map = map;
  std::vector<Net> models;
  models.push_back(metaguard::from_pretrained<Net>(p, options));
  models[0]->to(torch::kCUDA);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving dispatched model 'models' with 'to'
  // CHECK-NOTES: :[[@LINE-3]]:20: note: 'models' is loaded by 'metaguard::from_pretrained' with an explicit device map here, which dispatches it
  for (auto &m : models)
    m->to(torch::kCPU);
  // CHECK-NOTES: :[[@LINE-1]]:5: warning: moving dispatched model 'models' with 'to'
  // CHECK-NOTES: :[[@LINE-7]]:20: note: 'models' is loaded by 'metaguard::from_pretrained' with an explicit device map here, which dispatches it
}

void dispatchedModelInAMap(std::map<std::string, Net> &byName,
                           const DeviceMap &map) {
  metaguard::dispatch_model(*byName.at("encoder"), map);
  toGpu(byName.at("encoder"));
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'toGpu' moves dispatched model 'byName' (with 'to')
  // CHECK-NOTES: :{{[0-9]+}}:22: note: it is moved here with 'to', in 'toGpu'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'byName' is dispatched here by 'metaguard::dispatch_model'
}

void containerNeverDispatched(std::vector<Net> &models, const Config &c) {
  models.push_back(Net(c));
  models[0]->to(torch::kCUDA);
}

// ---- Calls through function pointers and std::function set once ---------------

void looksOnly2(Net &m) { (void)m; }

void throughPointers(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  void (*mover)(Net &) = toGpu;
  mover(m);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'toGpu' moves dispatched model 'm' (with 'to')
  // CHECK-NOTES: :{{[0-9]+}}:22: note: it is moved here with 'to', in 'toGpu'
  // CHECK-NOTES: :[[@LINE-5]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
  std::function<void(Net &)> later = [](Net &model) { model->to(torch::kCUDA); };
  later(m);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'lambda' moves dispatched model 'm' (with 'to')
  // CHECK-NOTES: :[[@LINE-3]]:55: note: it is moved here with 'to', in 'lambda'
  // CHECK-NOTES: :[[@LINE-10]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
  void (*either)(Net &) = toGpu;
  if (flag())
    either = looksOnly2;
  either(m); // Two targets: not followed.
}

// ---- Virtual calls: every override visible in the translation unit -----------

struct Placer {
  virtual ~Placer() = default;
  virtual void place(Net &m) { (void)m; }
};
struct GpuPlacer : Placer {
  void place(Net &m) override { m->to(torch::kCUDA); }
};

void virtualCall(Placer &placer, Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  placer.place(m);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'GpuPlacer::place' moves dispatched model 'm' (with 'to')
  // CHECK-NOTES: :[[@LINE-7]]:33: note: it is moved here with 'to', in 'GpuPlacer::place'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
  placer.Placer::place(m); // Qualified: not virtual.
}
