// RUN: %check_clang_tidy %s metaguard-offloaded-parameter-move
//
// The shapes application code takes: parameters walked by standard
// algorithms and lambdas, threads, every way of iterating
// named_parameters(), structured bindings, function templates, exceptions
// as early exits, and messages that name what the code wrote.

#include <metaguard/metaguard.h>

#include <algorithm>
#include <future>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;
using metaguard::Config;
using metaguard::DeviceMap;

struct NetImpl : metaguard::PreTrainedModel {
  explicit NetImpl(const Config &);
  torch::Tensor forward(torch::Tensor x);
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(Net);

// ---- Algorithms over parameters --------------------------------------------

void forEachWritesElements(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  auto params = m->parameters();
  std::for_each(params.begin(), params.end(),
                [](torch::Tensor &p) { p.mul_(0.5); });
  // CHECK-NOTES: :[[@LINE-2]]:3: warning: 'lambda' changes a parameter of dispatched model 'm' in place (with 'mul_'), behind its offloading hook
  // CHECK-NOTES: :[[@LINE-2]]:40: note: its parameter is changed here with 'mul_', in 'lambda'
  // CHECK-NOTES: :[[@LINE-6]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
}

void forEachReadsElements(Net m, const DeviceMap &map,
                          std::vector<torch::Tensor> &out) {
  metaguard::dispatch_model(*m, map);
  auto params = m->parameters();
  std::for_each(params.begin(), params.end(),
                [&](const torch::Tensor &p) { out.push_back(p.mul(2)); });
}

void forEachGenericOverNamed(Net m, const DeviceMap &map, torch::Tensor x) {
  metaguard::dispatch_model(*m, map);
  auto named = m->named_parameters();
  std::for_each(named.begin(), named.end(),
                [&](auto &item) { item.value().set_data(x); });
  // CHECK-NOTES: :[[@LINE-2]]:3: warning: 'lambda' changes a parameter of dispatched model 'm' in place (with 'set_data')
  // CHECK-NOTES: :[[@LINE-2]]:35: note: its parameter is changed here with 'set_data', in 'lambda'
  // CHECK-NOTES: :[[@LINE-6]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
}

void forEachCapturesTheModel(Net m, const DeviceMap &map,
                             const std::vector<std::string> &names) {
  metaguard::dispatch_model(*m, map);
  std::for_each(names.begin(), names.end(), [&](const std::string &name) {
    m->named_parameters()[name].zero_();
  });
  // CHECK-NOTES: :[[@LINE-3]]:3: warning: 'lambda' changes a parameter of dispatched model 'm' in place (with 'zero_')
  // CHECK-NOTES: :[[@LINE-3]]:5: note: its parameter is changed here with 'zero_', in 'lambda'
  // CHECK-NOTES: :[[@LINE-6]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
  std::for_each(names.begin(), names.end(),
                [&](const std::string &) { m->to(torch::kCUDA); });
  // CHECK-NOTES: :[[@LINE-2]]:3: warning: 'lambda' moves dispatched model 'm' (with 'to')
  // CHECK-NOTES: :[[@LINE-2]]:44: note: it is moved here with 'to', in 'lambda'
  // CHECK-NOTES: :[[@LINE-11]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
}

void forEachOverCopies(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  // Copies made with clone(): writing them is fine.
  std::vector<torch::Tensor> copies;
  for (auto &p : m->parameters())
    copies.push_back(p.clone());
  std::for_each(copies.begin(), copies.end(),
                [](torch::Tensor &p) { p.mul_(0.5); });
}

void forEachNotDispatched(Net m) {
  auto params = m->parameters();
  std::for_each(params.begin(), params.end(),
                [](torch::Tensor &p) { p.mul_(0.5); });
}

void forEachGuarded(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  auto params = m->parameters();
  if (!metaguard::has_offloaded_parameters(*m))
    std::for_each(params.begin(), params.end(),
                  [](torch::Tensor &p) { p.mul_(0.5); });
}

void transformInPlace(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  auto params = m->parameters();
  std::vector<torch::Tensor> out(params.size());
  std::transform(params.begin(), params.end(), out.begin(),
                 [](torch::Tensor &p) { return p.mul_(2); });
  // CHECK-NOTES: :[[@LINE-2]]:3: warning: 'lambda' changes a parameter of dispatched model 'm' in place (with 'mul_')
  // CHECK-NOTES: :[[@LINE-2]]:48: note: its parameter is changed here with 'mul_', in 'lambda'
  // CHECK-NOTES: :[[@LINE-7]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
  // Out of place: new tensors in `out`, the parameters untouched.
  std::transform(params.begin(), params.end(), out.begin(),
                 [](const torch::Tensor &p) { return p.mul(2); });
}

void transformSecondRange(Net m, const DeviceMap &map,
                          std::vector<torch::Tensor> &deltas) {
  metaguard::dispatch_model(*m, map);
  auto params = m->parameters();
  std::vector<torch::Tensor> out(deltas.size());
  std::transform(deltas.begin(), deltas.end(), params.begin(), out.begin(),
                 [](const torch::Tensor &d, torch::Tensor &p) {
                   return p.add_(d);
                 });
  // CHECK-NOTES: :[[@LINE-4]]:3: warning: 'lambda' changes a parameter of dispatched model 'm' in place (with 'add_')
  // CHECK-NOTES: :[[@LINE-3]]:27: note: its parameter is changed here with 'add_', in 'lambda'
  // CHECK-NOTES: :[[@LINE-9]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
}

// A function that writes the tensor it is given, called on a parameter
// directly or by an algorithm.
void halve(torch::Tensor &p) { p.mul_(0.5); }

void helpersTakingTensors(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  halve(m->named_parameters()["fc.weight"]);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'halve' changes a parameter of dispatched model 'm' in place (with 'mul_')
  // CHECK-NOTES: :[[@LINE-6]]:32: note: its parameter is changed here with 'mul_', in 'halve'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
  auto params = m->parameters();
  std::for_each(params.begin(), params.end(), halve);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'halve' changes a parameter of dispatched model 'm' in place (with 'mul_')
  // CHECK-NOTES: :[[@LINE-11]]:32: note: its parameter is changed here with 'mul_', in 'halve'
  // CHECK-NOTES: :[[@LINE-9]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
  torch::Tensor copy = metaguard::load_offloaded_parameter(*m, "fc.weight");
  halve(copy); // A copy.
}

// An optimizer built from a parameter list the function is given.
void trainOn(std::vector<torch::Tensor> params) {
  torch::optim::Adam opt(params);
  opt.step();
}

void optimizerInAHelper(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  trainOn(m->parameters());
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'trainOn' changes a parameter of dispatched model 'm' in place (with 'step')
  // CHECK-NOTES: :[[@LINE-7]]:3: note: its parameter is changed here with 'step', in 'trainOn'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
  std::vector<torch::Tensor> copies;
  for (auto &p : m->parameters())
    copies.push_back(p.clone());
  trainOn(copies);
}

// ---- Threads ------------------------------------------------------------------

void threadMoves(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  std::thread worker([&] { m->to(torch::kCUDA); });
  // CHECK-NOTES: :[[@LINE-1]]:15: warning: 'lambda' moves dispatched model 'm' (with 'to')
  // CHECK-NOTES: :[[@LINE-2]]:28: note: it is moved here with 'to', in 'lambda'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
  worker.join();
}

void asyncWrites(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  auto done = std::async(std::launch::async, [m]() mutable {
    for (auto &p : m->parameters())
      p.zero_();
  });
  // CHECK-NOTES: :[[@LINE-4]]:15: warning: 'lambda' changes a parameter of dispatched model 'm' in place (with 'zero_')
  // CHECK-NOTES: :[[@LINE-3]]:7: note: its parameter is changed here with 'zero_', in 'lambda'
  // CHECK-NOTES: :[[@LINE-7]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
  done.wait();
}

void moveToGpu(Net &m) { m->to(torch::kCUDA); }

void threadPools(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  std::vector<std::thread> workers;
  workers.emplace_back([&] { m->to(torch::kCUDA); });
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'lambda' moves dispatched model 'm' (with 'to')
  // CHECK-NOTES: :[[@LINE-2]]:30: note: it is moved here with 'to', in 'lambda'
  // CHECK-NOTES: :[[@LINE-5]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
  std::thread other(moveToGpu, std::ref(m));
  // CHECK-NOTES: :[[@LINE-1]]:15: warning: 'moveToGpu' moves dispatched model 'm' (with 'to')
  // CHECK-NOTES: :[[@LINE-11]]:26: note: it is moved here with 'to', in 'moveToGpu'
  // CHECK-NOTES: :[[@LINE-9]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
  other.join();
  for (auto &w : workers)
    w.join();
}

void threadsThatOnlyRun(Net m, Net plain, const DeviceMap &map,
                        torch::Tensor x) {
  metaguard::dispatch_model(*m, map);
  // A forward pass through the hooks is what a dispatched model is for.
  std::thread inference([&] { auto y = m->forward(x); });
  inference.join();
  // A model that was never dispatched may move.
  std::thread mover([&] { plain->to(torch::kCUDA); });
  mover.join();
}

// ---- Every way to walk the parameters ------------------------------------------

void pairsOfNamedParameters(Net m, const DeviceMap &map, torch::Tensor x) {
  metaguard::dispatch_model(*m, map);
  for (auto &[name, p] : m->named_parameters().pairs())
    p.mul_(0.5);
  // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'mul_' on a parameter of dispatched model 'm' goes behind its offloading hook
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
  for (auto &kv : m->named_parameters().pairs())
    kv.second.zero_();
  // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'zero_' on a parameter of dispatched model 'm' goes behind its offloading hook
  // CHECK-NOTES: :[[@LINE-8]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
  for (const auto &item : m->named_parameters().items())
    item.value().set_data(x);
  // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'set_data' on a parameter of dispatched model 'm' goes behind its offloading hook
  // CHECK-NOTES: :[[@LINE-12]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
}

void pairsReadOnly(Net m, const DeviceMap &map,
                   std::map<std::string, torch::Tensor> &snapshot) {
  metaguard::dispatch_model(*m, map);
  for (auto &[name, p] : m->named_parameters().pairs())
    snapshot[name] = p.clone();
  for (const auto &item : m->named_parameters().items())
    snapshot[item.key()] = item.value().mul(2);
}

void pairsAfterUndispatch(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  metaguard::dispatch_model(*m, DeviceMap::on(torch::kCPU));
  for (auto &[name, p] : m->named_parameters().pairs())
    p.mul_(0.5); // Everything is in memory again.
}

void bindingsOverAMapOfModels(std::map<std::string, Net> &models,
                              const DeviceMap &map) {
  for (auto &[name, net] : models)
    metaguard::dispatch_model(*net, map);
  for (auto &[name, net] : models)
    net->to(torch::kCUDA);
  // CHECK-NOTES: :[[@LINE-1]]:5: warning: moving dispatched model 'models' with 'to'
  // CHECK-NOTES: :[[@LINE-4]]:5: note: 'models' is dispatched here by 'metaguard::dispatch_model'
  for (auto &[name, net] : models)
    net->to(torch::kHalf); // dtype only.
  auto &[first, net] = *models.begin();
  net->to(torch::kCPU);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving dispatched model 'models' with 'to'
  // CHECK-NOTES: :[[@LINE-10]]:5: note: 'models' is dispatched here by 'metaguard::dispatch_model'
}

void bindingsNotDispatched(std::map<std::string, Net> &models) {
  for (auto &[name, net] : models)
    net->to(torch::kCUDA);
}

// ---- Messages name the object written: a map element is the element ---------

void elementsOfAMap(std::map<std::string, Net> &models, const DeviceMap &map) {
  metaguard::dispatch_model(*models.at("encoder"), map);
  for (auto &entry : models)
    entry.second->to(torch::kCUDA);
  // CHECK-NOTES: :[[@LINE-1]]:5: warning: moving dispatched model 'models' with 'to'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'models' is dispatched here by 'metaguard::dispatch_model'
  auto it = models.find("encoder");
  it->second->fc->to(torch::kCPU);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving 'models.fc' of dispatched model 'models' with 'to'
  // CHECK-NOTES: :[[@LINE-8]]:3: note: 'models' is dispatched here by 'metaguard::dispatch_model'
  metaguard::remove_hook_from_module(*it->second, true);
  metaguard::save_pretrained(*models.at("decoder"), "out");
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::save_pretrained' needs the offloading hooks of 'models', but they were removed on a path to here
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'metaguard::remove_hook_from_module' removes the hooks of 'models' here
  // CHECK-NOTES: :[[@LINE-13]]:3: note: 'models' is dispatched here by 'metaguard::dispatch_model'
}

void elementOfAPair(std::pair<std::string, Net> &named, const DeviceMap &map) {
  metaguard::dispatch_model(*named.second, map);
  named.second->fc->to(torch::kCUDA);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving 'named.fc' of dispatched model 'named' with 'to'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'named' is dispatched here by 'metaguard::dispatch_model'
}

// ---- Templates ------------------------------------------------------------------

template <class M> void stripAndSave(M &model, const fs::path &out) {
  metaguard::remove_hook_from_module(*model, true);
  metaguard::save_pretrained(*model, out);
}

template <class M> void saveThenStrip(M &model, const fs::path &out) {
  metaguard::save_pretrained(*model, out);
  metaguard::remove_hook_from_module(*model, true);
}

template <class M> void exportModel(M &model, const fs::path &out) {
  metaguard::save_pretrained(*model, out);
}

template <class M>
void stripAndReload(M &model, const fs::path &dir, const fs::path &out) {
  metaguard::remove_hook_from_module(*model, true);
  model = metaguard::from_pretrained<M>(dir);
  metaguard::save_pretrained(*model, out);
}

void templatesOnDispatchedModels(Net m, const DeviceMap &map,
                                 const fs::path &dir) {
  metaguard::dispatch_model(*m, map);
  stripAndSave(m, "out");
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'stripAndSave' removes the offloading hooks of dispatched model 'm' and then needs them (with 'metaguard::save_pretrained'); its offloaded parameters are meta tensors with no way back to their weights
  // CHECK-NOTES: :[[@LINE-24]]:3: note: its hooks are needed here by 'metaguard::save_pretrained', in 'stripAndSave'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
  stripAndReload(m, dir, "out");
}

void templatesInTheRightOrder(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  saveThenStrip(m, "out");
}

void templateNeedsHooksRemovedBefore(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  metaguard::remove_hook_from_module(*m, true);
  exportModel(m, "out");
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'exportModel' needs the offloading hooks of 'm', but they were removed on a path to here
  // CHECK-NOTES: :[[@LINE-30]]:3: note: its hooks are needed here by 'metaguard::save_pretrained', in 'exportModel'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'metaguard::remove_hook_from_module' removes the hooks of 'm' here
  // CHECK-NOTES: :[[@LINE-6]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
}

struct Predictor {
  torch::Tensor run(Net &model, torch::Tensor x) { return model->forward(x); }
};

void forwardInAHelper(Net m, const DeviceMap &map, Predictor &predictor,
                      torch::Tensor x) {
  metaguard::dispatch_model(*m, map);
  auto before = predictor.run(m, x);
  metaguard::remove_hook_from_module(*m, true);
  auto after = predictor.run(m, x);
  // CHECK-NOTES: :[[@LINE-1]]:16: warning: 'Predictor::run' needs the offloading hooks of 'm', but they were removed on a path to here
  // CHECK-NOTES: :[[@LINE-10]]:59: note: its hooks are needed here by 'forward', in 'Predictor::run'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'metaguard::remove_hook_from_module' removes the hooks of 'm' here
  // CHECK-NOTES: :[[@LINE-7]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
}

void templatesOnModelsNeverDispatched(Net m) {
  stripAndSave(m, "out");
  exportModel(m, "out");
}

struct Exporter {
  template <class M> void save(M &model) {
    metaguard::remove_hook_from_module(*model, true);
    metaguard::save_pretrained(*model, "out");
  }
};

void memberTemplate(Net m, const DeviceMap &map, Exporter &exporter) {
  metaguard::dispatch_model(*m, map);
  exporter.save(m);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'Exporter::save' removes the offloading hooks of dispatched model 'm' and then needs them (with 'metaguard::save_pretrained')
  // CHECK-NOTES: :[[@LINE-8]]:5: note: its hooks are needed here by 'metaguard::save_pretrained', in 'Exporter::save'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
}

void genericLambdaStripsAndSaves(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  auto finish = [](auto &model) {
    metaguard::remove_hook_from_module(*model, true);
    metaguard::save_pretrained(*model, "out");
  };
  finish(m);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'lambda' removes the offloading hooks of dispatched model 'm' and then needs them (with 'metaguard::save_pretrained')
  // CHECK-NOTES: :[[@LINE-4]]:5: note: its hooks are needed here by 'metaguard::save_pretrained', in 'lambda'
  // CHECK-NOTES: :[[@LINE-8]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
}

// ---- Exceptions as early exits ---------------------------------------------------

[[noreturn]] void fail(const std::string &why);

void throwGuards(Net m, const DeviceMap &map, const std::string &name) {
  metaguard::dispatch_model(*m, map);
  if (metaguard::has_offloaded_parameters(*m))
    throw std::runtime_error("model " + name + " is offloaded");
  m->to(torch::kCUDA);
  for (auto &p : m->parameters())
    p.mul_(0.5);
}

void throwGuardInABlock(Net m, const DeviceMap &map, const std::string &name) {
  metaguard::dispatch_model(*m, map);
  if (metaguard::has_offloaded_parameters(*m)) {
    auto message = "model " + name + " is offloaded";
    throw std::invalid_argument(message);
  }
  m->to(torch::kCUDA);
}

void throwGuardInTry(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  try {
    if (metaguard::has_offloaded_parameters(*m))
      throw std::runtime_error(std::string("offloaded"));
    m->to(torch::kCUDA);
  } catch (const std::exception &) {
  }
}

void throwGuardsThatDoNotGuard(Net m, const DeviceMap &map, bool strict) {
  metaguard::dispatch_model(*m, map);
  if (!metaguard::has_offloaded_parameters(*m))
    throw std::runtime_error(std::string("nothing offloaded"));
  m->to(torch::kCUDA);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving dispatched model 'm' with 'to'
  // CHECK-NOTES: :[[@LINE-5]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
  if (strict) {
    if (metaguard::has_offloaded_parameters(*m))
      throw std::runtime_error(std::string("offloaded"));
  }
  m->to(torch::kCPU);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving dispatched model 'm' with 'to'
  // CHECK-NOTES: :[[@LINE-12]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
  try {
    if (metaguard::has_offloaded_parameters(*m))
      throw std::runtime_error(std::string("offloaded"));
  } catch (const std::runtime_error &) {
  }
  m->fc->to(torch::kCUDA);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving 'm.fc' of dispatched model 'm' with 'to'
  // CHECK-NOTES: :[[@LINE-20]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
}

void moveUnlessOffloaded(Net &m) {
  if (metaguard::has_offloaded_parameters(*m))
    throw std::logic_error(std::string("offloaded: reload it on one device"));
  m->to(torch::kCUDA);
}

void guardedHelper(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  moveUnlessOffloaded(m);
}

class Trainer {
public:
  void load(const fs::path &dir, const DeviceMap &map) {
    model_ = metaguard::from_pretrained<Net>(dir, {map});
  }
  void toGpu() {
    if (metaguard::has_offloaded_parameters(*model_))
      throw std::logic_error(std::string("offloaded"));
    model_->to(torch::kCUDA);
  }

private:
  Net model_{nullptr};
};

// ---- Tensors taken by value, lambdas kept in a variable -------------------------

void forEachTakesTensorsByValue(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  auto params = m->parameters();
  // A torch::Tensor copy is a handle to the same storage.
  std::for_each(params.begin(), params.end(),
                [](torch::Tensor p) { p.mul_(0.5); });
  // CHECK-NOTES: :[[@LINE-2]]:3: warning: 'lambda' changes a parameter of dispatched model 'm' in place (with 'mul_')
  // CHECK-NOTES: :[[@LINE-2]]:39: note: its parameter is changed here with 'mul_', in 'lambda'
  // CHECK-NOTES: :[[@LINE-7]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
  std::for_each(params.begin(), params.end(),
                [](torch::Tensor p) { p.clone().mul_(0.5); });
}

void lambdaKeptInAVariable(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  auto job = [&] { m->to(torch::kCUDA); };
  std::thread worker(job);
  // CHECK-NOTES: :[[@LINE-1]]:15: warning: 'lambda' moves dispatched model 'm' (with 'to')
  // CHECK-NOTES: :[[@LINE-3]]:20: note: it is moved here with 'to', in 'lambda'
  // CHECK-NOTES: :[[@LINE-5]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
  worker.join();
  auto halveAll = [](torch::Tensor &p) { p.mul_(0.5); };
  auto params = m->parameters();
  std::for_each(params.begin(), params.end(), halveAll);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'lambda' changes a parameter of dispatched model 'm' in place (with 'mul_')
  // CHECK-NOTES: :[[@LINE-4]]:42: note: its parameter is changed here with 'mul_', in 'lambda'
  // CHECK-NOTES: :[[@LINE-12]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
}

void threadBodyChecksFirst(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  std::thread worker([&] {
    if (metaguard::has_offloaded_parameters(*m))
      throw std::runtime_error(std::string("offloaded"));
    m->to(torch::kCUDA);
  });
  worker.join();
}

// ---- Containers of named models: vectors of pairs -------------------------------

void bindingsOverAVectorOfPairs(std::vector<std::pair<std::string, Net>> &models,
                                const DeviceMap &map) {
  for (auto &[name, net] : models)
    metaguard::dispatch_model(*net, map);
  for (auto &[name, net] : models)
    net->to(torch::kCUDA);
  // CHECK-NOTES: :[[@LINE-1]]:5: warning: moving dispatched model 'models' with 'to'
  // CHECK-NOTES: :[[@LINE-4]]:5: note: 'models' is dispatched here by 'metaguard::dispatch_model'
  for (auto &entry : models)
    entry.second->fc->to(torch::kCUDA);
  // CHECK-NOTES: :[[@LINE-1]]:5: warning: moving 'models.fc' of dispatched model 'models' with 'to'
  // CHECK-NOTES: :[[@LINE-8]]:5: note: 'models' is dispatched here by 'metaguard::dispatch_model'
  for (auto &[name, net] : models)
    for (auto &[pname, p] : net->named_parameters().pairs())
      p.zero_();
  // CHECK-NOTES: :[[@LINE-1]]:7: warning: 'zero_' on a parameter of dispatched model 'models' goes behind its offloading hook
  // CHECK-NOTES: :[[@LINE-13]]:5: note: 'models' is dispatched here by 'metaguard::dispatch_model'
  for (auto &[name, net] : models)
    net->to(torch::kHalf); // dtype only.
}

void vectorOfPairsNotDispatched(std::vector<std::pair<std::string, Net>> &models,
                                torch::Tensor x) {
  for (auto &[name, net] : models)
    net->to(torch::kCUDA);
  for (auto &entry : models)
    for (auto &p : entry.second->parameters())
      p.copy_(x);
}

void vectorOfNamedCopies(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  // Copies of the parameters, by name: writing them is fine.
  std::vector<std::pair<std::string, torch::Tensor>> copies;
  for (auto &[name, p] : m->named_parameters().pairs())
    copies.emplace_back(name, p.clone());
  for (auto &[name, c] : copies)
    c.mul_(0.5);
}

// ---- TORCH_CHECK, and exceptions caught only to leave ----------------------------

void torchCheckGuards(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  TORCH_CHECK(!metaguard::has_offloaded_parameters(*m),
              "reload the model on one device to move it");
  m->to(torch::kCUDA);
  for (auto &[name, p] : m->named_parameters().pairs())
    p.zero_();
}

void torchCheckTheWrongWay(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  TORCH_CHECK(metaguard::has_offloaded_parameters(*m), "expected offloading");
  m->to(torch::kCUDA);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving dispatched model 'm' with 'to'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
}

void torchCheckOnASubmodule(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  TORCH_CHECK(!metaguard::has_offloaded_parameters(*m->fc), "offloaded head");
  m->fc->to(torch::kCUDA);
  m->to(torch::kCUDA);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving dispatched model 'm' with 'to'
  // CHECK-NOTES: :[[@LINE-5]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
}

void throwCaughtAndRethrown(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  try {
    if (metaguard::has_offloaded_parameters(*m))
      throw std::runtime_error(std::string("offloaded"));
  } catch (const std::exception &) {
    throw;
  }
  m->to(torch::kCUDA);
}

void throwCaughtToReturn(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  try {
    if (metaguard::has_offloaded_parameters(*m))
      throw std::runtime_error(std::string("offloaded"));
  } catch (const std::runtime_error &) {
    return;
  } catch (...) {
    fail("unexpected");
  }
  m->to(torch::kCUDA);
}

void throwCaughtByAHandlerThatGoesOn(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  try {
    if (metaguard::has_offloaded_parameters(*m))
      throw std::runtime_error(std::string("offloaded"));
  } catch (const std::logic_error &) {
    return;
  } catch (const std::exception &) {
  }
  m->to(torch::kCUDA);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving dispatched model 'm' with 'to'
  // CHECK-NOTES: :[[@LINE-10]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
}

