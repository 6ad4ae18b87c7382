// What a model says about its checkpoint keys, as transformers' model classes
// and PyTorch's nn.Module say it:
//
//   struct RotaryImpl : metaguard::Module {
//     RotaryImpl(...) { register_buffer("inv_freq", compute(...),
//     /*persistent=*/false); }
//   };
//   struct GPT2LMHeadModelImpl : metaguard::PreTrainedModel {
//     std::string base_model_prefix() const override { return "transformer"; }
//     TiedWeights tied_weights_keys() const override {
//       return {{"lm_head.weight", "transformer.wte.weight"}};
//     }
//   };
//
// from_pretrained / load_weights and save_pretrained read these declarations
// (docs/runtime-loading.md, "Checkpoint keys"): a non-persistent buffer is
// never read from nor written to a checkpoint, a tied target takes its
// source's tensor and is not saved, the base model prefix is added or
// stripped when the checkpoint is of the other kind, and the ignore lists
// keep the named keys out of the missing / unexpected reports.
#pragma once

#include <torch/nn/module.h>
#include <torch/types.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace metaguard {

namespace detail {
// Remembers a module constructed while the meta device is ambient and the
// empty-model checks (debug_checks.h) are on, for as long as it lives, so
// that their messages can name its tensors; remembers nothing otherwise. A
// copy remembers nothing (its tensors are copies).
class BuiltEmptyRecord {
public:
  explicit BuiltEmptyRecord(const torch::nn::Module *module);
  BuiltEmptyRecord(const BuiltEmptyRecord &) noexcept {}
  // Assigns nothing, so assigning a record to itself is harmless too.
  // NOLINTNEXTLINE(bugprone-unhandled-self-assignment)
  BuiltEmptyRecord &operator=(const BuiltEmptyRecord &) noexcept { return *this; }
  ~BuiltEmptyRecord();

private:
  const torch::nn::Module *module_ = nullptr;
};
} // namespace detail

// target parameter -> source parameter, full names from the declaring module.
using TiedWeights = std::map<std::string, std::string>;

// A torch::nn::Module with what PyTorch's nn.Module and transformers'
// PreTrainedModel add for checkpoints. Non-persistent buffers and tied
// weights are read from every metaguard::Module of a model, each relative to
// its own position (a sub-module at "model.rotary" with buffer "inv_freq"
// names "model.rotary.inv_freq"); base_model_prefix and the ignore lists from
// the module being loaded or saved only, as transformers reads them from the
// class being loaded.
class Module : public torch::nn::Module {
public:
  using torch::nn::Module::Module;
  using torch::nn::Module::register_buffer;

  // PyTorch's register_buffer(name, tensor, persistent): a non-persistent
  // buffer is part of the module (moved with it, used by forward) but not of
  // its checkpoint. Its value comes from the constructor, never from a file.
  torch::Tensor &register_buffer(std::string name, torch::Tensor tensor,
                                 bool persistent);
  // Local names of this module's non-persistent buffers.
  const std::set<std::string> &non_persistent_buffers() const {
    return non_persistent_;
  }

  // transformers' base_model_prefix: the attribute name of the base model
  // inside a model with a head ("bert", "transformer", "model"). Empty: none.
  virtual std::string base_model_prefix() const { return {}; }
  // transformers' _tied_weights_keys (the 5.x mapping form): each target
  // shares its source's tensor. Return only the ties in effect for this
  // model's config (e.g. nothing when tie_word_embeddings is false).
  virtual TiedWeights tied_weights_keys() const { return {}; }
  // transformers' _keys_to_ignore_on_load_missing / _unexpected: regular
  // expressions (ECMAScript, searched anywhere in the full name) for keys
  // that may be absent from / extra in a checkpoint without error or warning.
  virtual std::vector<std::string> keys_to_ignore_on_load_missing() const {
    return {};
  }
  virtual std::vector<std::string> keys_to_ignore_on_load_unexpected() const {
    return {};
  }

private:
  std::set<std::string> non_persistent_;
  detail::BuiltEmptyRecord built_empty_{this};
};

// Parameters and persistent buffers of `module` in registration order,
// without tied targets that share their source's memory: what
// save_pretrained writes (transformers' save_pretrained leaves tied copies
// out in the same way) and what from_pretrained expects to read.
std::vector<std::pair<std::string, torch::Tensor>>
checkpoint_state(const torch::nn::Module &module);

// PyTorch's Module.to_empty: gives every meta parameter and buffer of
// `module` (of its submodules too when `recurse`) memory on `device`, in
// place, filled with poison in every build (a quiet NaN with payload 0xDEAD
// for float32/float64/complex, 0xAD / 0x2D for float16 / bfloat16; the most
// negative value for signed integers, 255 for uint8, true for bool:
// docs/runtime-loading.md, "Memory is not weights"), so that a model used
// before it is initialised never computes with stale memory. With the
// empty-model checks on (debug_checks.h), a CPU tensor it allocates is
// marked uninitialised until something writes it (an nn::init function,
// reset_parameters, copy_, fill_, any in-place operator, a load): an
// operator that reads it while it still holds only poison, save_pretrained
// and PreTrainedModel::to(device) raise UninitializedMemoryError naming it.
// In place: the Parameter objects stay the module's, so an optimizer built
// on the empty model steps the same tensors once you have initialised them. Unlike PyTorch, which replaces every tensor with
// uninitialised memory, real tensors (buffers init_empty_weights() kept,
// parameters already loaded) keep their values, copied to `device` if they
// are elsewhere; for a model built entirely on meta the two are the same.
// A model built empty and given memory this way is no longer refused with
// MetaDeviceError; its uninitialised tensors are, as above, until written. Throws OffloadError, before changing
// anything, when a tensor it would touch is offloaded (its bytes live on
// disk behind a hook: change placements with dispatch_model instead).
void to_empty(torch::nn::Module &module, torch::Device device, bool recurse = true);

} // namespace metaguard
