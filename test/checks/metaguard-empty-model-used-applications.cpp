// RUN: %check_clang_tidy -std=c++20 %s metaguard-empty-model-used

// Where applications put the use: a helper called in a range-for's range
// expression, a table of std::function called with the model, a helper
// given the model with_meta_device returns, and a factory that builds with
// its caller's device called inside the application's own RAII class that
// sets the default device to meta. Each has a near miss that loads first.

#include <metaguard/metaguard.h>

#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace fs = std::filesystem;
using metaguard::Config;

struct NetImpl : torch::nn::Module {
  explicit NetImpl(const Config &);
  torch::Tensor forward(torch::Tensor x);
};
TORCH_MODULE(Net);

// ---- A helper in a range-for's range expression -----------------------------

// Reads the data of both models' parameters.
std::vector<std::pair<std::string, float>> diff(const NetImpl &candidate,
                                                const NetImpl &reference) {
  std::vector<std::pair<std::string, float>> out;
  auto theirs = reference.named_parameters();
  for (auto &p : candidate.named_parameters())
    out.emplace_back(p.key(), p.value().item<float>() -
                                  theirs[p.key()].item<float>());
  return out;
}

void compareWithReference(const Config &cfg, const fs::path &dir) {
  Net reference = metaguard::from_pretrained<Net>(dir);
  Net candidate{nullptr};
  {
    auto guard = metaguard::init_empty_weights();
    candidate = Net(cfg);
  }
  for (auto &[k, v] : diff(*candidate, *reference))
  // CHECK-NOTES: :[[@LINE-1]]:23: warning: 'diff' uses empty model 'candidate' (with 'item') before it has weights: it was built on the meta device, and nothing gives it weights on a path to here; load them first (load_weights, torch::load, load_checkpoint_and_dispatch, dispatch_model, or to_empty and initialisation) [metaguard-empty-model-used]
  // CHECK-NOTES: :[[@LINE-14]]:31: note: it is used here (with 'item') in 'diff'
  // CHECK-NOTES: :[[@LINE-5]]:17: note: 'candidate' is built here while the meta device is ambient
  // CHECK-NOTES: :[[@LINE-7]]:10: note: meta-device scope 'guard' is active
    std::cout << k << ' ' << v << '\n';
}

void compareWithReferenceLoaded(const Config &cfg, const fs::path &dir) {
  Net reference = metaguard::from_pretrained<Net>(dir);
  Net candidate{nullptr};
  {
    auto guard = metaguard::init_empty_weights();
    candidate = Net(cfg);
  }
  metaguard::load_weights(*candidate, dir);
  for (auto &[k, v] : diff(*candidate, *reference))
    std::cout << k << ' ' << v << '\n';
}

// ---- A table of std::function called with the model -------------------------

void tableOfSteps(const Config &cfg, torch::Tensor x) {
  std::map<std::string, std::function<void(Net &)>> steps{
      {"run", [x](Net &n) { n->forward(x); }}};
  Net net{nullptr};
  {
    auto guard = metaguard::init_empty_weights();
    net = Net(cfg);
  }
  for (auto &[name, fn] : steps)
    fn(net);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'lambda' uses empty model 'net' (with 'forward') before it has weights
    // CHECK-NOTES: :[[@LINE-9]]:29: note: it is used here (with 'forward') in 'lambda'
    // CHECK-NOTES: :[[@LINE-6]]:11: note: 'net' is built here while the meta device is ambient
    // CHECK-NOTES: :[[@LINE-8]]:10: note: meta-device scope 'guard' is active
}

void tableOfStepsAt(const Config &cfg, torch::Tensor x) {
  std::map<std::string, std::function<void(Net &)>> steps{
      {"run", [x](Net &n) { n->forward(x); }}};
  Net net{nullptr};
  {
    auto guard = metaguard::init_empty_weights();
    net = Net(cfg);
  }
  steps.at("run")(net);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'lambda' uses empty model 'net' (with 'forward') before it has weights
  // CHECK-NOTES: :[[@LINE-8]]:29: note: it is used here (with 'forward') in 'lambda'
  // CHECK-NOTES: :[[@LINE-5]]:11: note: 'net' is built here while the meta device is ambient
  // CHECK-NOTES: :[[@LINE-7]]:10: note: meta-device scope 'guard' is active
}

