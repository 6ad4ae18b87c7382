// Loading Hugging Face checkpoints into LibTorch modules: transformers'
// from_config / from_pretrained, with the meta-scope rule enforced.
//
//   struct TinyImpl : torch::nn::Module { explicit TinyImpl(const metaguard::Config &); ... };
//   TORCH_MODULE(Tiny);
//   Tiny model = metaguard::from_pretrained<Tiny>("checkpoints/tiny");
//
// The model is built on the meta device (no memory for its weights), then
// every parameter and buffer is materialised from the checkpoint in place:
// on the CPU with the checkpoint's dtype the tensor points into the privately
// mapped file (no copy at all); otherwise it is read straight into its final
// dtype and device. Peak memory is about the model's size plus one tensor.
#pragma once

#include <metaguard/checkpoint.h> // SafetensorsCheckpoint, which it declared in the first release
#include <metaguard/checkpoint_reader.h>
#include <metaguard/config.h>
#include <metaguard/device.h>
#include <metaguard/device_map.h>
#include <metaguard/offload_options.h>
#include <metaguard/pretrained_model.h>
#include <metaguard/safetensors.h>

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace metaguard {

struct LoadOptions {
  // Where weights go: empty means "the ambient device, else the CPU";
  // {"": device} / DeviceMap::on(device) puts everything on one device;
  // several entries, "disk" or a strategy (DeviceMap::automatic(), ...) are
  // resolved and dispatched as dispatch_model does, disk parameters being
  // read from the checkpoint shards on demand.
  DeviceMap device_map = {};
  // Converts floating-point weights to this dtype; without it each weight
  // takes the dtype of the model's parameter (the checkpoint's when equal).
  std::optional<torch::Dtype> dtype = {};
  // Not needed: disk weights are read in place from the checkpoint's files
  // (safetensors shards or pytorch_model.bin archives); kept for API parity
  // with transformers.
  std::filesystem::path offload_folder = {};
  // Budgets for the automatic device-map strategies.
  MaxMemory max_memory = {};
  // Module type names that a strategy must not split across devices.
  std::vector<std::string> no_split_modules = {};
  // Missing or unexpected keys are an error; false makes them one warning
  // (missing tensors keep the values the model was built with; buffers
  // without values get the ones their constructor computes when from_config
  // built the model; other tensors without values, on meta or holding
  // to_empty's poison, become zeros, named in the warning).
  bool strict = true;
  // Reader limits (header size cap).
  SafetensorsOptions safetensors = {};
  // How "disk" blocks are read when used (read-ahead depth; see
  // docs/runtime-offload.md).
  OffloadOptions offload = {};
};

namespace detail {

// The torch::nn::Module inside a model value: a module holder (TORCH_MODULE),
// a shared_ptr to a module, or a module itself.
template <class Model> torch::nn::Module &module_of(Model &model) {
  if constexpr (torch::detail::is_module_holder<Model>::value) {
    return *model.ptr();
  } else if constexpr (std::is_base_of_v<torch::nn::Module, Model>) {
    return model;
  } else {
    static_assert(std::is_base_of_v<torch::nn::Module, typename Model::element_type>,
                  "Model must be a torch::nn::Module, a module holder (TORCH_MODULE) or a "
                  "shared_ptr to a module");
    return *model;
  }
}

// Remembers the config a model was built from, for save_pretrained: a
// PreTrainedModel keeps it (set_config); for any other module the runtime
// keeps it, recognising the module later by its tensors.
void remember_config(torch::nn::Module &module, const Config &config);

template <class Model> Model construct(const Config &config) {
  static_assert(std::is_constructible_v<Model, const Config &> ||
                    torch::detail::is_module_holder<Model>::value ||
                    std::is_base_of_v<torch::nn::Module, Model>,
                "from_config<Model> constructs Model(config): give Model (or its Impl) a "
                "constructor taking const metaguard::Config&");
  Model model(config);
  remember_config(module_of(model), config);
  return model;
}

// Turns every parameter (and buffer, when include_buffers) that is not on
// meta yet, and for which `select` says yes (all when empty), into a meta
// tensor of the same shape and dtype, in place: the Parameter objects stay
// the ones the module holds, their storage is freed.
void release_to_meta(torch::nn::Module &module, bool include_buffers,
                     const std::function<bool(const std::string &)> &select = {});

// The meta-scope rule. Returns the device map to load with: the explicit
// one, else {"": ambient device}, else {"": cpu}. With the meta device
// ambient and no explicit map it raises MetaDeviceError under the policy
// (Throw throws, Abort aborts, Warn prints and loads onto the CPU, Off loads
// onto the CPU without a word).
DeviceMap load_device_map(const char *api, const std::filesystem::path &dir,
                          const LoadOptions &options);

std::shared_ptr<const CheckpointReader>
open_weights(const std::filesystem::path &dir, const DeviceMap &map, const LoadOptions &options);

// Builds Model(config) with its parameters on meta, keeping real the ones
// the checkpoint does not have (they keep their initial values).
void prepare_skeleton(torch::nn::Module &module, const CheckpointReader &checkpoint);

// Model(config) with every factory call (torch::nn layers included) on meta,
// or nothing when the constructor needs real values (it reads one with
// item(), copies one to a std::vector, ...: LibTorch throws on a meta
// tensor). Callers then build it the previous way; a constructor that fails
// for another reason fails again there, with its own error.
template <class Model> std::optional<Model> construct_on_meta(const Config &config) {
  try {
    MetaDeviceScope scope(/*include_buffers=*/true);
    return construct<Model>(config);
  } catch (const c10::Error &) {
    return std::nullopt;
  }
}

// Whether the module holds a defined buffer.
bool has_buffers(const torch::nn::Module &module);
// Whether every defined parameter and buffer has a tensor in the checkpoint.
bool checkpoint_covers(const torch::nn::Module &module, const CheckpointReader &checkpoint);

// The model from_pretrained loads into: built entirely on meta when the
// checkpoint holds every parameter and buffer (nothing is allocated or
// initialised); otherwise built with parameters only on meta and the slots
// the checkpoint lacks kept real, so they keep their constructed values.
template <class Model>
Model build_skeleton(const Config &config, const CheckpointReader &checkpoint) {
  if (meta_factories_available()) {
    std::optional<Model> model = construct_on_meta<Model>(config);
    if (model && checkpoint_covers(module_of(*model), checkpoint))
      return std::move(*model);
  }
  Model model = [&]() -> Model {
    // Parameters only: buffers are small and often computed, not saved.
    MetaDeviceScope scope(/*include_buffers=*/false);
    return construct<Model>(config);
  }();
  prepare_skeleton(module_of(model), checkpoint);
  return model;
}

void load_checkpoint(torch::nn::Module &module,
                     const std::shared_ptr<const CheckpointReader> &checkpoint,
                     const DeviceMap &map, const LoadOptions &options);

// With the empty-model checks on (debug_checks.h) and the meta device
// ambient: names every meta tensor of `module`, which from_config built
// empty, for the checks' messages.
void note_built_empty(const torch::nn::Module &module);

// How to get the buffers a model's constructor computes (a rotary inv_freq,
// position ids) when the model was built with its buffers on meta, where
// they have no value: build the model again under init_empty_weights(),
// which keeps buffers real and puts parameters on meta (no parameter
// memory), and take its buffers by name.
using BufferRecipe = std::function<NamedTensors()>;
template <class Model> BufferRecipe buffer_recipe(const Config &config) {
  return [config] {
    auto scope = init_empty_weights();
    Model model(config);
    NamedTensors buffers;
    for (const auto &item : module_of(model).named_buffers(/*recurse=*/true))
      buffers.emplace_back(item.key(), item.value());
    return buffers;
  };
}
// Leaves `recipe` for the meta buffers of `module` (computed_buffers.cpp): a
// load that does not read them from the checkpoint recomputes them with it.
void remember_buffer_recipe(const torch::nn::Module &module, BufferRecipe recipe);

} // namespace detail

// Constructs Model(config). Under a meta scope every parameter (and buffer
// when the scope includes buffers) ends on the meta device: layers that
// allocate through metaguard::tensor_options() allocate nothing, and the
// others' (torch::nn layers allocate on the CPU) are released right after
// construction. Such an empty model is for planning (shapes, dtypes,
// infer_auto_device_map) until it is given weights: load_weights,
// load_checkpoint_and_dispatch, attach_offload_hooks or to_empty. In debug
// builds its first use without them raises MetaDeviceError (debug_checks.h).
template <class Model> Model from_config(const Config &config) {
  if (meta_device_active() && !ambient_includes_buffers() && meta_factories_available()) {
    // Buffers must stay real, but factory functions cannot tell a future
    // buffer from a parameter: build everything on meta (no allocation, no
    // initialisation kernel), and keep that unless the model has buffers.
    std::optional<Model> model = detail::construct_on_meta<Model>(config);
    if (model && !detail::has_buffers(detail::module_of(*model))) {
      detail::note_built_empty(detail::module_of(*model));
      return std::move(*model);
    }
  }
  Model model = detail::construct<Model>(config);
  if (meta_device_active()) {
    detail::release_to_meta(detail::module_of(model), ambient_includes_buffers());
    detail::note_built_empty(detail::module_of(model));
    // Buffers on meta lost what the constructor computed; a load brings it
    // back with this recipe (checkpoints do not hold non-persistent buffers).
    if (ambient_includes_buffers() && detail::has_buffers(detail::module_of(model)))
      detail::remember_buffer_recipe(detail::module_of(model), detail::buffer_recipe<Model>(config));
  }
  return model;
}

// Builds Model(config.json of `dir`) on meta and loads the checkpoint of
// `dir` into it. Throws MetaDeviceError when called with the meta device
// ambient and no LoadOptions.device_map (see detail::load_device_map),
// FormatError for anything wrong with the files or a mismatch with the model.
template <class Model>
METAGUARD_LOADS_WEIGHTS Model from_pretrained(const std::filesystem::path &dir,
                                              const LoadOptions &options = {}) {
  const DeviceMap map = detail::load_device_map("from_pretrained", dir, options);
  const auto checkpoint = detail::open_weights(dir, map, options);
  const Config config = load_config(checkpoint->folder());
  Model model = detail::build_skeleton<Model>(config, *checkpoint);
  detail::load_checkpoint(detail::module_of(model), checkpoint, map, options);
  return model;
}

// Loads the checkpoint of `dir` (a folder, a .safetensors file or an index)
// into an already built module, in place: its Parameter objects stay the
// same, their data becomes the checkpoint's. Same rule and errors as
// from_pretrained. Afterwards no tensor is without values
// (docs/runtime-loading.md, "After a load"): computed buffers of a model
// from_config built with buffers on meta are recomputed; non-persistent
// buffers nothing can compute raise one MetaDeviceError (on meta) or
// UninitializedMemoryError (to_empty's poison) under the Policy, naming
// them, before anything changes. Declared ties hold (one tensor). A device
// map splitting a tie between one device and "disk" keeps the tensor in
// memory on that device, with a warning naming the tie.
METAGUARD_LOADS_WEIGHTS void load_weights(torch::nn::Module &module,
                                          const std::filesystem::path &dir,
                                          const LoadOptions &options = {});

// accelerate's load_checkpoint_and_dispatch: gives an empty model (built
// with from_config<Model>(config) or Model(config) under a meta scope) the
// weights of `checkpoint` (a folder, a .safetensors or pytorch_model.bin file,
// or a sharded checkpoint's index) and places them as options.device_map
// says: on devices, and "disk" entries left meta behind offload hooks that
// read the checkpoint's files in place (no offload folder). The model keeps
// its Parameter objects. Strategies (DeviceMap::automatic(), ...) are resolved
// with options.max_memory and options.no_split_modules; without a map the
// weights go to the ambient device, else the CPU. Call it after the meta
// scope: with the meta device ambient and no device map it raises
// MetaDeviceError as load_weights does. Missing or unexpected keys and shape
// mismatches raise FormatError naming them and the checkpoint, before any
// tensor changes (accelerate's default is not strict: options.strict = false
// warns instead). Same values as from_pretrained of the checkpoint.
METAGUARD_LOADS_WEIGHTS void load_checkpoint_and_dispatch(torch::nn::Module &model,
                                                          const std::filesystem::path &checkpoint,
                                                          const LoadOptions &options = {});

} // namespace metaguard
