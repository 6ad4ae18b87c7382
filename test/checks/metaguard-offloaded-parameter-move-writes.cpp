// RUN: %check_clang_tidy %s metaguard-offloaded-parameter-move
//
// Writes that never land: in-place tensor methods and
// torch::nn::init initialisers on parameters of a dispatched model,
// optimizers stepping over its parameters, checkpoints loaded into it, and
// a model an object keeps dispatched across its methods.

#include <metaguard/metaguard.h>

#include <memory>

namespace fs = std::filesystem;
using metaguard::Config;
using metaguard::DeviceMap;

struct BlockImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x);
  torch::Tensor weight;
  torch::Tensor bias;
};
TORCH_MODULE(Block);

struct LMImpl : metaguard::PreTrainedModel {
  explicit LMImpl(const Config &);
  torch::Tensor forward(torch::Tensor x);
  Block body{nullptr};
  Block head{nullptr};
};
TORCH_MODULE(LM);

bool flag();

// ---- 1. In-place tensor methods --------------------------------------------

void scaleAfterLoading(const fs::path &dir, const DeviceMap &map) {
  auto lm = metaguard::from_pretrained<LM>(dir, {.device_map = map});
  for (auto &item : lm->named_parameters())
    item.value().mul_(0.5);
  // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'mul_' on a parameter of dispatched model 'lm' goes behind its offloading hook
  // CHECK-NOTES: :[[@LINE-4]]:13: note: 'lm' is loaded by 'metaguard::from_pretrained' with an explicit device map here, which dispatches it
}

void everyInPlaceMethod(LM lm, const DeviceMap &map, torch::Tensor x) {
  metaguard::dispatch_model(*lm, map);
  lm->head->weight.zero_();
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'zero_' on a parameter of 'lm.head' of dispatched model 'lm'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'lm' is dispatched here by 'metaguard::dispatch_model'
  lm->head->bias.clamp_(-1, 1);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'clamp_' on a parameter of 'lm.head' of dispatched model 'lm'
  // CHECK-NOTES: :[[@LINE-6]]:3: note: 'lm' is dispatched here by 'metaguard::dispatch_model'
  auto w = lm->named_parameters()["body.weight"];
  w.masked_fill_(x, 0.0);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'masked_fill_' on a parameter of dispatched model 'lm'
  // CHECK-NOTES: :[[@LINE-10]]:3: note: 'lm' is dispatched here by 'metaguard::dispatch_model'
  lm->parameters()[0].index_put_({x}, x);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'index_put_' on a parameter of dispatched model 'lm'
  // CHECK-NOTES: :[[@LINE-13]]:3: note: 'lm' is dispatched here by 'metaguard::dispatch_model'
  torch::Tensor &b = lm->body->bias.add_(x);
  // CHECK-NOTES: :[[@LINE-1]]:22: warning: 'add_' on a parameter of 'lm.body' of dispatched model 'lm'
  // CHECK-NOTES: :[[@LINE-16]]:3: note: 'lm' is dispatched here by 'metaguard::dispatch_model'
}

void chainedInPlaceMethods(LM lm, const DeviceMap &map) {
  metaguard::dispatch_model(*lm, map);
  lm->head->weight.mul_(2).normal_();
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: '{{normal_|mul_}}' on a parameter of 'lm.head' of dispatched model 'lm'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'lm' is dispatched here by 'metaguard::dispatch_model'
}

void outOfPlaceAndCopiesAreFine(LM lm, const DeviceMap &map, torch::Tensor x) {
  metaguard::dispatch_model(*lm, map);
  auto scaled = lm->head->weight.mul(2);
  auto sum = lm->head->weight.add(x);
  scaled.mul_(0.5);
  auto copy = metaguard::load_offloaded_parameter(*lm, "head.weight");
  copy.normal_();
  auto cloned = lm->head->weight.clone();
  cloned.zero_();
  auto moved = lm->head->bias.to(torch::kCUDA);
  moved.add_(x);
  // Autograd flags are no value a hook restores.
  for (auto &p : lm->parameters())
    p.requires_grad_(false);
  // Gradients are not the parameter.
  lm->head->weight.grad().zero_();
}

