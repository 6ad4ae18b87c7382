// RUN: %check_clang_tidy -std=c++17 %s metaguard-empty-model-used

// to_empty gives an empty model memory, not weights: a use before anything
// initialises or loads it is flagged, with notes at the to_empty and at the
// empty build. Initialising after the to_empty (reset_parameters, your own
// init_weights, apply, torch::nn::init or a fill over its parameters()) or
// loading makes it fine.

#include <metaguard/metaguard.h>

#include <iostream>
#include <memory>

namespace fs = std::filesystem;
using metaguard::Config;

struct NetImpl : torch::nn::Module {
  explicit NetImpl(const Config &);
  torch::Tensor forward(torch::Tensor x);
  void reset_parameters();
  void init_weights();
  torch::nn::Linear head{nullptr};
};
TORCH_MODULE(Net);

bool flag();
void init_weights(torch::nn::Module &module);

// ---- Given memory, then used ------------------------------------------------

torch::Tensor issueSnippet(const Config &config, torch::Tensor x) {
  Net net{nullptr};
  {
    auto guard = metaguard::init_empty_weights();
    net = metaguard::from_config<Net>(config);
  }
  metaguard::to_empty(*net, torch::kCPU);
  return net->forward(x);
  // CHECK-NOTES: :[[@LINE-1]]:10: warning: running the forward pass of model 'net' before its values are initialised: to_empty gave it memory, not weights, and nothing initialises or loads it on a path to here; initialise it (reset_parameters, apply with an init function, torch::nn::init over its parameters()) or load its weights (load_weights, load_state_dict, torch::load) first [metaguard-empty-model-used]
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'net' is given memory here by 'metaguard::to_empty', which leaves its values uninitialised
  // CHECK-NOTES: :[[@LINE-6]]:11: note: 'net' is built here while the meta device is ambient, so it has no weights
  // CHECK-NOTES: :[[@LINE-8]]:10: note: meta-device scope 'guard' is active from here to the end of its block
}

void savedAfterToEmpty(const Config &c, const fs::path &out) {
  auto m = metaguard::with_meta_device([&] { return Net(c); });
  metaguard::to_empty(*m, torch::kCPU);
  metaguard::save_pretrained(*m, out);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: calling 'metaguard::save_pretrained' on model 'm' before its values are initialised
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'm' is given memory here by 'metaguard::to_empty'
  // CHECK-NOTES: :[[@LINE-5]]:12: note: 'm' is built here while the meta device is ambient
  // CHECK-NOTES: :[[@LINE-6]]:12: note: 'metaguard::with_meta_device' runs this lambda
}

float parameterReadAfterToEmpty(const Config &c) {
  auto m = metaguard::with_meta_device([&] { return Net(c); });
  metaguard::to_empty(*m, torch::kCPU);
  float sum = 0;
  for (const auto &p : m->parameters())
    sum += p.item<float>();
  // CHECK-NOTES: :[[@LINE-1]]:12: warning: 'item' reads a parameter of model 'm' before its values are initialised
  // CHECK-NOTES: :[[@LINE-5]]:3: note: 'm' is given memory here
  // CHECK-NOTES: :[[@LINE-7]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-8]]:12: note: 'metaguard::with_meta_device' runs this lambda
  return sum;
}

void optimizerStepAfterToEmpty(const Config &c) {
  auto m = metaguard::with_meta_device([&] { return Net(c); });
  metaguard::to_empty(*m, torch::kCPU);
  torch::optim::Adam opt(m->parameters());
  opt.step();
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'step' of an optimizer updates the parameters of model 'm' before its values are initialised
  // CHECK-NOTES: :[[@LINE-3]]:22: note: the optimizer 'opt' is built here over the parameters of 'm'
  // CHECK-NOTES: :[[@LINE-5]]:3: note: 'm' is given memory here
  // CHECK-NOTES: :[[@LINE-7]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-8]]:12: note: 'metaguard::with_meta_device' runs this lambda
}

