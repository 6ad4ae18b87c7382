// RUN: %check_clang_tidy -std=c++20 %s metaguard-empty-model-used

// A model built while the meta device is ambient has no weights; each use
// that needs them, reached before anything gives it weights, is flagged.
// Near misses (inspection, dtype-only moves, models given weights on every
// path, models built elsewhere) are not.

#include <metaguard/metaguard.h>

#include <iostream>
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

struct PairImpl : torch::nn::Module {
  explicit PairImpl(const Config &);
  torch::Tensor forward(torch::Tensor x);
  Encoder first{nullptr};
  Encoder second{nullptr};
};
TORCH_MODULE(Pair);

bool flag();
METAGUARD_LOADS_WEIGHTS void restore(torch::nn::Module &model,
                                     const fs::path &dir);

// ---- Each way to build a model while the meta device is ambient ------------

void holderUnderGuard(const Config &c, torch::Tensor x) {
  auto guard = metaguard::init_empty_weights();
  Encoder m(c);
  m->forward(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'm' before it has weights: it was built on the meta device, and nothing gives it weights on a path to here; load them first (load_weights, torch::load, load_checkpoint_and_dispatch, dispatch_model, or to_empty and initialisation) [metaguard-empty-model-used]
  // CHECK-NOTES: :[[@LINE-3]]:11: note: 'm' is built here while the meta device is ambient, so it has no weights
  // CHECK-NOTES: :[[@LINE-5]]:8: note: meta-device scope 'guard' is active from here to the end of its block
}

void fromConfigUnderScope(const Config &c, torch::Tensor x) {
  metaguard::MetaDeviceScope scope;
  auto m = metaguard::from_config<Encoder>(c);
  m(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'm' before it has weights
  // CHECK-NOTES: :[[@LINE-3]]:12: note: 'm' is built here while the meta device is ambient
  // CHECK-NOTES: :[[@LINE-5]]:30: note: meta-device scope 'scope' is active
}

void deviceScopeOnMeta(const Config &c, torch::Tensor x) {
  metaguard::DeviceScope scope(torch::kMeta);
  auto m = std::make_shared<EncoderImpl>(c);
  m->forward(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'm' before it has weights
  // CHECK-NOTES: :[[@LINE-3]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-5]]:26: note: meta-device scope 'scope' is active
}

void temporaryAssigned(const Config &c, torch::Tensor x) {
  Encoder m{nullptr};
  {
    auto guard = metaguard::init_empty_weights();
    m = Encoder(c);
  }
  m->forward(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'm' before it has weights
  // CHECK-NOTES: :[[@LINE-4]]:9: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-6]]:10: note: meta-device scope 'guard' is active
}

void defaultDeviceMeta(const Config &c, torch::Tensor x) {
  metaguard::set_default_device("meta");
  Encoder m(c);
  metaguard::reset_default_device();
  m->forward(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'm' before it has weights
  // CHECK-NOTES: :[[@LINE-4]]:11: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-6]]:3: note: the default device is set to meta here
}

void scopeFunctionLambda(const Config &c, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  m->forward(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'm' before it has weights
  // CHECK-NOTES: :[[@LINE-3]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-4]]:12: note: 'metaguard::with_meta_device' runs this lambda on the meta device
}

void insideScopeFunction(const Config &c, torch::Tensor x) {
  metaguard::with_meta_device([&] {
    Encoder m(c);
    m->forward(x);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: running the forward pass of empty model 'm' before it has weights
    // CHECK-NOTES: :[[@LINE-3]]:13: note: 'm' is built here
    // CHECK-NOTES: :[[@LINE-5]]:3: note: 'metaguard::with_meta_device' runs this lambda on the meta device
  });
}

void newImpl(const Config &c, torch::Tensor x) {
  auto guard = metaguard::init_empty_weights();
  auto *m = new EncoderImpl(c);
  m->forward(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'm' before it has weights
  // CHECK-NOTES: :[[@LINE-3]]:13: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-5]]:8: note: meta-device scope 'guard' is active
}

// ---- Each use --------------------------------------------------------------

void moveToDevice(const Config &c, torch::Device device) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  m->to(device);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving empty model 'm' before it has weights
  // CHECK-NOTES: :[[@LINE-3]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-4]]:12: note: 'metaguard::with_meta_device' runs this lambda
}

void moveToDeviceAndDtype(const Config &c) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  m->to(torch::kCUDA, torch::kHalf);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: moving empty model 'm' before it has weights
  // CHECK-NOTES: :[[@LINE-3]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-4]]:12: note: 'metaguard::with_meta_device' runs this lambda
}

void save(const Config &c, const fs::path &out) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  metaguard::save_pretrained(*m, out);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: calling 'metaguard::save_pretrained' on empty model 'm' before it has weights
  // CHECK-NOTES: :[[@LINE-3]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-4]]:12: note: 'metaguard::with_meta_device' runs this lambda
}

void readItem(const Config &c) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  float w = m->weight.item<float>();
  // CHECK-NOTES: :[[@LINE-1]]:13: warning: 'item' reads a parameter of empty model 'm' before it has weights
  // CHECK-NOTES: :[[@LINE-3]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-4]]:12: note: 'metaguard::with_meta_device' runs this lambda
}

void readDataPtr(const Config &c) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  for (auto &p : m->parameters())
    p.data_ptr();
  // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'data_ptr' reads a parameter of empty model 'm' before it has weights
  // CHECK-NOTES: :[[@LINE-4]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-5]]:12: note: 'metaguard::with_meta_device' runs this lambda
}

// The result of an operation on a meta tensor is a meta tensor.
void readComputed(const Config &c) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  auto norm = m->named_parameters()["weight"].abs().item<float>();
  // CHECK-NOTES: :[[@LINE-1]]:15: warning: 'item' reads a parameter of empty model 'm' before it has weights
  // CHECK-NOTES: :[[@LINE-3]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-4]]:12: note: 'metaguard::with_meta_device' runs this lambda
}

void copyOut(const Config &c, torch::Tensor into) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  into.copy_(m->weight);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'copy_' reads a parameter of empty model 'm' before it has weights
  // CHECK-NOTES: :[[@LINE-3]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-4]]:12: note: 'metaguard::with_meta_device' runs this lambda
}