void inPlaceBeforeDispatchIsFine(LM lm, const DeviceMap &map) {
  lm->head->weight.normal_();
  metaguard::dispatch_model(*lm, map);
}

void inPlaceNeverDispatchedIsFine(LM lm) { lm->head->weight.zero_(); }

void inPlaceAfterInMemoryMapIsFine(LM lm) {
  metaguard::dispatch_model(*lm, DeviceMap::on(torch::kCPU));
  lm->head->weight.zero_();
}

void inPlaceGuarded(LM lm, const DeviceMap &map) {
  metaguard::dispatch_model(*lm, map);
  if (!metaguard::has_offloaded_parameters(*lm))
    lm->head->weight.zero_();
}

// ---- 2. torch::nn::init initialisers ---------------------------------------

void reinitialiseHead(LM lm, const DeviceMap &map) {
  metaguard::dispatch_model(*lm, map);
  torch::nn::init::normal_(lm->head->weight, 0.0, 0.02);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'torch::nn::init::normal_' on a parameter of 'lm.head' of dispatched model 'lm'
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'lm' is dispatched here by 'metaguard::dispatch_model'
  for (auto &p : lm->parameters())
    torch::nn::init::zeros_(p);
  // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'torch::nn::init::zeros_' on a parameter of dispatched model 'lm'
  // CHECK-NOTES: :[[@LINE-7]]:3: note: 'lm' is dispatched here by 'metaguard::dispatch_model'
}

void initialiseACopyIsFine(LM lm, const DeviceMap &map) {
  metaguard::dispatch_model(*lm, map);
  auto w = metaguard::load_offloaded_parameter(*lm, "head.weight");
  torch::nn::init::xavier_uniform_(w);
  double gain = torch::nn::init::calculate_gain(0);
}

// ---- 3. Optimizers over the parameters ---------------------------------------

void fineTuneOffloaded(const fs::path &dir, const DeviceMap &map) {
  auto lm = metaguard::from_pretrained<LM>(dir, {.device_map = map});
  torch::optim::AdamW opt(lm->parameters(), 1e-4);
  for (int i = 0; i < 3; ++i) {
    opt.zero_grad();
    opt.step();
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'step' of an optimizer over the parameters of dispatched model 'lm' updates them in place behind their offloading hooks
    // CHECK-NOTES: :[[@LINE-5]]:23: note: the optimizer 'opt' is built here from the parameters of 'lm'
    // CHECK-NOTES: :[[@LINE-7]]:13: note: 'lm' is loaded by 'metaguard::from_pretrained' with an explicit device map here, which dispatches it
  }
}

void optimizerOverASubmodule(LM lm, const DeviceMap &map) {
  auto opt = std::make_unique<torch::optim::Adam>(lm->head->parameters());
  metaguard::dispatch_model(*lm, map);
  opt->step();
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'step' of an optimizer over the parameters of 'lm.head' of dispatched model 'lm'
  // CHECK-NOTES: :[[@LINE-4]]:8: note: the optimizer 'opt' is built here from the parameters of 'lm.head'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'lm' is dispatched here by 'metaguard::dispatch_model'
}

void optimizerOverCollectedParameters(LM lm, const DeviceMap &map) {
  metaguard::dispatch_model(*lm->body, map);
  std::vector<torch::Tensor> trainable;
  for (auto &item : lm->named_parameters())
    trainable.push_back(item.value());
  torch::optim::Adam opt(trainable);
  opt.step();
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'step' of an optimizer over the parameters of dispatched model 'lm'
  // CHECK-NOTES: :[[@LINE-3]]:22: note: the optimizer 'opt' is built here from the parameters of 'lm'
  // CHECK-NOTES: :[[@LINE-8]]:3: note: 'lm.body' is dispatched here by 'metaguard::dispatch_model'
}