void tableOfStepsLoaded(const Config &cfg, const fs::path &dir,
                        torch::Tensor x) {
  std::map<std::string, std::function<void(Net &)>> steps{
      {"run", [x](Net &n) { n->forward(x); }}};
  Net net{nullptr};
  {
    auto guard = metaguard::init_empty_weights();
    net = Net(cfg);
  }
  metaguard::load_weights(*net, dir);
  for (auto &[name, fn] : steps)
    fn(net);
  steps.at("run")(net);
}

// A function stored by name, a lookup through find(), a table kept in a
// member and a table passed to a helper run what is stored there too.
void runStep(Net &n) { n->forward(torch::Tensor()); }

void tableOfFunctions(const Config &cfg) {
  std::map<std::string, std::function<void(Net &)>> steps{{"run", runStep}};
  auto net = metaguard::with_meta_device([&] { return Net(cfg); });
  steps.find("run")->second(net);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'runStep' uses empty model 'net' (with 'forward') before it has weights
  // CHECK-NOTES: :[[@LINE-7]]:24: note: it is used here (with 'forward') in 'runStep'
  // CHECK-NOTES: :[[@LINE-4]]:14: note: 'net' is built here while the meta device is ambient
  // CHECK-NOTES: :[[@LINE-5]]:14: note: 'metaguard::with_meta_device' runs this lambda
}

struct Pipeline {
  std::map<std::string, std::function<void(Net &)>> steps{{"run", runStep}};
  void run(Net &net) { steps.at("run")(net); }
};

void tableInMember(const Config &cfg) {
  Pipeline pipeline;
  auto net = metaguard::with_meta_device([&] { return Net(cfg); });
  pipeline.run(net);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'Pipeline::run' uses empty model 'net' (with 'forward') before it has weights
  // CHECK-NOTES: :[[@LINE-22]]:24: note: it is used here (with 'forward') in 'runStep'
  // CHECK-NOTES: :[[@LINE-4]]:14: note: 'net' is built here while the meta device is ambient
  // CHECK-NOTES: :[[@LINE-5]]:14: note: 'metaguard::with_meta_device' runs this lambda
}

void runAll(std::map<std::string, std::function<void(Net &)>> &steps,
            Net &net) {
  for (auto &[name, fn] : steps)
    fn(net);
}

void tablePassedOn(const Config &cfg) {
  std::map<std::string, std::function<void(Net &)>> steps{{"run", runStep}};
  auto net = metaguard::with_meta_device([&] { return Net(cfg); });
  runAll(steps, net);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'runAll' uses empty model 'net' (with 'forward') before it has weights
  // CHECK-NOTES: :[[@LINE-38]]:24: note: it is used here (with 'forward') in 'runStep'
  // CHECK-NOTES: :[[@LINE-4]]:14: note: 'net' is built here while the meta device is ambient
  // CHECK-NOTES: :[[@LINE-5]]:14: note: 'metaguard::with_meta_device' runs this lambda
}

// A table whose every function gives the model its weights is a load.
void tableThatLoads(const Config &cfg, const fs::path &dir, torch::Tensor x) {
  std::map<std::string, std::function<void(Net &)>> steps{
      {"load", [&dir](Net &n) { metaguard::load_weights(*n, dir); }}};
  auto net = metaguard::with_meta_device([&] { return Net(cfg); });
  steps.at("load")(net);
  net->forward(x);
}

// ---- with_meta_device, then a helper that reads data ------------------------

void report(Net &m) {
  for (auto &p : m->named_parameters())
    std::cout << p.key() << ' ' << p.value().item<float>() << '\n';
}
void reportByValue(Net m) {
  std::cout << m->named_parameters()["weight"].data_ptr() << '\n';
}

void builtByScopeFunction(const Config &cfg) {
  auto m = metaguard::with_meta_device([&] { return Net(cfg); });
  report(m);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'report' uses empty model 'm' (with 'item') before it has weights
  // CHECK-NOTES: :[[@LINE-10]]:36: note: it is used here (with 'item') in 'report'
  // CHECK-NOTES: :[[@LINE-4]]:12: note: 'm' is built here while the meta device is ambient
  // CHECK-NOTES: :[[@LINE-5]]:12: note: 'metaguard::with_meta_device' runs this lambda
}

void builtByScopeFunctionByValue(const Config &cfg) {
  auto m = metaguard::with_meta_device([&] { return Net(cfg); });
  reportByValue(m);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'reportByValue' uses empty model 'm' (with 'data_ptr') before it has weights
  // CHECK-NOTES: :[[@LINE-16]]:16: note: it is used here (with 'data_ptr') in 'reportByValue'
  // CHECK-NOTES: :[[@LINE-4]]:12: note: 'm' is built here while the meta device is ambient
  // CHECK-NOTES: :[[@LINE-5]]:12: note: 'metaguard::with_meta_device' runs this lambda
}

