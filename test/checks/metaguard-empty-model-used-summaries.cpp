// RUN: %check_clang_tidy -std=c++20 %s metaguard-empty-model-used

// Through calls, with function summaries: helpers that use or give weights
// to the model they are given, factories that return an empty model (or one
// built with the caller's device), member models that a constructor leaves
// empty and methods use or load, virtual calls and recursion. Functions only
// declared here are unknown: one that may change its argument may load it.

#include <metaguard/metaguard.h>

#include <functional>
#include <memory>
#include <stdexcept>

namespace fs = std::filesystem;
using metaguard::Config;

struct EncoderImpl : torch::nn::Module {
  explicit EncoderImpl(const Config &);
  torch::Tensor forward(torch::Tensor x);
  torch::Tensor weight;
};
TORCH_MODULE(Encoder);

bool flag();

// ---- Helpers that use their argument ----------------------------------------

torch::Tensor run(Encoder &m, torch::Tensor x) { return m->forward(x); }
torch::Tensor runThroughAnother(Encoder &m, torch::Tensor x) {
  return run(m, x);
}
void save(const torch::nn::Module &m, const fs::path &out) {
  metaguard::save_pretrained(m, out);
}
torch::Tensor runAfterLoading(Encoder &m, const fs::path &dir,
                              torch::Tensor x) {
  metaguard::load_weights(*m, dir);
  return m->forward(x);
}
void describe(const Encoder &m);  // Not defined here: const, so it cannot load.
void prepare(Encoder &m);         // Not defined here: it may load.