void optimizerOverParameterGroups(LM lm, const DeviceMap &map) {
  metaguard::dispatch_model(*lm, map);
  torch::optim::Adam opt(
      {torch::optim::OptimizerParamGroup(lm->head->parameters())});
  opt.step();
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'step' of an optimizer over the parameters of 'lm.head' of dispatched model 'lm'
  // CHECK-NOTES: :[[@LINE-4]]:22: note: the optimizer 'opt' is built here from the parameters of 'lm.head'
  // CHECK-NOTES: :[[@LINE-6]]:3: note: 'lm' is dispatched here by 'metaguard::dispatch_model'
}

void optimizerWithoutStepIsFine(LM lm, const DeviceMap &map) {
  metaguard::dispatch_model(*lm, map);
  torch::optim::AdamW opt(lm->parameters());
  opt.zero_grad();
}

void optimizerStepBeforeDispatchIsFine(LM lm, const DeviceMap &map) {
  torch::optim::AdamW opt(lm->parameters());
  opt.step();
  metaguard::dispatch_model(*lm, map);
}

void optimizerOverAnotherModelIsFine(LM lm, LM other, const DeviceMap &map) {
  metaguard::dispatch_model(*lm, map);
  torch::optim::AdamW opt(other->parameters());
  opt.step();
}

void optimizerOverSiblingIsFine(LM lm, const DeviceMap &map) {
  metaguard::dispatch_model(*lm->body, map);
  torch::optim::AdamW opt(lm->head->parameters());
  opt.step();
}

void optimizerAfterInMemoryMapIsFine(LM lm, const DeviceMap &map) {
  metaguard::dispatch_model(*lm, map);
  metaguard::dispatch_model(*lm, DeviceMap::on(torch::kCUDA));
  torch::optim::AdamW opt(lm->parameters());
  opt.step();
}

void optimizerGuarded(LM lm, const DeviceMap &map) {
  metaguard::dispatch_model(*lm, map);
  torch::optim::AdamW opt(lm->parameters());
  if (metaguard::has_offloaded_parameters(*lm))
    return;
  opt.step();
}

// ---- 4. Checkpoints loaded into the model ------------------------------------

void loadIntoDispatched(LM lm, const DeviceMap &map,
                        torch::serialize::InputArchive &archive) {
  metaguard::dispatch_model(*lm->body, map);
  torch::load(lm, "finetuned.pt");
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'torch::load' writes a checkpoint into the parameters of dispatched model 'lm' behind their offloading hooks
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'lm.body' is dispatched here by 'metaguard::dispatch_model'
  lm->body->load(archive);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'torch::nn::Module::load' writes a checkpoint into the parameters of 'lm.body' of dispatched model 'lm'
  // CHECK-NOTES: :[[@LINE-6]]:3: note: 'lm.body' is dispatched here by 'metaguard::dispatch_model'
}

void loadBeforeDispatchIsFine(LM lm, const DeviceMap &map) {
  torch::load(lm, "finetuned.pt");
  metaguard::dispatch_model(*lm, map);
}

void loadIntoSiblingIsFine(LM lm, const DeviceMap &map,
                           torch::serialize::InputArchive &archive) {
  metaguard::dispatch_model(*lm->body, map);
  lm->head->load(archive);
}

// ---- Through helpers --------------------------------------------------------

void scaleAll(LM &model) {
  for (auto &p : model->parameters())
    p.mul_(0.5);
}

void trainStep(LM &model) {
  torch::optim::Adam opt(model->parameters());
  opt.step();
}

void helpersThatWrite(LM lm, const DeviceMap &map) {
  metaguard::dispatch_model(*lm, map);
  scaleAll(lm);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'scaleAll' changes a parameter of dispatched model 'lm' in place (with 'mul_')
  // CHECK-NOTES: :[[@LINE-12]]:5: note: its parameter is changed here with 'mul_', in 'scaleAll'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'lm' is dispatched here by 'metaguard::dispatch_model'
  trainStep(lm);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'trainStep' changes a parameter of dispatched model 'lm' in place (with 'step')
  // CHECK-NOTES: :[[@LINE-11]]:3: note: its parameter is changed here with 'step', in 'trainStep'
  // CHECK-NOTES: :[[@LINE-8]]:3: note: 'lm' is dispatched here by 'metaguard::dispatch_model'
}