void copyToDevice(const Config &c) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  auto w = m->weight.to(torch::kCPU);
  // CHECK-NOTES: :[[@LINE-1]]:12: warning: 'to' reads a parameter of empty model 'm' before it has weights
  // CHECK-NOTES: :[[@LINE-3]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-4]]:12: note: 'metaguard::with_meta_device' runs this lambda
  auto v = m->weight.cpu();
  // CHECK-NOTES: :[[@LINE-1]]:12: warning: 'cpu' reads a parameter of empty model 'm' before it has weights
  // CHECK-NOTES: :[[@LINE-7]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-8]]:12: note: 'metaguard::with_meta_device' runs this lambda
}

void printParameter(const Config &c) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  for (auto &item : m->named_parameters())
    std::cout << item.key() << ": " << item.value() << "\n";
  // CHECK-NOTES: :[[@LINE-1]]:5: warning: printing a parameter of empty model 'm' before it has weights
  // CHECK-NOTES: :[[@LINE-4]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-5]]:12: note: 'metaguard::with_meta_device' runs this lambda
}

void stepOptimizer(const Config &c) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  torch::optim::Adam opt(m->parameters());
  opt.step();
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'step' of an optimizer updates the parameters of empty model 'm' before it has weights
  // CHECK-NOTES: :[[@LINE-3]]:22: note: the optimizer 'opt' is built here over the parameters of 'm'
  // CHECK-NOTES: :[[@LINE-5]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-6]]:12: note: 'metaguard::with_meta_device' runs this lambda
}

// ---- What gives weights ----------------------------------------------------

void loadWeights(const Config &c, const fs::path &dir, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  metaguard::load_weights(*m, dir);
  m->forward(x);
}

void loadCheckpointAndDispatch(const Config &c, const fs::path &dir,
                               torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  metaguard::load_checkpoint_and_dispatch(
      *m, dir, {metaguard::DeviceMap::automatic()});
  m->forward(x);
}

// to_empty gives memory, not weights (metaguard-empty-model-used-to-empty.cpp
// has the cases); initialised afterwards, the model is fine.
void toEmptyAndInitialised(const Config &c, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  metaguard::to_empty(*m, torch::kCPU);
  for (auto &p : m->parameters())
    torch::nn::init::normal_(p);
  m->forward(x);
}

void dispatch(const Config &c, const metaguard::DeviceMap &map,
              torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  metaguard::dispatch_model(*m, map, "offload");
  m->forward(x);
}

void attachHooks(const Config &c, const metaguard::DeviceMap &map,
                 const std::shared_ptr<const metaguard::WeightsMap> &weights,
                 torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  metaguard::attach_offload_hooks(*m, map, weights);
  m->forward(x);
}

void torchLoad(const Config &c, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  torch::load(m, "encoder.pt");
  m->forward(x);
}

void moduleLoad(const Config &c, torch::serialize::InputArchive &archive,
                torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  m->load(archive);
  m->forward(x);
}

void annotatedLoader(const Config &c, const fs::path &dir, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  restore(*m, dir);
  m->forward(x);
}

void reloaded(const Config &c, const fs::path &dir, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  m = metaguard::from_pretrained<Encoder>(dir);
  m->forward(x);
}

// The load keeps the parameter objects the optimizer holds.
void optimizerBuiltOnSkeleton(const Config &c, const fs::path &dir) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  torch::optim::Adam opt(m->parameters());
  metaguard::load_weights(*m, dir);
  opt.step();
}

// ---- Paths -----------------------------------------------------------------