// Initialising a meta model writes nothing: the to_empty after it gives
// fresh memory.
void initialisedBeforeToEmpty(const Config &c, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Net(c); });
  m->reset_parameters();
  metaguard::to_empty(*m, torch::kCPU);
  m->forward(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: running the forward pass of model 'm' before its values are initialised
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'm' is given memory here
  // CHECK-NOTES: :[[@LINE-6]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-7]]:12: note: 'metaguard::with_meta_device' runs this lambda
}

void initialisedOnOnePath(const Config &c, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Net(c); });
  metaguard::to_empty(*m, torch::kCPU);
  if (flag())
    m->reset_parameters();
  m->forward(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: running the forward pass of model 'm' before its values are initialised
  // CHECK-NOTES: :[[@LINE-5]]:3: note: 'm' is given memory here
  // CHECK-NOTES: :[[@LINE-7]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-8]]:12: note: 'metaguard::with_meta_device' runs this lambda
}

// A submodule initialised: the rest of the model still has no values.
void submoduleInitialised(const Config &c, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Net(c); });
  metaguard::to_empty(*m, torch::kCPU);
  m->head->reset_parameters();
  m->forward(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: running the forward pass of model 'm' before its values are initialised
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'm' is given memory here
  // CHECK-NOTES: :[[@LINE-6]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-7]]:12: note: 'metaguard::with_meta_device' runs this lambda
}

// ---- Through helpers, factories and members ---------------------------------

void materialise(Net &n) { metaguard::to_empty(*n, torch::kCPU); }

void givenMemoryByHelper(const Config &c, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Net(c); });
  materialise(m);
  m->forward(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: running the forward pass of model 'm' before its values are initialised
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'materialise' gives 'm' memory without initialising it
  // CHECK-NOTES: :[[@LINE-8]]:28: note: it is given memory here, in 'materialise'
  // CHECK-NOTES: :[[@LINE-6]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-7]]:12: note: 'metaguard::with_meta_device' runs this lambda
}

void run(Net &n, torch::Tensor x) { n->forward(x); }

void usedByHelper(const Config &c, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Net(c); });
  metaguard::to_empty(*m, torch::kCPU);
  run(m, x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'run' uses model 'm' (with 'forward') before its values are initialised
  // CHECK-NOTES: :[[@LINE-7]]:37: note: it is used here (with 'forward') in 'run'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'm' is given memory here
  // CHECK-NOTES: :[[@LINE-6]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-7]]:12: note: 'metaguard::with_meta_device' runs this lambda
}

Net makeMaterialised(const Config &c) {
  Net m{nullptr};
  {
    auto guard = metaguard::init_empty_weights();
    m = Net(c);
  }
  metaguard::to_empty(*m, torch::kCPU);
  return m;
}

void fromFactory(const Config &c, torch::Tensor x) {
  Net m = makeMaterialised(c);
  m->forward(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: running the forward pass of model 'm' before its values are initialised
  // CHECK-NOTES: :[[@LINE-3]]:11: note: 'makeMaterialised' returns a model it gives memory without initialising it
  // CHECK-NOTES: :[[@LINE-9]]:3: note: it is given memory here, in 'makeMaterialised'
  // CHECK-NOTES: :[[@LINE-12]]:9: note: it is built here, in 'makeMaterialised'
  // CHECK-NOTES: :[[@LINE-14]]:10: note: meta-device scope 'guard' is active
}

class Runner {
public:
  explicit Runner(const Config &c) {
    {
      auto guard = metaguard::init_empty_weights();
      model_ = Net(c);
    }
    metaguard::to_empty(*model_, torch::kCPU);
  }
  torch::Tensor generate(torch::Tensor x) { return model_->forward(x); }
  void initialise() { model_->reset_parameters(); }

private:
  Net model_{nullptr};
};

void memberGivenMemory(const Config &c, torch::Tensor x) {
  Runner runner(c);
  runner.generate(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'Runner::generate' uses model 'runner.model_' (with 'forward') before its values are initialised
  // CHECK-NOTES: :[[@LINE-11]]:52: note: it is used here (with 'forward') in 'Runner::generate'
  // CHECK-NOTES: :[[@LINE-4]]:10: note: 'Runner::Runner' gives member model 'model_' memory without initialising it
  // CHECK-NOTES: :[[@LINE-15]]:5: note: it is given memory here, in 'Runner::Runner'
  // CHECK-NOTES: :[[@LINE-18]]:16: note: it is built here, in 'Runner::Runner'
  // CHECK-NOTES: :[[@LINE-20]]:12: note: meta-device scope 'guard' is active
}

// ---- Near misses: initialised or loaded after the to_empty -------------------

void resetParameters(const Config &c, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Net(c); });
  metaguard::to_empty(*m, torch::kCPU);
  m->reset_parameters();
  m->forward(x);
}