// ---- 5. A model kept by an object across its methods -----------------------

class Trainer {
public:
  void load(const fs::path &dir, const metaguard::LoadOptions &options) {
    model_ = metaguard::from_pretrained<LM>(dir, options);
  }
  void place(const DeviceMap &map) { metaguard::dispatch_model(*model_, map); }
  void toGpu() {
    model_->to(torch::kCUDA);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: moving dispatched model 'model_' with 'to'
    // CHECK-NOTES: :[[@LINE-4]]:38: note: 'model_' is dispatched here by 'metaguard::dispatch_model'
    // CHECK-NOTES: :[[@LINE-5]]:8: note: the object keeps the model dispatched after 'Trainer::place' returns, and this method does not check has_offloaded_parameters first
  }
  void rescale() {
    model_->head->weight.mul_(0.5);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'mul_' on a parameter of 'model_.head' of dispatched model 'model_'
    // CHECK-NOTES: :[[@LINE-10]]:38: note: 'model_' is dispatched here by 'metaguard::dispatch_model'
    // CHECK-NOTES: :[[@LINE-11]]:8: note: the object keeps the model dispatched after 'Trainer::place' returns, and this method does not check has_offloaded_parameters first
  }
  void guardedToGpu() {
    if (metaguard::has_offloaded_parameters(*model_))
      return;
    model_->to(torch::kCUDA);
  }
  void backInMemoryFirst() {
    metaguard::dispatch_model(*model_, DeviceMap::on(torch::kCUDA));
    model_->to(torch::kCUDA);
  }
  void freshModelFirst(const Config &cfg) {
    model_ = LM(cfg);
    model_->to(torch::kCUDA);
  }
  void readOnly() { auto w = model_->head->weight.sum(); }

private:
  LM model_{nullptr};
};

class Finetuner {
public:
  void load(const fs::path &dir) {
    metaguard::LoadOptions disk_options;
    disk_options.device_map = {{"", "cpu"}, {"head", "disk"}};
    model_ = metaguard::from_pretrained<LM>(dir, disk_options);
  }
  void train() {
    torch::optim::AdamW opt(model_->parameters());
    opt.step();
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'step' of an optimizer over the parameters of dispatched model 'model_'
    // CHECK-NOTES: :[[@LINE-3]]:25: note: the optimizer 'opt' is built here from the parameters of 'model_'
    // CHECK-NOTES: :[[@LINE-7]]:14: note: 'model_' is loaded by 'metaguard::from_pretrained' with an explicit device map here, which dispatches it
    // CHECK-NOTES: :[[@LINE-11]]:8: note: the object keeps the model dispatched after 'Finetuner::load' returns, and this method does not check has_offloaded_parameters first
  }

private:
  LM model_{nullptr};
};

class Server {
public:
  Server(const fs::path &dir, const DeviceMap &map)
      : model_(metaguard::from_pretrained<LM>(dir, {.device_map = map})) {}
  void warmUp() {
    model_->to(torch::kCUDA);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: moving dispatched model 'model_' with 'to'
    // CHECK-NOTES: :[[@LINE-4]]:16: note: 'model_' is loaded by 'metaguard::from_pretrained' with an explicit device map here, which dispatches it
    // CHECK-NOTES: :[[@LINE-6]]:3: note: the object keeps the model dispatched after 'Server::Server' returns, and this method does not check has_offloaded_parameters first
  }

private:
  LM model_{nullptr};
};

// A class that never dispatches its model may move it.
class Plain {
public:
  void build(const Config &cfg) { model_ = LM(cfg); }
  void toGpu() { model_->to(torch::kCUDA); }

private:
  LM model_{nullptr};
};

// A method that ends the dispatch before returning leaves nothing behind.
class Cycle {
public:
  void run(const DeviceMap &map) {
    metaguard::dispatch_model(*model_, map);
    metaguard::dispatch_model(*model_, DeviceMap::on(torch::kCPU));
  }
  void toGpu() { model_->to(torch::kCUDA); }

private:
  LM model_{nullptr};
};