void helperUses(const Config &c, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  run(m, x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'run' uses empty model 'm' (with 'forward') before it has weights: it was built on the meta device, and nothing gives it weights on a path to here; load them first (load_weights, torch::load, load_checkpoint_and_dispatch, dispatch_model, or to_empty and initialisation) [metaguard-empty-model-used]
  // CHECK-NOTES: :[[@LINE-19]]:57: note: it is used here (with 'forward') in 'run'
  // CHECK-NOTES: :[[@LINE-4]]:12: note: 'm' is built here while the meta device is ambient, so it has no weights
  // CHECK-NOTES: :[[@LINE-5]]:12: note: 'metaguard::with_meta_device' runs this lambda on the meta device
}

void helperOfHelperUses(const Config &c, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  runThroughAnother(m, x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'runThroughAnother' uses empty model 'm' (with 'forward') before it has weights
  // CHECK-NOTES: :[[@LINE-28]]:57: note: it is used here (with 'forward') in 'run'
  // CHECK-NOTES: :[[@LINE-4]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-5]]:12: note: 'metaguard::with_meta_device' runs this lambda
}

void helperSaves(const Config &c, const fs::path &out) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  save(*m, out);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'save' uses empty model 'm' (with 'metaguard::save_pretrained') before it has weights
  // CHECK-NOTES: :[[@LINE-32]]:3: note: it is used here (with 'metaguard::save_pretrained') in 'save'
  // CHECK-NOTES: :[[@LINE-4]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-5]]:12: note: 'metaguard::with_meta_device' runs this lambda
}

void helperLoadsFirst(const Config &c, const fs::path &dir, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  runAfterLoading(m, dir, x);
  run(m, x);
}

void unknownConstHelper(const Config &c, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  describe(m);
  run(m, x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'run' uses empty model 'm' (with 'forward') before it has weights
  // CHECK-NOTES: :[[@LINE-53]]:57: note: it is used here (with 'forward') in 'run'
  // CHECK-NOTES: :[[@LINE-5]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-6]]:12: note: 'metaguard::with_meta_device' runs this lambda
}

void unknownHelperMayLoad(const Config &c, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  prepare(m);
  run(m, x);
}

// ---- Helpers that give weights ----------------------------------------------

void loadInto(torch::nn::Module &m, const fs::path &dir) {
  metaguard::load_weights(m, dir);
}
void loadSometimes(torch::nn::Module &m, const fs::path &dir) {
  if (flag())
    metaguard::load_weights(m, dir);
}
void loadOrThrow(torch::nn::Module &m, const fs::path &dir) {
  if (!flag())
    throw std::runtime_error("no checkpoint in " + dir.string());
  metaguard::load_weights(m, dir);
}
void loadOrGiveUp(torch::nn::Module &m, const fs::path &dir) {
  try {
    metaguard::load_weights(m, dir);
  } catch (const std::exception &) {
  }
}

void helperLoads(const Config &c, const fs::path &dir, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  loadInto(*m, dir);
  m->forward(x);
}

void helperLoadsOnOnePath(const Config &c, const fs::path &dir,
                          torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  loadSometimes(*m, dir);
  m->forward(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'm' before it has weights
  // CHECK-NOTES: :[[@LINE-4]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-5]]:12: note: 'metaguard::with_meta_device' runs this lambda
}

void helperLoadsOrThrows(const Config &c, const fs::path &dir,
                         torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  loadOrThrow(*m, dir);
  m->forward(x);
}

void helperSwallowsFailure(const Config &c, const fs::path &dir,
                           torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  loadOrGiveUp(*m, dir);
  m->forward(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'm' before it has weights
  // CHECK-NOTES: :[[@LINE-4]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-5]]:12: note: 'metaguard::with_meta_device' runs this lambda
}

// ---- Factories --------------------------------------------------------------

Encoder makeSkeleton(const Config &c) {
  auto guard = metaguard::init_empty_weights();
  return Encoder(c);
}
Encoder makeThroughAnother(const Config &c) { return makeSkeleton(c); }
Encoder makeLoaded(const Config &c, const fs::path &dir) {
  auto m = makeSkeleton(c);
  metaguard::load_weights(*m, dir);
  return m;
}
Encoder build(const Config &c) { return Encoder(c); }
std::shared_ptr<EncoderImpl> makeShared(const Config &c) {
  metaguard::set_default_device("meta");
  auto m = std::make_shared<EncoderImpl>(c);
  metaguard::reset_default_device();
  return m;
}

void fromFactory(const Config &c, torch::Tensor x) {
  auto m = makeSkeleton(c);
  m->forward(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'm' before it has weights
  // CHECK-NOTES: :[[@LINE-3]]:12: note: 'makeSkeleton' returns a model built empty on the meta device
  // CHECK-NOTES: :[[@LINE-21]]:10: note: it is built here, in 'makeSkeleton'
  // CHECK-NOTES: :[[@LINE-23]]:8: note: meta-device scope 'guard' is active from here to the end of its block
}

void fromFactoryOfFactory(const Config &c, torch::Tensor x) {
  auto m = makeThroughAnother(c);
  m->forward(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'm' before it has weights
  // CHECK-NOTES: :[[@LINE-3]]:12: note: 'makeThroughAnother' returns a model built empty on the meta device
  // CHECK-NOTES: :[[@LINE-30]]:10: note: it is built here, in 'makeSkeleton'
  // CHECK-NOTES: :[[@LINE-32]]:8: note: meta-device scope 'guard' is active
}

void fromSharedFactory(const Config &c, torch::Tensor x) {
  auto m = makeShared(c);
  m->forward(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'm' before it has weights
  // CHECK-NOTES: :[[@LINE-3]]:12: note: 'makeShared' returns a model built empty on the meta device
  // CHECK-NOTES: :[[@LINE-28]]:12: note: it is built here, in 'makeShared'
  // CHECK-NOTES: :[[@LINE-30]]:3: note: the default device is set to meta here
}

void fromLoadingFactory(const Config &c, const fs::path &dir,
                        torch::Tensor x) {
  auto m = makeLoaded(c, dir);
  m->forward(x);
}

void builderUnderScope(const Config &c, torch::Tensor x) {
  auto guard = metaguard::init_empty_weights();
  auto m = build(c);
  m->forward(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'm' before it has weights
  // CHECK-NOTES: :[[@LINE-3]]:12: note: 'build' returns a model it builds with the device its caller makes ambient, which is meta here
  // CHECK-NOTES: :[[@LINE-5]]:8: note: meta-device scope 'guard' is active
}

void builderOutsideScope(const Config &c, torch::Tensor x) {
  auto m = build(c);
  m->forward(x);
}

void immediatelyInvoked(const Config &c, torch::Tensor x) {
  auto m = [&] {
    auto guard = metaguard::init_empty_weights();
    return metaguard::from_config<Encoder>(c);
  }();
  m->forward(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'm' before it has weights
  // CHECK-NOTES: :[[@LINE-6]]:12: note: 'lambda' returns a model built empty on the meta device
  // CHECK-NOTES: :[[@LINE-5]]:12: note: it is built here, in 'lambda'
  // CHECK-NOTES: :[[@LINE-7]]:10: note: meta-device scope 'guard' is active
}

void builderInScopeFunction(const Config &c, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return build(c); });
  m->forward(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'm' before it has weights
  // CHECK-NOTES: :[[@LINE-3]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-4]]:12: note: 'metaguard::with_meta_device' runs this lambda
}

// ---- Member models ----------------------------------------------------------

class Runner {
public:
  explicit Runner(const Config &c) {
    auto guard = metaguard::init_empty_weights();
    model_ = Encoder(c);
  }
  void load(const fs::path &dir) { metaguard::load_weights(*model_, dir); }
  torch::Tensor run(torch::Tensor x) { return model_->forward(x); }
  torch::Tensor loadAndRun(const fs::path &dir, torch::Tensor x) {
    load(dir);
    return run(x);
  }
  torch::Tensor runOnly(torch::Tensor x) { return run(x); }

private:
  Encoder model_{nullptr};
};

class Lazy {
public:
  explicit Lazy(const Config &c) : model_(c) {}
  torch::Tensor run(torch::Tensor x) { return model_->forward(x); }

private:
  Encoder model_;
};

void memberUsed(const Config &c, torch::Tensor x) {
  Runner r(c);
  r.run(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'Runner::run' uses empty model 'r.model_' (with 'forward') before it has weights
  // CHECK-NOTES: :[[@LINE-24]]:47: note: it is used here (with 'forward') in 'Runner::run'
  // CHECK-NOTES: :[[@LINE-4]]:10: note: 'Runner::Runner' leaves member model 'model_' built empty on the meta device
  // CHECK-NOTES: :[[@LINE-29]]:14: note: it is built here, in 'Runner::Runner'
  // CHECK-NOTES: :[[@LINE-31]]:10: note: meta-device scope 'guard' is active
}

void memberUsedThroughMethod(const Config &c, torch::Tensor x) {
  Runner r(c);
  r.runOnly(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'Runner::runOnly' uses empty model 'r.model_' (with 'forward') before it has weights
  // CHECK-NOTES: :[[@LINE-34]]:47: note: it is used here (with 'forward') in 'Runner::run'
  // CHECK-NOTES: :[[@LINE-4]]:10: note: 'Runner::Runner' leaves member model 'model_' built empty on the meta device
  // CHECK-NOTES: :[[@LINE-39]]:14: note: it is built here, in 'Runner::Runner'
  // CHECK-NOTES: :[[@LINE-41]]:10: note: meta-device scope 'guard' is active
}

void memberLoadedFirst(const Config &c, const fs::path &dir, torch::Tensor x) {
  Runner r(c);
  r.load(dir);
  r.run(x);
}

void memberLoadedByMethod(const Config &c, const fs::path &dir,
                          torch::Tensor x) {
  Runner r(c);
  r.loadAndRun(dir, x);
  r.run(x);
}

void memberOfHeapObject(const Config &c, torch::Tensor x) {
  auto r = std::make_unique<Runner>(c);
  r->run(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'Runner::run' uses empty model 'r.model_' (with 'forward') before it has weights
  // CHECK-NOTES: :[[@LINE-57]]:47: note: it is used here (with 'forward') in 'Runner::run'
  // CHECK-NOTES: :[[@LINE-4]]:12: note: 'Runner::Runner' leaves member model 'model_' built empty on the meta device
  // CHECK-NOTES: :[[@LINE-62]]:14: note: it is built here, in 'Runner::Runner'
  // CHECK-NOTES: :[[@LINE-64]]:10: note: meta-device scope 'guard' is active
}

void memberBuiltUnderCallersScope(const Config &c, torch::Tensor x) {
  auto guard = metaguard::init_empty_weights();
  Lazy l(c);
  l.run(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'Lazy::run' uses empty model 'l.model_' (with 'forward') before it has weights
  // CHECK-NOTES: :[[@LINE-54]]:47: note: it is used here (with 'forward') in 'Lazy::run'
  // CHECK-NOTES: :[[@LINE-4]]:8: note: 'Lazy::Lazy' leaves member model 'model_' built with the device its caller makes ambient, which is meta here
  // CHECK-NOTES: :[[@LINE-6]]:8: note: meta-device scope 'guard' is active
}

void memberBuiltOnCpu(const Config &c, torch::Tensor x) {
  Lazy l(c);
  l.run(x);
}

// ---- Virtual calls and recursion --------------------------------------------

struct Step {
  virtual ~Step() = default;
  virtual void apply(Encoder &m) = 0;
};
struct Evaluate : Step {
  void apply(Encoder &m) override { m->forward(torch::Tensor()); }
};
struct Load : Step {
  void apply(Encoder &m) override { metaguard::load_weights(*m, "w"); }
};

void virtualCall(const Config &c, Step &step) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  step.apply(m);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'Evaluate::apply' uses empty model 'm' (with 'forward') before it has weights
  // CHECK-NOTES: :[[@LINE-10]]:37: note: it is used here (with 'forward') in 'Evaluate::apply'
  // CHECK-NOTES: :[[@LINE-4]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-5]]:12: note: 'metaguard::with_meta_device' runs this lambda
}

void warmUp(Encoder &m, int n) {
  if (n == 0)
    return;
  m->forward(torch::Tensor());
  warmUp(m, n - 1);
}

void recursive(const Config &c) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  warmUp(m, 3);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'warmUp' uses empty model 'm' (with 'forward') before it has weights
  // CHECK-NOTES: :[[@LINE-8]]:3: note: it is used here (with 'forward') in 'warmUp'
  // CHECK-NOTES: :[[@LINE-4]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-5]]:12: note: 'metaguard::with_meta_device' runs this lambda
}

// ---- Calls through a function pointer or std::function set once -------------

void throughPointers(const Config &c, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  const auto fn = &run;
  fn(m, x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'run' uses empty model 'm' (with 'forward') before it has weights
  // CHECK-NOTES: :29:57: note: it is used here (with 'forward') in 'run'
  // CHECK-NOTES: :[[@LINE-5]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-6]]:12: note: 'metaguard::with_meta_device' runs this lambda
  const std::function<torch::Tensor(Encoder &, torch::Tensor)> f = run;
  f(m, x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'run' uses empty model 'm' (with 'forward') before it has weights
  // CHECK-NOTES: :29:57: note: it is used here (with 'forward') in 'run'
  // CHECK-NOTES: :[[@LINE-11]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-12]]:12: note: 'metaguard::with_meta_device' runs this lambda
}