void ownInitWeights(const Config &c, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Net(c); });
  metaguard::to_empty(*m, torch::kCPU);
  m->init_weights();
  m->forward(x);
}

void freeInitWeights(const Config &c, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Net(c); });
  metaguard::to_empty(*m, torch::kCPU);
  init_weights(*m);
  m->forward(x);
}

void applied(const Config &c, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Net(c); });
  metaguard::to_empty(*m, torch::kCPU);
  m->apply([](torch::nn::Module &module) {
    for (auto &p : module.parameters())
      torch::nn::init::normal_(p);
  });
  m->forward(x);
}

void initOverParameters(const Config &c, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Net(c); });
  metaguard::to_empty(*m, torch::kCPU);
  for (auto &p : m->parameters())
    torch::nn::init::xavier_uniform_(p);
  m->forward(x);
}

void fillOverNamedParameters(const Config &c, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Net(c); });
  metaguard::to_empty(*m, torch::kCPU);
  for (auto &item : m->named_parameters())
    item.value().zero_();
  m->forward(x);
}

void uniformOverParameters(const Config &c, const fs::path &out) {
  auto m = metaguard::with_meta_device([&] { return Net(c); });
  metaguard::to_empty(*m, torch::kCPU);
  for (auto &p : m->parameters())
    p.uniform_(-0.1, 0.1);
  metaguard::save_pretrained(*m, out);
}

void loadedAfterToEmpty(const Config &c, const fs::path &dir,
                        torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Net(c); });
  metaguard::to_empty(*m, torch::kCPU);
  metaguard::load_weights(*m, dir);
  m->forward(x);
}

void torchLoadAfterToEmpty(const Config &c, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Net(c); });
  metaguard::to_empty(*m, torch::kCPU);
  torch::load(m, "net.pt");
  m->forward(x);
}

void initialisedOnEveryPath(const Config &c, const fs::path &dir,
                            torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Net(c); });
  metaguard::to_empty(*m, torch::kCPU);
  if (flag())
    m->reset_parameters();
  else
    metaguard::load_weights(*m, dir);
  m->forward(x);
}

// Shapes, names and dtype-only moves need no values.
long inspected(const Config &c) {
  auto m = metaguard::with_meta_device([&] { return Net(c); });
  metaguard::to_empty(*m, torch::kCPU);
  long n = 0;
  for (const auto &p : m->parameters())
    n += p.numel();
  m->to(torch::kHalf);
  return n;
}

// A model with weights: to_empty leaves its values as they are.
void realModel(const fs::path &dir, torch::Tensor x) {
  auto m = metaguard::from_pretrained<Net>(dir);
  metaguard::to_empty(*m, torch::kCPU);
  m->forward(x);
}

void initAll(Net &n) {
  for (auto &p : n->parameters())
    p.fill_(0.0);
}

void initialisedByHelper(const Config &c, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Net(c); });
  metaguard::to_empty(*m, torch::kCPU);
  initAll(m);
  m->forward(x);
}

void materialiseAndInit(Net &n) {
  metaguard::to_empty(*n, torch::kCPU);
  n->reset_parameters();
}

void helperGivesMemoryAndValues(const Config &c, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Net(c); });
  materialiseAndInit(m);
  m->forward(x);
}

Net makeInitialised(const Config &c) {
  auto m = metaguard::with_meta_device([&] { return Net(c); });
  metaguard::to_empty(*m, torch::kCPU);
  m->reset_parameters();
  return m;
}

void fromInitialisingFactory(const Config &c, torch::Tensor x) {
  Net m = makeInitialised(c);
  m->forward(x);
}

void memberInitialised(const Config &c, torch::Tensor x) {
  Runner runner(c);
  runner.initialise();
  runner.generate(x);
}