void builtByScopeFunctionLoaded(const Config &cfg, const fs::path &dir) {
  auto m = metaguard::with_meta_device([&] { return Net(cfg); });
  metaguard::load_weights(*m, dir);
  report(m);
  reportByValue(m);
}

// ---- A factory under the application's own RAII class -----------------------

// Builds with whatever device its caller makes ambient.
Net make(const Config &cfg) { return Net(cfg); }

struct MetaDefault {
  MetaDefault() { metaguard::set_default_device(torch::kMeta); }
  ~MetaDefault() { metaguard::reset_default_device(); }
};

struct MetaDefaultOutOfLine {
  MetaDefaultOutOfLine();
  ~MetaDefaultOutOfLine();
};
MetaDefaultOutOfLine::MetaDefaultOutOfLine() {
  metaguard::set_default_device(torch::kMeta);
}
MetaDefaultOutOfLine::~MetaDefaultOutOfLine() {
  metaguard::reset_default_device();
}

struct MetaDefaultNamed {
  MetaDefaultNamed() { metaguard::set_default_device(torch::Device("meta")); }
  ~MetaDefaultNamed() { metaguard::reset_default_device(); }
};

void factoryUnderRaii(const Config &cfg, torch::Tensor x) {
  Net net{nullptr};
  {
    MetaDefault g;
    net = make(cfg);
  }
  net->forward(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'net' before it has weights
  // CHECK-NOTES: :[[@LINE-4]]:11: note: 'make' returns a model it builds with the device its caller makes ambient, which is meta here
  // CHECK-NOTES: :[[@LINE-6]]:17: note: 'MetaDefault::MetaDefault' returns with the default device set to meta
  // CHECK-NOTES: :[[@LINE-30]]:19: note: the default device is set to meta here
}

void factoryUnderRaiiOutOfLine(const Config &cfg, torch::Tensor x) {
  Net net{nullptr};
  {
    MetaDefaultOutOfLine g;
    net = make(cfg);
  }
  net->forward(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'net' before it has weights
  // CHECK-NOTES: :[[@LINE-4]]:11: note: 'make' returns a model it builds with the device its caller makes ambient, which is meta here
  // CHECK-NOTES: :[[@LINE-6]]:26: note: 'MetaDefaultOutOfLine::MetaDefaultOutOfLine' returns with the default device set to meta
  // CHECK-NOTES: :[[@LINE-34]]:3: note: the default device is set to meta here
}

void factoryUnderRaiiNamed(const Config &cfg, torch::Tensor x) {
  Net net{nullptr};
  {
    MetaDefaultNamed g;
    net = make(cfg);
  }
  net->forward(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'net' before it has weights
  // CHECK-NOTES: :[[@LINE-4]]:11: note: 'make' returns a model it builds with the device its caller makes ambient, which is meta here
  // CHECK-NOTES: :[[@LINE-6]]:22: note: 'MetaDefaultNamed::MetaDefaultNamed' returns with the default device set to meta
  // CHECK-NOTES: :[[@LINE-40]]:24: note: the default device is set to meta here
}

void factoryUnderRaiiLoaded(const Config &cfg, const fs::path &dir,
                            torch::Tensor x) {
  Net net{nullptr};
  {
    MetaDefault g;
    net = make(cfg);
  }
  metaguard::load_weights(*net, dir);
  net->forward(x);
}

void factoryAfterRaii(const Config &cfg, torch::Tensor x) {
  Net net{nullptr};
  {
    MetaDefault g;
  }
  net = make(cfg);
  net->forward(x);
}

void factoryUnderRaiiOutOfLineLoaded(const Config &cfg, const fs::path &dir,
                                     torch::Tensor x) {
  Net net{nullptr};
  {
    MetaDefaultOutOfLine g;
    net = make(cfg);
  }
  metaguard::load_weights(*net, dir);
  net->forward(x);
}

void factoryUnderRaiiNamedLoaded(const Config &cfg, const fs::path &dir,
                                 torch::Tensor x) {
  Net net{nullptr};
  {
    MetaDefaultNamed g;
    net = make(cfg);
  }
  metaguard::load_weights(*net, dir);
  net->forward(x);
}