void loadedOnOnePath(const Config &c, const fs::path &dir, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  if (flag())
    metaguard::load_weights(*m, dir);
  m->forward(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'm' before it has weights
  // CHECK-NOTES: :[[@LINE-5]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-6]]:12: note: 'metaguard::with_meta_device' runs this lambda
}

void loadedOnEveryPath(const Config &c, const fs::path &dir, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  if (flag())
    metaguard::load_weights(*m, dir);
  else
    torch::load(m, "encoder.pt");
  m->forward(x);
}

void useInLoopBeforeLoad(const Config &c, const fs::path &dir,
                         torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  for (int i = 0; i < 3; ++i) {
    m->forward(x);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: running the forward pass of empty model 'm' before it has weights
    // CHECK-NOTES: :[[@LINE-4]]:12: note: 'm' is built here
    // CHECK-NOTES: :[[@LINE-5]]:12: note: 'metaguard::with_meta_device' runs this lambda
    metaguard::load_weights(*m, dir);
  }
}

// A load inside try whose handler falls through does not count on the
// handler's path.
void loadFailsQuietly(const Config &c, const fs::path &dir, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  try {
    metaguard::load_weights(*m, dir);
  } catch (const std::exception &) {
    std::cerr << "no checkpoint\n";
  }
  m->forward(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'm' before it has weights
  // CHECK-NOTES: :[[@LINE-8]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-9]]:12: note: 'metaguard::with_meta_device' runs this lambda
}

void useInHandler(const Config &c, const fs::path &dir, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  try {
    metaguard::load_weights(*m, dir);
    m->forward(x);
  } catch (...) {
    metaguard::save_pretrained(*m, "partial");
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: calling 'metaguard::save_pretrained' on empty model 'm' before it has weights
    // CHECK-NOTES: :[[@LINE-7]]:12: note: 'm' is built here
    // CHECK-NOTES: :[[@LINE-8]]:12: note: 'metaguard::with_meta_device' runs this lambda
  }
}

void handlerRethrows(const Config &c, const fs::path &dir, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  try {
    metaguard::load_weights(*m, dir);
  } catch (const std::exception &) {
    throw std::runtime_error("cannot load " + dir.string());
  }
  m->forward(x);
}

void handlerLoadsFallback(const Config &c, const fs::path &dir,
                          const fs::path &fallback, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  try {
    metaguard::load_weights(*m, dir);
  } catch (const std::exception &) {
    metaguard::load_weights(*m, fallback);
  }
  m->forward(x);
}

// ---- Not uses, and models that are not empty -------------------------------

void inspect(const Config &c, const metaguard::MaxMemory &memory) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  long total = 0;
  for (auto &item : m->named_parameters())
    total += item.value().numel() + item.value().sizes().size() +
             item.value().size(0);
  auto dtype = m->weight.dtype();
  auto map = metaguard::infer_auto_device_map(*m, memory, {});
  std::cout << *m << m << m->name();
  m->to(torch::kHalf);
  m->weight.to(torch::kHalf);
  m->eval();
}

void builtOnCpu(const Config &c, torch::Tensor x) {
  Encoder m(c);
  m->forward(x);
}

void cpuScopeInsideMeta(const Config &c, torch::Tensor x) {
  auto guard = metaguard::init_empty_weights();
  {
    metaguard::DeviceScope cpu(torch::kCPU);
    Encoder m(c);
    m->forward(x);
  }
}

void nullHolder(torch::Tensor x) {
  auto guard = metaguard::init_empty_weights();
  Encoder m{nullptr};
  m->forward(x);
}

void builtAfterReset(const Config &c, torch::Tensor x) {
  metaguard::set_default_device("meta");
  metaguard::reset_default_device();
  Encoder m(c);
  m->forward(x);
}

void rebuiltOnCpu(const Config &c, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Encoder(c); });
  m = Encoder(c);
  m->forward(x);
}

void otherModelUsed(const Config &c, torch::Tensor x) {
  auto empty = metaguard::with_meta_device([&] { return Encoder(c); });
  Encoder other(c);
  other->forward(x);
}

// ---- Parts of a model ------------------------------------------------------

// Weights for a submodule are weights for that submodule only.
void submoduleLoaded(const Config &c, const fs::path &dir, torch::Tensor x) {
  auto m = metaguard::with_meta_device([&] { return Pair(c); });
  metaguard::load_weights(*m->first, dir);
  m->first->forward(x);
  m->second->forward(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'm.second' before it has weights
  // CHECK-NOTES: :[[@LINE-5]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-6]]:12: note: 'metaguard::with_meta_device' runs this lambda
  m->forward(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'm' before it has weights
  // CHECK-NOTES: :[[@LINE-9]]:12: note: 'm' is built here
  // CHECK-NOTES: :[[@LINE-10]]:12: note: 'metaguard::with_meta_device' runs this lambda
}

// register_module hands back the module it is given.
void registered(torch::nn::Module &parent, const Config &c, torch::Tensor x) {
  auto guard = metaguard::init_empty_weights();
  auto sub =
      parent.register_module("encoder", std::make_shared<EncoderImpl>(c));
  sub->forward(x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: running the forward pass of empty model 'sub' before it has weights
  // CHECK-NOTES: :[[@LINE-3]]:41: note: 'sub' is built here
  // CHECK-NOTES: :[[@LINE-6]]:8: note: meta-device scope 'guard' is active
}
