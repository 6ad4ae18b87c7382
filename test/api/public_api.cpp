// metaguard's public API contract.
//
// A program written only against the public headers, the way README.md ("The
// runtime"), docs/runtime-loading.md, docs/runtime-offload.md and
// docs/interop.md show them, that uses every public function and type at least
// once and asserts what the docs promise. It is compiled with
// -Werror=deprecated-declarations, so it uses the current API only. If a change
// makes it fail to compile, or to pass, that change breaks the public API.
//
// Checklist: every header of runtime/include/metaguard/ and what of it is used
// here (`namespace detail` and the documented internals are not API):
//
//  metaguard.h        the one include (nothing else is included from metaguard)
//  auto_device_map.h  infer_auto_device_map, resolve_device_map (strategy,
//                     explicit map, uncovered parameters -> Error)
//  checkpoint.h       SafetensorsCheckpoint(location, options), format(),
//                     metadata(), private_tensors(), shard_files(), sharded()
//                     (the deprecated files() is not used:
//                     shard_files()/file_paths())
//  checkpoint_reader.h CheckpointReader (implemented by the program too:
//                     MemoryReader; folder, format, sharded, file_paths,
//                     files, names, contains, info, path_of, metadata, tensor,
//                     private_tensor, private_tensors, tensor(name, dtype,
//                     device)), CheckpointFormat, CheckpointLayout,
//                     kSafetensorsWeightsName, kSafetensorsIndexName,
//                     kPytorchWeightsName, kPytorchIndexName, find_checkpoint,
//                     checkpoint_layout, open_checkpoint (both formats: a
//                     pytorch_model.bin is written with LibTorch's pickler)
//  checkpoint_weights_map.h CheckpointWeightsMap (both constructors, dtypes
//                     and keys maps, contains, load, load_direct,
//                     load_together, names, location, checkpoint())
//  config.h           Config, load_config (folder and file, missing ->
//  FormatError) debug_checks.h     set_empty_model_checks, empty_model_checks
//  device.h           METAGUARD_LOADS_WEIGHTS, parse_device,
//                     set_default_device (all five overloads),
//                     reset_default_device, default_device, ambient_device,
//                     meta_device_active, ambient_includes_buffers,
//                     meta_factories_available, tensor_options, DeviceScope
//                     (device, include_buffers), MetaDeviceScope (both
//                     constructors), init_empty_weights (both),
//                     with_meta_device
//  device_map.h       Placement (five constructors, disk, is_disk, device, str,
//                     ==, !=), DeviceMap (initializer list, automatic,
//                     balanced, balanced_low_0, sequential, on, empty,
//                     strategy, is_explicit, set, entries, placement_for,
//                     has_disk), DeviceMap::Strategy (all five), MaxMemory
//                     (initializer list, empty, set, budget, budgets)
//  dispatch.h         attach_offload_hooks (both overloads), dispatch_model
//                     (both overloads; disk without a folder -> Error)
//  dtype.h            safetensors_dtype_bits, torch_dtype_from_safetensors,
//                     safetensors_dtype_name, torch_dtype_name,
//                     dtype_from_torch_name
//  errors.h           Error, MetaDeviceError, UninitializedMemoryError,
//                     OffloadError, FormatError (both constructors, kind(),
//                     every FormatError::Kind, each one also raised by the
//                     runtime and checked)
//  loading.h          LoadOptions (every field), from_config, from_pretrained,
//                     load_weights, load_checkpoint_and_dispatch (device map
//                     with "disk"), the meta-scope rule (MetaDeviceError)
//  module.h           TiedWeights, Module (register_buffer(name, t,
//  persistent),
//                     non_persistent_buffers, base_model_prefix,
//                     tied_weights_keys, keys_to_ignore_on_load_missing /
//                     _unexpected), checkpoint_state, to_empty (recurse or not)
//  offload_checks.h   set_verify_on_materialise, verify_on_materialise
//  offload_folder.h   numpy_dtype_name, dtype_from_numpy_name, offload_tensors,
//                     OffloadFolder (contains, load, load_direct, names,
//                     location, path, dtype, shape, check)
//  offload_hook.h     load_offloaded_parameter, parameter_value,
//                     has_offloaded_parameters, offloaded_parameter_names,
//                     remove_hook_from_module, verify_dispatch, OnloadGuard
//                     (device), run_onloaded
//  offload_options.h  OffloadReadMode (all three), OffloadOptions (every field)
//  policy.h           Policy (all four; Throw, Warn and Off applied to the
//                     meta-scope rule), policy, set_policy, parse_policy,
//                     to_string
//  pretrained_model.h PreTrainedModel (default, Config and name constructors,
//                     the three to() overloads, config, set_config)
//  safetensors.h      SafetensorsOptions (every field), SafetensorsFile
//                     (constructor, open, path, names, contains, info,
//                     metadata, file_size, populate, data_offset, tensor,
//                     private_tensor, direct_tensor, private_tensors,
//                     tensor(name, dtype, device)), NamedTensors,
//                     save_safetensors
//  safetensors_header.h TensorInfo (fields, nbytes), SafetensorsHeader,
//                     kSafetensorsProbeBytes, safetensors_header_length,
//                     parse_safetensors_header
//  safetensors_weights_map.h  deprecated shim (SafetensorsWeightsMap): not used
//  saving.h           SaveOptions (every field), save_pretrained (single file,
//                     sharded, explicit config, no config)
//  size.h             parse_size, Size (five constructors, bytes)
//  weights_map.h      StorageLocation, WeightsMap (a map of our own with the
//                     default load_together, load_direct and location)
//
// Not exercised, on purpose: placements on GPUs (the program must pass on a
// CPU-only machine: "cuda:N" is only parsed and budgeted), Policy::Abort (it
// ends the process), and whether OffloadReadMode::direct / direct_tensor /
// load_direct really bypass the page cache (it depends on the filesystem of
// the temporary folder; the values are checked either way).
#include <metaguard/metaguard.h>

#include <torch/torch.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

// ---------------------------------------------------------------------------
// A tiny check harness: no test framework, the program is an application.
// REQUIRE prints the failed condition and makes the area function return
// false; main then returns 1. (Not named CHECK: LibTorch's glog has one.)

int checks_passed = 0;

#define REQUIRE(cond)                                                          \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::cerr << __FILE__ << ":" << __LINE__                                 \
                << ": check failed: " #cond "\n";                              \
      return false;                                                            \
    }                                                                          \
    ++checks_passed;                                                           \
  } while (0)

// `stmt` must throw `Type` (and nothing else).
#define REQUIRE_THROWS(Type, stmt)                                             \
  do {                                                                         \
    bool thrown_ = false;                                                      \
    try {                                                                      \
      stmt;                                                                    \
    } catch (const Type &) {                                                   \
      thrown_ = true;                                                          \
    } catch (const std::exception &e_) {                                       \
      std::cerr << __FILE__ << ":" << __LINE__                                 \
                << ": " #stmt " threw another error than " #Type ": "          \
                << e_.what() << "\n";                                          \
      return false;                                                            \
    }                                                                          \
    if (!thrown_) {                                                            \
      std::cerr << __FILE__ << ":" << __LINE__                                 \
                << ": " #stmt " did not throw " #Type "\n";                    \
      return false;                                                            \
    }                                                                          \
    ++checks_passed;                                                           \
  } while (0)

// `stmt` must throw a FormatError whose kind() is FormatError::Kind::`kind_`.
#define REQUIRE_FORMAT_ERROR(kind_, stmt)                                      \
  do {                                                                         \
    bool thrown_ = false;                                                      \
    try {                                                                      \
      stmt;                                                                    \
    } catch (const metaguard::FormatError &e_) {                               \
      if (e_.kind() != metaguard::FormatError::Kind::kind_) {                  \
        std::cerr << __FILE__ << ":" << __LINE__                               \
                  << ": " #stmt " gave FormatError of kind "                   \
                  << kind_name(e_.kind()) << ", not " #kind_ ": " << e_.what() \
                  << "\n";                                                     \
        return false;                                                          \
      }                                                                        \
      thrown_ = true;                                                          \
    } catch (const std::exception &e_) {                                       \
      std::cerr << __FILE__ << ":" << __LINE__                                 \
                << ": " #stmt " threw another error than "                     \
                   "FormatError: "                                             \
                << e_.what() << "\n";                                          \
      return false;                                                            \
    }                                                                          \
    if (!thrown_) {                                                            \
      std::cerr << __FILE__ << ":" << __LINE__                                 \
                << ": " #stmt " did not throw FormatError\n";                  \
      return false;                                                            \
    }                                                                          \
    ++checks_passed;                                                           \
  } while (0)

// Every FormatError::Kind, by name: the switch has no default, so -Wall
// (-Wswitch) reports a kind added to errors.h and not named here.
const char *kind_name(metaguard::FormatError::Kind kind) {
  using Kind = metaguard::FormatError::Kind;
  switch (kind) {
  case Kind::malformed:
    return "malformed";
  case Kind::truncated:
    return "truncated";
  case Kind::unsupported:
    return "unsupported";
  case Kind::missing:
    return "missing";
  case Kind::mismatch:
    return "mismatch";
  case Kind::lfs_pointer:
    return "lfs_pointer";
  case Kind::io:
    return "io";
  }
  return "?";
}

// A fresh folder under the system's temporary directory, removed at the end
// (also when a check fails or something throws).
class TempDir {
public:
  TempDir() {
    const auto stamp =
        std::chrono::steady_clock::now().time_since_epoch().count();
    path_ = fs::temp_directory_path() /
            ("metaguard-public-api-" + std::to_string(::getpid()) + "-" +
             std::to_string(stamp));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  const fs::path &path() const { return path_; }
  fs::path operator/(const std::string &name) const { return path_ / name; }

private:
  fs::path path_;
};

void write_file(const fs::path &file, const std::string &bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read_file(const fs::path &file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A safetensors file by hand: 8-byte little-endian header length, the JSON
// header, the data. For inputs the writer would never produce.
std::string safetensors_bytes(std::string header, const std::string &data) {
  while (header.size() % 8 != 0)
    header += ' ';
  std::string bytes(8, '\0');
  std::uint64_t length = header.size();
  for (int i = 0; i < 8; ++i)
    bytes[i] = static_cast<char>((length >> (8 * i)) & 0xff);
  return bytes + header + data;
}

bool same(const torch::Tensor &a, const torch::Tensor &b) {
  return a.sizes() == b.sizes() && a.dtype() == b.dtype() && torch::equal(a, b);
}

std::set<std::string> names_of(const std::vector<std::string> &names) {
  return {names.begin(), names.end()};
}

// ---------------------------------------------------------------------------
// The models, written as the docs write them.

constexpr std::int64_t kHidden = 8;

// A sub-module with a computed buffer, as a rotary embedding has: PyTorch's
// register_buffer(..., persistent=False), never read from nor written to a
// checkpoint.
struct RotaryImpl : metaguard::Module {
  explicit RotaryImpl(std::int64_t dim) {
    inv_freq = register_buffer(
        "inv_freq",
        1.0 /
            torch::pow(10000.0, torch::arange(0, dim, 2, torch::kFloat) / dim),
        /*persistent=*/false);
  }
  torch::Tensor inv_freq;
};
TORCH_MODULE(Rotary);

torch::Tensor expected_inv_freq() {
  return 1.0 / torch::pow(10000.0, torch::arange(0, kHidden, 2, torch::kFloat) /
                                       kHidden);
}

// The base model: two Linear layers, a persistent buffer and the rotary
// sub-module. It remembers its config (PreTrainedModel(config)), so
// save_pretrained writes config.json without being told.
struct TinyImpl : metaguard::PreTrainedModel {
  explicit TinyImpl(const metaguard::Config &config)
      : metaguard::PreTrainedModel(config) {
    const auto hidden = config.at("hidden_size").get<std::int64_t>();
    fc1 = register_module("fc1", torch::nn::Linear(hidden, hidden));
    fc2 = register_module("fc2", torch::nn::Linear(hidden, hidden));
    rotary = register_module("rotary", Rotary(hidden));
    scale = register_buffer("scale", torch::full({hidden}, 0.5));
  }

  // The checkpoint of TinyLM (below) holds this model under "tiny.".
  std::string base_model_prefix() const override { return "tiny"; }
  // ... and its head, which this model does not have: not worth a warning.
  std::vector<std::string> keys_to_ignore_on_load_unexpected() const override {
    return {"^head\\."};
  }

  torch::Tensor forward(torch::Tensor x) {
    // The fast path of runtime-offload.md: offloaded weights are loaded once
    // for the whole forward, and returned to disk at its end.
    metaguard::OnloadGuard onload(*this);
    x = x.to(onload.device());
    auto h = torch::relu(fc1(x));
    // A leaf module called through run_onloaded, as for modules one cannot
    // edit.
    h = metaguard::run_onloaded(fc2, h);
    return h * scale + rotary->inv_freq.mean();
  }

  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  Rotary rotary{nullptr};
  torch::Tensor scale;
};
TORCH_MODULE(Tiny);

// The layer of test/data/pytorch-reference's state dict that a model may
// hold: fc, a Linear(4, 3) (its README gives the values).
struct ReferenceImpl : metaguard::PreTrainedModel {
  explicit ReferenceImpl(const metaguard::Config &config)
      : metaguard::PreTrainedModel(config) {
    fc = register_module("fc", torch::nn::Linear(4, 3));
  }
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(Reference);

// The base model plus a head tied to fc1's weight, made as LibTorch makes a
// tie (the head registers the source tensor itself) and declared with
// tied_weights_keys; head.bias may be missing from a checkpoint.
struct TinyLMImpl : metaguard::PreTrainedModel {
  explicit TinyLMImpl(const metaguard::Config &config)
      : metaguard::PreTrainedModel(config) {
    tiny = register_module("tiny", Tiny(config));
    head = register_module("head", std::make_shared<metaguard::Module>());
    head_weight = head->register_parameter("weight", tiny->fc1->weight);
    head_bias = head->register_parameter("bias", torch::full({kHidden}, 0.25));
  }
  std::string base_model_prefix() const override { return "tiny"; }
  metaguard::TiedWeights tied_weights_keys() const override {
    return {{"head.weight", "tiny.fc1.weight"}};
  }
  std::vector<std::string> keys_to_ignore_on_load_missing() const override {
    return {"^head\\.bias$"};
  }

  Tiny tiny{nullptr};
  std::shared_ptr<metaguard::Module> head;
  torch::Tensor head_weight, head_bias;
};
TORCH_MODULE(TinyLM);

metaguard::Config tiny_config(std::int64_t hidden = kHidden) {
  return metaguard::Config{{"model_type", "tiny"}, {"hidden_size", hidden}};
}

const std::vector<std::string> kTinyCheckpointKeys = {
    "fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight", "scale"};

// A loader function of the application's own: METAGUARD_LOADS_WEIGHTS makes
// the clang-tidy check treat calls to it as loads.
METAGUARD_LOADS_WEIGHTS Tiny load_tiny(const fs::path &dir) {
  return metaguard::from_pretrained<Tiny>(dir);
}

// Every state tensor (parameters and persistent buffers) of `a` equals `b`'s.
bool same_state(const torch::nn::Module &a, const torch::nn::Module &b) {
  const auto sa = metaguard::checkpoint_state(a);
  const auto sb = metaguard::checkpoint_state(b);
  if (sa.size() != sb.size())
    return false;
  for (std::size_t i = 0; i < sa.size(); ++i)
    if (sa[i].first != sb[i].first || !same(sa[i].second, sb[i].second))
      return false;
  return true;
}

// What the areas share: the working folder, the original model, its
// checkpoint and an input with the model's output on it.
struct Fixture {
  TempDir tmp;
  Tiny original{nullptr};
  fs::path
      checkpoint; // save_pretrained(original): model.safetensors + config.json
  torch::Tensor input, output;
};

// ---------------------------------------------------------------------------
// errors.h, policy.h, size.h, dtype.h

bool check_errors() {
  using metaguard::FormatError;
  // Every error is a metaguard::Error, so callers can catch them all at once.
  REQUIRE_THROWS(metaguard::Error, throw metaguard::MetaDeviceError("meta"));
  REQUIRE_THROWS(metaguard::Error,
                 throw metaguard::UninitializedMemoryError("poison"));
  REQUIRE_THROWS(metaguard::Error, throw metaguard::OffloadError("offload"));
  REQUIRE_THROWS(std::runtime_error, throw metaguard::Error("any"));
  const FormatError lfs(FormatError::Kind::lfs_pointer, "pointer");
  REQUIRE(lfs.kind() == FormatError::Kind::lfs_pointer);
  REQUIRE(std::string(lfs.what()) == "pointer");
  // The message-only constructor of the first release means `malformed`.
  REQUIRE(FormatError("bad").kind() == FormatError::Kind::malformed);
  for (auto kind : {FormatError::Kind::malformed, FormatError::Kind::truncated,
                    FormatError::Kind::unsupported, FormatError::Kind::missing,
                    FormatError::Kind::mismatch, FormatError::Kind::lfs_pointer,
                    FormatError::Kind::io})
    REQUIRE(FormatError(kind, kind_name(kind)).kind() == kind);
  return true;
}

bool check_policy() {
  using metaguard::Policy;
  // Whatever METAGUARD_POLICY says, the checks below expect errors thrown.
  metaguard::set_policy(Policy::Throw);
  for (Policy p : {Policy::Throw, Policy::Abort, Policy::Warn, Policy::Off})
    REQUIRE(metaguard::parse_policy(metaguard::to_string(p)) == p);
  REQUIRE(metaguard::parse_policy("WARN") == Policy::Warn); // case-insensitive
  REQUIRE(metaguard::to_string(Policy::Throw) == "throw");
  REQUIRE_THROWS(metaguard::Error, metaguard::parse_policy("sometimes"));
  metaguard::set_policy(Policy::Warn);
  REQUIRE(metaguard::policy() == Policy::Warn);
  metaguard::set_policy(Policy::Throw);
  REQUIRE(metaguard::policy() == Policy::Throw);
  return true;
}

bool check_sizes() {
  // accelerate's units: GiB/MiB/KiB powers of 2, GB/MB/KB powers of 10.
  REQUIRE(metaguard::parse_size("5GB") == 5'000'000'000);
  REQUIRE(metaguard::parse_size("10GiB") == 10LL << 30);
  REQUIRE(metaguard::parse_size("512MiB") == 512LL << 20);
  REQUIRE(metaguard::parse_size("100KB") == 100'000);
  REQUIRE(metaguard::parse_size("1234") == 1234);
  REQUIRE(metaguard::parse_size("2 kib") == 2048); // spaces and any case
  REQUIRE_THROWS(metaguard::Error, metaguard::parse_size("lots"));
  REQUIRE_THROWS(metaguard::Error,
                 metaguard::parse_size("99999999999999999999GB"));
  // A Size is a byte count or a string parse_size reads.
  REQUIRE(metaguard::Size(std::int64_t{3}).bytes() == 3);
  REQUIRE(metaguard::Size(7).bytes() == 7);
  REQUIRE(metaguard::Size(std::string_view("1KiB")).bytes() == 1024);
  REQUIRE(metaguard::Size("1KB").bytes() == 1000);
  REQUIRE(metaguard::Size(std::string("2MB")).bytes() == 2'000'000);
  return true;
}

bool check_dtypes() {
  REQUIRE(metaguard::safetensors_dtype_bits("F32") == 32);
  REQUIRE(metaguard::safetensors_dtype_bits("U16") ==
          16); // defined, LibTorch 1.13 lacks it
  REQUIRE(!metaguard::safetensors_dtype_bits("F33"));
  REQUIRE(metaguard::torch_dtype_from_safetensors("BF16") == torch::kBFloat16);
  REQUIRE(!metaguard::torch_dtype_from_safetensors("U16"));
  REQUIRE(metaguard::safetensors_dtype_name(torch::kFloat16) == "F16");
  REQUIRE_THROWS(metaguard::Error,
                 metaguard::safetensors_dtype_name(torch::kQInt8));
  REQUIRE(metaguard::torch_dtype_name(torch::kBFloat16) ==
          std::string("bfloat16"));
  REQUIRE(metaguard::dtype_from_torch_name("float32") == torch::kFloat32);
  REQUIRE(!metaguard::dtype_from_torch_name("float128"));
  // The offload folder's numpy names (offload_folder.h).
  REQUIRE(metaguard::numpy_dtype_name(torch::kFloat32) == "float32");
  REQUIRE(metaguard::dtype_from_numpy_name("int64", "x.dat") == torch::kInt64);
  REQUIRE_THROWS(metaguard::OffloadError,
                 metaguard::dtype_from_numpy_name("uint16", "x.dat"));
  return true;
}

// ---------------------------------------------------------------------------
// device.h and debug_checks.h / offload_checks.h

bool check_debug_switches() {
  // Decided explicitly, so that the program asserts the same in a debug and a
  // release build (by default they follow NDEBUG of the program).
  metaguard::set_empty_model_checks(true);
  REQUIRE(metaguard::empty_model_checks());
  metaguard::set_verify_on_materialise(true);
  REQUIRE(metaguard::verify_on_materialise());
  return true;
}

bool check_devices() {
  REQUIRE(metaguard::parse_device("cpu") == torch::Device(torch::kCPU));
  REQUIRE(metaguard::parse_device("meta").is_meta());
  REQUIRE(metaguard::parse_device("cuda:1") == torch::Device(torch::kCUDA, 1));
  REQUIRE_THROWS(metaguard::Error, metaguard::parse_device("floppy"));
  REQUIRE(metaguard::meta_factories_available());

  // Nothing set: LibTorch's own default (the CPU) applies.
  REQUIRE(!metaguard::default_device());
  REQUIRE(!metaguard::ambient_device());
  REQUIRE(!metaguard::meta_device_active());
  REQUIRE(metaguard::tensor_options().device() == torch::Device(torch::kCPU));

  // The process default, through each overload.
  metaguard::set_default_device(torch::Device(torch::kCPU));
  REQUIRE(metaguard::default_device() == torch::Device(torch::kCPU));
  metaguard::set_default_device(torch::kCPU);
  metaguard::set_default_device(std::string_view("cpu"));
  metaguard::set_default_device(std::string("cpu"));
  metaguard::set_default_device("meta");
  REQUIRE(metaguard::meta_device_active());
  REQUIRE(torch::empty({2}).is_meta()); // factories follow the meta default
  metaguard::reset_default_device();
  REQUIRE(!metaguard::default_device());
  REQUIRE(!torch::empty({2}).is_meta());

  // Scopes: per thread, nested, innermost wins.
  {
    metaguard::DeviceScope cpu(torch::Device(torch::kCPU));
    REQUIRE(cpu.device() == torch::Device(torch::kCPU));
    REQUIRE(metaguard::ambient_device() == torch::Device(torch::kCPU));
    {
      metaguard::MetaDeviceScope meta;
      REQUIRE(meta.device().is_meta());
      REQUIRE(meta.include_buffers());
      REQUIRE(metaguard::meta_device_active());
      REQUIRE(metaguard::ambient_includes_buffers());
      REQUIRE(metaguard::tensor_options().device().is_meta());
      REQUIRE(torch::zeros({2}).is_meta());
      REQUIRE(
          !torch::zeros({2}, torch::kCPU).is_meta()); // an explicit device wins
    }
    REQUIRE(!metaguard::meta_device_active());
  }
  REQUIRE(!metaguard::ambient_device());
  {
    metaguard::MetaDeviceScope parameters_only(/*include_buffers=*/false);
    REQUIRE(!parameters_only.include_buffers());
    REQUIRE(!metaguard::ambient_includes_buffers());
  }
  {
    auto empty =
        metaguard::init_empty_weights(); // accelerate's: buffers stay real
    REQUIRE(metaguard::meta_device_active());
    REQUIRE(!metaguard::ambient_includes_buffers());
    torch::nn::Linear layer(4, 4);
    REQUIRE(layer->weight.is_meta());
  }
  {
    auto everything = metaguard::init_empty_weights(/*include_buffers=*/true);
    REQUIRE(metaguard::ambient_includes_buffers());
  }
  REQUIRE(
      metaguard::with_meta_device([] { return torch::ones({3}); }).is_meta());
  REQUIRE(!metaguard::meta_device_active());
  return true;
}

// ---------------------------------------------------------------------------
// module.h, pretrained_model.h, saving.h, config.h, loading.h

bool check_modules(Fixture &f) {
  // metaguard::Module alone: declarations default to none.
  auto plain = std::make_shared<metaguard::Module>();
  plain->register_buffer("computed", torch::ones({2}), /*persistent=*/false);
  plain->register_buffer("saved",
                         torch::ones({2})); // torch::nn::Module's, persistent
  REQUIRE(plain->non_persistent_buffers() == std::set<std::string>{"computed"});
  REQUIRE(plain->base_model_prefix().empty());
  REQUIRE(plain->tied_weights_keys().empty());
  REQUIRE(plain->keys_to_ignore_on_load_missing().empty());
  REQUIRE(plain->keys_to_ignore_on_load_unexpected().empty());
  REQUIRE(metaguard::checkpoint_state(*plain).size() == 1);

  // PreTrainedModel's constructors: none, a config, a module name.
  auto nameless = std::make_shared<metaguard::PreTrainedModel>();
  REQUIRE(nameless->config().is_null());
  nameless->set_config(tiny_config());
  REQUIRE(nameless->config() == tiny_config());
  auto named = std::make_shared<metaguard::PreTrainedModel>("named");
  REQUIRE(named->name() == "named");
  auto configured = std::make_shared<metaguard::PreTrainedModel>(tiny_config());
  REQUIRE(configured->config() == tiny_config());

  // The model built by hand remembers its config; its checkpoint holds the
  // parameters and the persistent buffer, not the computed inv_freq.
  REQUIRE(f.original->config() == tiny_config());
  std::vector<std::string> keys;
  for (const auto &item : metaguard::checkpoint_state(*f.original))
    keys.push_back(item.first);
  REQUIRE(names_of(keys) == names_of(kTinyCheckpointKeys));
  REQUIRE(f.original->rotary->non_persistent_buffers() ==
          std::set<std::string>{"inv_freq"});

  // PreTrainedModel::to: no offloaded parameter, so these are Module::to.
  f.original->to(torch::kCPU);
  f.original->to(torch::kFloat32);
  f.original->to(torch::kCPU, torch::kFloat32);
  REQUIRE(same(f.original->forward(f.input), f.output));
  return true;
}

bool check_save_and_load(Fixture &f) {
  // save_pretrained wrote model.safetensors and config.json (main), the config
  // with the dtype of the weights saved.
  REQUIRE(fs::exists(f.checkpoint / metaguard::kSafetensorsWeightsName));
  const metaguard::Config saved = metaguard::load_config(f.checkpoint);
  REQUIRE(saved.at("hidden_size") == kHidden);
  REQUIRE(saved.at("dtype") == "float32");
  REQUIRE(metaguard::load_config(f.checkpoint / "config.json") == saved);
  REQUIRE_FORMAT_ERROR(missing, metaguard::load_config(f.tmp / "nowhere"));
  write_file(f.tmp / "not-json.json", "{ not json");
  REQUIRE_FORMAT_ERROR(malformed,
                       metaguard::load_config(f.tmp / "not-json.json"));

  // from_pretrained: the same values, the same output, the config remembered.
  Tiny loaded = load_tiny(f.checkpoint);
  REQUIRE(same_state(*loaded, *f.original));
  REQUIRE(same(loaded->rotary->inv_freq,
               expected_inv_freq())); // computed, not read
  REQUIRE(same(loaded->forward(f.input), f.output));
  REQUIRE(loaded->config().at("hidden_size") == kHidden);

  // Every LoadOptions field.
  metaguard::LoadOptions options;
  options.device_map = metaguard::DeviceMap::on(torch::kCPU);
  options.dtype = torch::kFloat64;
  options.offload_folder = f.tmp / "unused-offload"; // accepted, unused (docs)
  options.max_memory = {{"cpu", "1GiB"}};
  options.no_split_modules = {"TinyImpl"};
  options.strict = true;
  options.safetensors.copy_on_load = true;
  options.safetensors.populate = true;
  options.safetensors.max_header_size = 1'000'000;
  options.offload.prefetch_depth = 0;
  options.offload.prefetch_next_forward = false;
  options.offload.drop_page_cache = false;
  options.offload.read_mode = metaguard::OffloadReadMode::cached;
  Tiny doubled = metaguard::from_pretrained<Tiny>(f.checkpoint, options);
  REQUIRE(doubled->fc1->weight.dtype() == torch::kFloat64);
  REQUIRE(
      same(doubled->fc1->weight, f.original->fc1->weight.to(torch::kFloat64)));

  // SaveOptions: shards, an explicit config, no config at all.
  metaguard::SaveOptions sharded;
  sharded.max_shard_size = metaguard::Size(200); // bytes: forces several shards
  sharded.config = tiny_config();
  sharded.save_config = true;
  const fs::path sharded_dir = f.tmp / "sharded";
  metaguard::save_pretrained(*f.original, sharded_dir, sharded);
  REQUIRE(fs::exists(sharded_dir / metaguard::kSafetensorsIndexName));
  REQUIRE(!fs::exists(sharded_dir / metaguard::kSafetensorsWeightsName));
  REQUIRE(
      same_state(*metaguard::from_pretrained<Tiny>(sharded_dir), *f.original));

  metaguard::SaveOptions weights_only;
  weights_only.save_config = false;
  const fs::path weights_dir = f.tmp / "weights-only";
  metaguard::save_pretrained(*f.original, weights_dir, weights_only);
  REQUIRE(fs::exists(weights_dir / metaguard::kSafetensorsWeightsName));
  REQUIRE(!fs::exists(weights_dir / "config.json"));

  // load_weights into a model built by hand (in place: same Parameter objects).
  Tiny target(tiny_config());
  const void *impl = target->fc1->weight.unsafeGetTensorImpl();
  metaguard::load_weights(*target, weights_dir);
  REQUIRE(target->fc1->weight.unsafeGetTensorImpl() == impl);
  REQUIRE(same_state(*target, *f.original));

  // A checkpoint that does not fit the model: mismatch.
  Tiny wider(tiny_config(2 * kHidden));
  REQUIRE_FORMAT_ERROR(mismatch, metaguard::load_weights(*wider, f.checkpoint));
  return true;
}

bool check_meta_scope_rule(Fixture &f) {
  // The rule README.md shows: loading real weights while the meta device is
  // ambient would give a model without weights.
  {
    metaguard::MetaDeviceScope scope;
    REQUIRE_THROWS(metaguard::MetaDeviceError,
                   metaguard::from_pretrained<Tiny>(f.checkpoint));
    Tiny model(tiny_config());
    REQUIRE_THROWS(metaguard::MetaDeviceError,
                   metaguard::load_weights(*model, f.checkpoint));
    // An explicit device map always wins.
    metaguard::LoadOptions on_cpu;
    on_cpu.device_map = {{"", "cpu"}};
    Tiny loaded = metaguard::from_pretrained<Tiny>(f.checkpoint, on_cpu);
    REQUIRE(!loaded->fc1->weight.is_meta());
  }
  {
    auto guard = metaguard::init_empty_weights();
    REQUIRE_THROWS(metaguard::MetaDeviceError, load_tiny(f.checkpoint));
  }
  // Policy::Warn prints and loads onto the CPU; Policy::Off does not even
  // look. (Policy::Abort would end the program: not exercised here.)
  for (const metaguard::Policy lenient :
       {metaguard::Policy::Warn, metaguard::Policy::Off}) {
    metaguard::set_policy(lenient);
    Tiny unchecked{nullptr};
    {
      metaguard::MetaDeviceScope scope;
      unchecked = metaguard::from_pretrained<Tiny>(f.checkpoint);
    }
    metaguard::set_policy(metaguard::Policy::Throw);
    REQUIRE(!unchecked->fc1->weight.is_meta());
    REQUIRE(same_state(*unchecked, *f.original));
  }
  return true;
}

// README.md's recipe: an empty model under init_empty_weights / from_config,
// given its weights with load_checkpoint_and_dispatch, one layer on "disk".
bool check_empty_model_and_disk(Fixture &f) {
  Tiny model{nullptr};
  {
    auto guard = metaguard::init_empty_weights();
    model = metaguard::from_config<Tiny>(metaguard::load_config(f.checkpoint));
  }
  REQUIRE(model->fc1->weight.is_meta());
  REQUIRE(
      !model->scale.is_meta()); // buffers stay real under init_empty_weights()
  REQUIRE(model->config().at("hidden_size") == kHidden);

  // Planning works on the empty model: shapes and a device map.
  REQUIRE(model->fc1->weight.sizes() == torch::IntArrayRef({kHidden, kHidden}));
  const metaguard::DeviceMap planned =
      metaguard::infer_auto_device_map(*model, {{"cpu", "1GiB"}}, {"TinyImpl"});
  REQUIRE(planned.is_explicit() && !planned.has_disk());

  // Used before its weights: MetaDeviceError (empty-model checks are on).
  REQUIRE_THROWS(metaguard::MetaDeviceError, model->forward(f.input));
  REQUIRE_THROWS(metaguard::MetaDeviceError, model->to(torch::kCPU));
  REQUIRE_THROWS(metaguard::MetaDeviceError,
                 metaguard::save_pretrained(*model, f.tmp / "never-written"));

  metaguard::LoadOptions options;
  options.device_map = {{"", "cpu"}, {"fc2", "disk"}};
  options.offload_folder = f.tmp / "offload-unused";
  options.offload.prefetch_depth = 1;
  metaguard::load_checkpoint_and_dispatch(*model, f.checkpoint, options);

  REQUIRE(metaguard::has_offloaded_parameters(*model));
  REQUIRE(metaguard::offloaded_parameter_names(*model) ==
          (std::vector<std::string>{"fc2.bias", "fc2.weight"}));
  REQUIRE(model->fc2->weight.is_meta());
  REQUIRE(!model->fc1->weight.is_meta());
  REQUIRE(same(model->fc1->weight, f.original->fc1->weight));
  REQUIRE(same(metaguard::load_offloaded_parameter(*model, "fc2.weight"),
               f.original->fc2->weight));
  REQUIRE(same(metaguard::parameter_value(*model, "fc2.bias"),
               f.original->fc2->bias));
  REQUIRE(same(metaguard::parameter_value(*model, "fc1.bias"),
               f.original->fc1->bias));
  metaguard::verify_dispatch(*model);
  {
    torch::NoGradGuard no_grad;
    REQUIRE(torch::allclose(model->forward(f.input), f.output));
    // Without a guard, operators load offloaded parameters themselves.
    REQUIRE(torch::allclose(model->fc2->forward(f.input),
                            f.original->fc2->forward(f.input)));
  }
  REQUIRE(model->fc2->weight.is_meta()); // back on disk after the forward

  // The rule: move offloaded parameters only through the device map.
  REQUIRE_THROWS(metaguard::OffloadError, model->to(torch::kCPU));
  REQUIRE_THROWS(metaguard::OffloadError,
                 model->to(torch::kCPU, torch::kFloat32));
  REQUIRE_THROWS(metaguard::OffloadError,
                 metaguard::to_empty(*model, torch::kCPU));
  model->to(torch::kFloat32); // dtype only: allowed

  // A dispatched model saves every tensor, offloaded ones included.
  const fs::path resaved = f.tmp / "resaved";
  metaguard::save_pretrained(*model, resaved);
  REQUIRE(same_state(*metaguard::from_pretrained<Tiny>(resaved), *f.original));

  // Hooks removed: the offloaded parameters can no longer reach their bytes.
  metaguard::remove_hook_from_module(*model, /*recurse=*/true);
  REQUIRE_THROWS(metaguard::OffloadError, metaguard::verify_dispatch(*model));
  REQUIRE_THROWS(metaguard::OffloadError,
                 metaguard::load_offloaded_parameter(*model, "fc2.weight"));

  // An automatic map with a budget, the same load under other options.
  Tiny automatic{nullptr};
  {
    metaguard::MetaDeviceScope
        scope; // buffers on meta too: recomputed by the load
    automatic = metaguard::from_config<Tiny>(tiny_config());
  }
  REQUIRE(automatic->rotary->inv_freq.is_meta());
  metaguard::LoadOptions budgeted;
  budgeted.device_map = metaguard::DeviceMap::automatic();
  budgeted.max_memory = {{"cpu", "1GiB"}};
  budgeted.no_split_modules = {"TinyImpl"};
  metaguard::load_checkpoint_and_dispatch(*automatic, f.checkpoint, budgeted);
  REQUIRE(!metaguard::has_offloaded_parameters(*automatic));
  REQUIRE(same(automatic->rotary->inv_freq, expected_inv_freq()));
  REQUIRE(same(automatic->forward(f.input), f.output));
  return true;
}

// to_empty gives memory, not values: poison until initialised.
bool check_to_empty(Fixture &f) {
  Tiny model{nullptr};
  {
    auto guard = metaguard::init_empty_weights();
    model = metaguard::from_config<Tiny>(tiny_config());
  }
  const void *impl = model->fc1->weight.unsafeGetTensorImpl();
  // recurse = false gives memory to this module's own tensors only.
  metaguard::to_empty(*model->fc1, torch::kCPU, /*recurse=*/false);
  REQUIRE(!model->fc1->weight.is_meta());
  REQUIRE(model->fc2->weight.is_meta());
  metaguard::to_empty(*model, torch::kCPU);
  REQUIRE(!model->fc2->weight.is_meta());
  REQUIRE(model->fc1->weight.unsafeGetTensorImpl() == impl); // in place
  // Poison (a NaN), read without an operator so that the check lets it pass.
  REQUIRE(std::isnan(model->fc2->weight.data_ptr<float>()[0]));
  REQUIRE(same(model->scale,
               torch::full({kHidden}, 0.5))); // real tensors keep values
  // Read before written: UninitializedMemoryError (empty-model checks on).
  REQUIRE_THROWS(metaguard::UninitializedMemoryError, model->forward(f.input));
  REQUIRE_THROWS(metaguard::UninitializedMemoryError,
                 metaguard::save_pretrained(*model, f.tmp / "poisoned"));
  {
    // Initialise: here with the original's values, so the output can be
    // compared.
    torch::NoGradGuard no_grad;
    for (auto &item : model->named_parameters())
      item.value().copy_(f.original->named_parameters()[item.key()]);
  }
  REQUIRE(same(model->forward(f.input), f.output));
  // Or load: a load after to_empty gives the checkpoint's values.
  Tiny again{nullptr};
  {
    auto guard = metaguard::init_empty_weights();
    again = metaguard::from_config<Tiny>(tiny_config());
  }
  metaguard::to_empty(*again, torch::kCPU);
  metaguard::load_weights(*again, f.checkpoint);
  REQUIRE(same_state(*again, *f.original));
  return true;
}

// Checkpoint keys: ties, base_model_prefix and the ignore lists.
bool check_checkpoint_keys(Fixture &f) {
  // A head model reading the base checkpoint adds the prefix; the tie takes
  // its source's tensor; head.bias is missing but ignored (no error).
  TinyLM lm = metaguard::from_pretrained<TinyLM>(f.checkpoint);
  REQUIRE(same(lm->tiny->fc1->weight, f.original->fc1->weight));
  REQUIRE(lm->head_weight.data_ptr() == lm->tiny->fc1->weight.data_ptr());
  REQUIRE(!lm->head_bias.is_meta());
  // The same into a model built by hand: the missing, ignored head.bias keeps
  // the value the model was built with (loading.h, LoadOptions::strict).
  // (from_pretrained promises the same but gives zeros today: not asserted
  // until that is fixed, see the report that came with this file.)
  TinyLM built(tiny_config());
  metaguard::load_weights(*built, f.checkpoint);
  REQUIRE(same(built->tiny->fc2->weight, f.original->fc2->weight));
  REQUIRE(built->head_weight.data_ptr() == built->tiny->fc1->weight.data_ptr());
  REQUIRE(same(built->head_bias, torch::full({kHidden}, 0.25)));

  // Its checkpoint leaves the tied copy and the computed buffer out.
  const fs::path lm_dir = f.tmp / "tiny-lm";
  metaguard::save_pretrained(*lm, lm_dir);
  metaguard::SafetensorsCheckpoint lm_checkpoint(lm_dir);
  REQUIRE(names_of(lm_checkpoint.names()) ==
          (std::set<std::string>{"head.bias", "tiny.fc1.bias",
                                 "tiny.fc1.weight", "tiny.fc2.bias",
                                 "tiny.fc2.weight", "tiny.scale"}));

  // The base model reading the head checkpoint strips the prefix.
  Tiny base = metaguard::from_pretrained<Tiny>(lm_dir);
  REQUIRE(same_state(*base, *f.original));
  return true;
}

// ---------------------------------------------------------------------------
// device_map.h, auto_device_map.h, dispatch.h, offload_*.h, weights_map.h

bool check_device_maps(Fixture &f) {
  using metaguard::DeviceMap;
  using metaguard::Placement;
  // Placements: a device, "disk", by any spelling.
  REQUIRE(Placement(torch::Device(torch::kCPU)) == Placement(torch::kCPU));
  REQUIRE(Placement(std::string_view("cpu")) == Placement(std::string("cpu")));
  REQUIRE(Placement("disk") == Placement::disk());
  REQUIRE(Placement("disk").is_disk());
  REQUIRE(Placement("cpu") != Placement::disk());
  REQUIRE(Placement("cpu").device() == torch::Device(torch::kCPU));
  REQUIRE_THROWS(metaguard::Error, Placement::disk().device());
  REQUIRE(Placement::disk().str() == "disk");
  REQUIRE(Placement(torch::kCPU).str() == "cpu");

  // Explicit maps: longest matching prefix wins.
  DeviceMap map = {{"", "cpu"}, {"fc2", "disk"}};
  REQUIRE(map.is_explicit() && !map.empty() && map.has_disk());
  REQUIRE(map.strategy() == DeviceMap::Strategy::Explicit);
  REQUIRE(map.placement_for("fc2.weight") == Placement::disk());
  REQUIRE(map.placement_for("fc1.weight") == Placement("cpu"));
  map.set("fc2", torch::kCPU);
  REQUIRE(!map.has_disk());
  REQUIRE(map.entries().size() == 2);
  DeviceMap partial = {{"fc1", "cpu"}};
  REQUIRE(!partial.placement_for("fc2.weight"));
  REQUIRE(DeviceMap().empty());
  REQUIRE(DeviceMap::on(Placement::disk()).has_disk());
  REQUIRE(DeviceMap::automatic().strategy() == DeviceMap::Strategy::Auto);
  REQUIRE(DeviceMap::balanced().strategy() == DeviceMap::Strategy::Balanced);
  REQUIRE(DeviceMap::balanced_low_0().strategy() ==
          DeviceMap::Strategy::BalancedLow0);
  REQUIRE(DeviceMap::sequential().strategy() ==
          DeviceMap::Strategy::Sequential);
  REQUIRE(!DeviceMap::automatic().is_explicit() &&
          !DeviceMap::automatic().empty());

  // Budgets.
  metaguard::MaxMemory budget = {{"cpu", "1GiB"}};
  REQUIRE(!budget.empty());
  REQUIRE(budget.budget("cpu") == (std::int64_t{1} << 30));
  budget.set("cuda:0", metaguard::Size("2GB"));
  REQUIRE(budget.budgets().size() == 2);
  REQUIRE(!budget.budget("cuda:1"));
  REQUIRE(metaguard::MaxMemory().empty());

  // Resolution: strategies become explicit maps covering every parameter.
  const metaguard::MaxMemory roomy = {{"cpu", "1GiB"}};
  for (const DeviceMap &strategy :
       {DeviceMap::automatic(), DeviceMap::balanced(),
        DeviceMap::balanced_low_0(), DeviceMap::sequential()}) {
    const DeviceMap resolved =
        metaguard::resolve_device_map(*f.original, strategy, roomy);
    REQUIRE(resolved.is_explicit() && !resolved.has_disk());
    for (const auto &item : f.original->named_parameters())
      REQUIRE(resolved.placement_for(item.key()) == Placement("cpu"));
  }
  // Too little memory: the rest goes to disk.
  const DeviceMap tight =
      metaguard::infer_auto_device_map(*f.original, {{"cpu", 16}}, {});
  REQUIRE(tight.has_disk());
  for (const auto &item : f.original->named_parameters())
    REQUIRE(tight.placement_for(item.key()).has_value());
  const DeviceMap unsplit =
      metaguard::resolve_device_map(*f.original, DeviceMap::sequential(), roomy,
                                    std::vector<std::string>{"LinearImpl"});
  REQUIRE(unsplit.placement_for("fc1.weight") == Placement("cpu"));
  REQUIRE_THROWS(metaguard::Error,
                 metaguard::resolve_device_map(*f.original, partial));
  return true;
}

// dispatch_model of an in-memory model: disk parameters go to an accelerate
// offload folder, read back through OffloadFolder.
bool check_dispatch_model(Fixture &f) {
  Tiny model = metaguard::from_pretrained<Tiny>(f.checkpoint);
  const metaguard::DeviceMap map = {{"", "cpu"}, {"fc1", "disk"}};
  // Disk needs a folder; nothing changes when it is missing.
  REQUIRE_THROWS(metaguard::Error, metaguard::dispatch_model(*model, map));
  REQUIRE(!metaguard::has_offloaded_parameters(*model));

  const fs::path folder = f.tmp / "offload";
  metaguard::dispatch_model(*model, map, folder);
  REQUIRE(metaguard::offloaded_parameter_names(*model) ==
          (std::vector<std::string>{"fc1.bias", "fc1.weight"}));
  REQUIRE(fs::exists(folder / "index.json"));
  {
    torch::NoGradGuard no_grad;
    REQUIRE(torch::allclose(model->forward(f.input), f.output));
  }

  // The folder, as accelerate would read it.
  metaguard::OffloadFolder offload(folder);
  REQUIRE(offload.path() == folder);
  REQUIRE(offload.contains("fc1.weight") && !offload.contains("fc2.weight"));
  REQUIRE(names_of(offload.names()) ==
          (std::set<std::string>{"fc1.bias", "fc1.weight"}));
  REQUIRE(offload.dtype("fc1.weight") == torch::kFloat32);
  REQUIRE(offload.shape("fc1.weight") ==
          (std::vector<std::int64_t>{kHidden, kHidden}));
  REQUIRE(offload.check("fc1.weight") == kHidden * kHidden * 4);
  REQUIRE(same(offload.load("fc1.weight"), f.original->fc1->weight));
  const torch::Tensor direct =
      offload.load_direct("fc1.weight"); // undefined without O_DIRECT
  REQUIRE(!direct.defined() || same(direct, f.original->fc1->weight));
  const metaguard::StorageLocation where = offload.location("fc1.weight");
  REQUIRE(fs::path(where.file).filename() == "fc1.weight.dat");
  REQUIRE(where.offset == 0); // the whole .dat
  REQUIRE_THROWS(metaguard::Error, offload.load("nothing"));

  // offload_tensors merges into an existing folder.
  metaguard::offload_tensors(folder,
                             {{"extra", torch::arange(3, torch::kInt64)}});
  metaguard::OffloadFolder merged(folder);
  REQUIRE(merged.contains("fc1.weight") && merged.contains("extra"));
  REQUIRE(same(merged.load("extra"), torch::arange(3, torch::kInt64)));

  // Dispatched again with read options; OnloadGuard's device is the CPU.
  Tiny second = metaguard::from_pretrained<Tiny>(f.checkpoint);
  metaguard::OffloadOptions offload_options;
  offload_options.prefetch_depth = 2;
  offload_options.prefetch_next_forward = false;
  offload_options.drop_page_cache = true;
  offload_options.read_mode = metaguard::OffloadReadMode::automatic;
  metaguard::dispatch_model(*second, {{"", "cpu"}, {"fc2", "disk"}},
                            f.tmp / "offload-2", offload_options);
  {
    torch::NoGradGuard no_grad;
    metaguard::OnloadGuard onload(*second);
    REQUIRE(onload.device() == torch::Device(torch::kCPU));
    REQUIRE(!second->fc2->weight
                 .is_meta()); // materialised for the guard's lifetime
    REQUIRE(torch::allclose(second->forward(f.input), f.output));
  }
  REQUIRE(second->fc2->weight.is_meta());
  return true;
}

// A WeightsMap of the application's own: only the required functions; the
// defaults of load_together, load_direct and location apply.
class MemoryWeights : public metaguard::WeightsMap {
public:
  explicit MemoryWeights(std::map<std::string, torch::Tensor> tensors)
      : tensors_(std::move(tensors)) {}
  bool contains(const std::string &name) const override {
    return tensors_.count(name) != 0;
  }
  torch::Tensor load(const std::string &name) const override {
    const auto it = tensors_.find(name);
    if (it == tensors_.end())
      throw metaguard::OffloadError("no tensor '" + name + "' in memory");
    return it->second.clone();
  }
  std::vector<std::string> names() const override {
    std::vector<std::string> names;
    for (const auto &item : tensors_)
      names.push_back(item.first);
    return names;
  }

private:
  std::map<std::string, torch::Tensor> tensors_;
};

// A CheckpointReader of the application's own (the interface every format
// implements, docs "Adding a format"): tensors held in memory. It pins the
// interface for implementers: a new pure virtual function breaks them.
class MemoryReader : public metaguard::CheckpointReader {
public:
  MemoryReader(fs::path folder, const metaguard::NamedTensors &tensors)
      : folder_(std::move(folder)) {
    for (const auto &item : tensors) {
      names_.push_back(item.first);
      tensors_[item.first] = item.second.detach().clone();
      metaguard::TensorInfo info;
      info.name = item.first;
      info.dtype = metaguard::safetensors_dtype_name(item.second.scalar_type());
      info.shape = item.second.sizes().vec();
      info.end = item.second.numel() * item.second.element_size();
      infos_[item.first] = info;
    }
  }
  const fs::path &folder() const override { return folder_; }
  const char *format() const override { return "memory"; }
  bool sharded() const override { return false; }
  std::vector<fs::path> file_paths() const override { return {}; }
  const std::vector<std::string> &names() const override { return names_; }
  bool contains(std::string_view name) const override {
    return tensors_.count(std::string(name)) != 0;
  }
  const metaguard::TensorInfo &info(std::string_view name) const override {
    return infos_.at(find(name));
  }
  const fs::path &path_of(std::string_view name) const override {
    find(name);
    return folder_;
  }
  std::map<std::string, std::string> metadata() const override {
    return {{"format", "pt"}};
  }
  torch::Tensor tensor(std::string_view name) const override {
    return tensors_.at(find(name));
  }
  torch::Tensor private_tensor(std::string_view name) const override {
    return tensors_.at(find(name)).clone();
  }
  torch::Tensor tensor(std::string_view name, torch::Dtype dtype,
                       torch::Device device = torch::kCPU) const override {
    return tensors_.at(find(name))
        .to(device, dtype, /*non_blocking=*/false, /*copy=*/true);
  }

private:
  std::string find(std::string_view name) const {
    if (!contains(name))
      throw metaguard::FormatError(metaguard::FormatError::Kind::missing,
                                   "memory: no tensor '" + std::string(name) +
                                       "'");
    return std::string(name);
  }
  fs::path folder_;
  std::vector<std::string> names_;
  std::map<std::string, torch::Tensor> tensors_;
  std::map<std::string, metaguard::TensorInfo> infos_;
};

bool check_weights_maps(Fixture &f) {
  // The checkpoint read in place.
  const auto reader = metaguard::open_checkpoint(f.checkpoint);
  const auto in_place = std::make_shared<const metaguard::CheckpointWeightsMap>(
      reader,
      std::map<std::string, torch::Dtype>{{"fc1.bias", torch::kFloat64}},
      std::map<std::string, std::string>{{"alias.weight", "fc1.weight"}});
  REQUIRE(&in_place->checkpoint() == reader.get());
  REQUIRE(in_place->contains("fc1.weight") &&
          in_place->contains("alias.weight"));
  REQUIRE(!in_place->contains("nothing"));
  REQUIRE(names_of(in_place->names()).count("fc2.weight") == 1);
  REQUIRE(same(in_place->load("alias.weight"),
               f.original->fc1->weight));                         // another key
  REQUIRE(in_place->load("fc1.bias").dtype() == torch::kFloat64); // converted
  torch::Tensor scratch = in_place->load("fc2.weight");
  scratch.fill_(7); // private: a later load is unchanged
  REQUIRE(same(in_place->load("fc2.weight"), f.original->fc2->weight));
  const torch::Tensor direct = in_place->load_direct("fc2.weight");
  REQUIRE(!direct.defined() || same(direct, f.original->fc2->weight));
  const auto together = in_place->load_together({"fc2.weight", "fc2.bias"});
  REQUIRE(together.size() == 2 && same(together[1], f.original->fc2->bias));
  const metaguard::StorageLocation where = in_place->location("fc2.weight");
  REQUIRE(fs::path(where.file) == reader->path_of("fc2.weight"));
  REQUIRE(where.length == reader->info("fc2.weight").nbytes());
  const metaguard::SafetensorsFile shard(where.file);
  REQUIRE(where.offset == shard.data_offset() + shard.info("fc2.weight").begin);
  REQUIRE_FORMAT_ERROR(missing, in_place->load("nothing"));

  metaguard::SafetensorsOptions options;
  options.copy_on_load = true;
  metaguard::CheckpointWeightsMap by_path(f.checkpoint, options);
  REQUIRE(by_path.checkpoint().format() == std::string("safetensors"));

  // attach_offload_hooks: an empty model behind hooks, with each weights map.
  Tiny from_checkpoint{nullptr};
  Tiny from_memory{nullptr};
  {
    auto guard = metaguard::init_empty_weights();
    from_checkpoint = metaguard::from_config<Tiny>(tiny_config());
    from_memory = metaguard::from_config<Tiny>(tiny_config());
  }
  const metaguard::DeviceMap all_on_disk = metaguard::resolve_device_map(
      *from_checkpoint, metaguard::DeviceMap::on("disk"));
  metaguard::OffloadOptions direct_reads;
  direct_reads.prefetch_depth = 0;
  direct_reads.read_mode =
      metaguard::OffloadReadMode::direct; // cached where O_DIRECT is refused
  metaguard::attach_offload_hooks(
      *from_checkpoint, all_on_disk,
      std::make_shared<const metaguard::CheckpointWeightsMap>(f.checkpoint),
      direct_reads);

  std::map<std::string, torch::Tensor> tensors;
  for (const auto &item : f.original->named_parameters())
    tensors.emplace(item.key(), item.value().detach().clone());
  const auto memory = std::make_shared<const MemoryWeights>(tensors);
  REQUIRE(memory->location("fc1.weight").file.empty());  // default: unknown
  REQUIRE(!memory->load_direct("fc1.weight").defined()); // default: none
  REQUIRE(memory->load_together({"fc1.weight", "fc1.bias"}).size() == 2);
  metaguard::attach_offload_hooks(*from_memory, all_on_disk, memory);

  torch::NoGradGuard no_grad;
  REQUIRE(metaguard::has_offloaded_parameters(*from_checkpoint));
  REQUIRE(torch::allclose(from_checkpoint->forward(f.input), f.output));
  REQUIRE(torch::allclose(from_memory->forward(f.input), f.output));
  // A weights map without a parameter: refused before anything changes.
  Tiny incomplete{nullptr};
  {
    auto guard = metaguard::init_empty_weights();
    incomplete = metaguard::from_config<Tiny>(tiny_config());
  }
  const auto lacking = std::make_shared<const MemoryWeights>(
      std::map<std::string, torch::Tensor>{
          {"fc1.weight", tensors["fc1.weight"]}});
  REQUIRE_THROWS(
      metaguard::OffloadError,
      metaguard::attach_offload_hooks(*incomplete, all_on_disk, lacking));

  // A reader of our own behind CheckpointWeightsMap: the default
  // private_tensors, the non-virtual files().
  const auto own = std::make_shared<const MemoryReader>(
      f.tmp / "memory", metaguard::checkpoint_state(*f.original));
  REQUIRE(own->files() == own->file_paths());
  REQUIRE(own->private_tensors({"fc1.weight", "fc1.bias"}).size() == 2);
  Tiny from_reader{nullptr};
  {
    auto guard = metaguard::init_empty_weights();
    from_reader = metaguard::from_config<Tiny>(tiny_config());
  }
  metaguard::attach_offload_hooks(
      *from_reader, all_on_disk,
      std::make_shared<const metaguard::CheckpointWeightsMap>(own));
  REQUIRE(torch::allclose(from_reader->forward(f.input), f.output));
  return true;
}

// ---------------------------------------------------------------------------
// safetensors.h, safetensors_header.h, checkpoint.h, checkpoint_reader.h

bool check_safetensors_files(Fixture &f) {
  const fs::path file = f.tmp / "direct.safetensors";
  const torch::Tensor w = torch::arange(12, torch::kFloat32).reshape({3, 4});
  const torch::Tensor b = torch::tensor({1, 2}, torch::kInt64);
  const metaguard::NamedTensors tensors = {{"w", w}, {"b", b}};
  metaguard::save_safetensors(file, tensors,
                              {{"format", "pt"}, {"note", "contract"}});

  metaguard::SafetensorsFile st(file);
  REQUIRE(st.path() == file);
  REQUIRE(st.names().size() == 2 && st.contains("w") && !st.contains("x"));
  const metaguard::TensorInfo &info = st.info("w");
  REQUIRE(info.name == "w" && info.dtype == "F32");
  REQUIRE(info.shape == (std::vector<std::int64_t>{3, 4}));
  REQUIRE(info.nbytes() == 48 && info.end - info.begin == 48);
  REQUIRE(st.metadata().at("note") == "contract");
  REQUIRE(st.file_size() == static_cast<std::int64_t>(fs::file_size(file)));
  REQUIRE(st.data_offset() > 8);
  st.populate();
  REQUIRE(same(st.tensor("w"), w));
  REQUIRE(same(st.tensor("b"), b));
  const torch::Tensor mine = st.private_tensor("w");
  REQUIRE(same(mine, w) && mine.data_ptr() != st.tensor("w").data_ptr());
  const torch::Tensor direct = st.direct_tensor("w");
  REQUIRE(!direct.defined() || same(direct, w));
  const auto both = st.private_tensors({"w", "b"});
  REQUIRE(both.size() == 2 && same(both[1], b));
  const torch::Tensor half = st.tensor("w", torch::kFloat16);
  REQUIRE(half.dtype() == torch::kFloat16 && same(half, w.to(torch::kFloat16)));
  REQUIRE(same(st.tensor("w", torch::kFloat64, torch::kCPU),
               w.to(torch::kFloat64)));
  REQUIRE_FORMAT_ERROR(missing, st.info("x"));

  metaguard::SafetensorsOptions options;
  options.copy_on_load = true;
  options.populate = true;
  options.max_header_size = 4096;
  const auto copied = metaguard::SafetensorsFile::open(file, options);
  REQUIRE(same(copied.tensor("w"), w));
  options.max_header_size = 8; // a header bigger than the cap is refused
  REQUIRE_THROWS(metaguard::FormatError,
                 (void)metaguard::SafetensorsFile(file, options));

  // The header alone, from bytes.
  const std::string bytes = read_file(file);
  const std::uint64_t length = metaguard::safetensors_header_length(
      bytes.substr(0, metaguard::kSafetensorsProbeBytes),
      static_cast<std::int64_t>(bytes.size()), 100'000'000, file);
  const metaguard::SafetensorsHeader header =
      metaguard::parse_safetensors_header(
          std::string_view(bytes).substr(8, length),
          static_cast<std::int64_t>(bytes.size()), file);
  REQUIRE(header.data_offset == st.data_offset());
  REQUIRE(header.tensors.size() == 2);
  REQUIRE(header.metadata.at("note") == "contract");

  // Every kind of bad file the runtime tells apart.
  write_file(
      f.tmp / "lfs.safetensors",
      "version https://git-lfs.github.com/spec/v1\n"
      "oid "
      "sha256:"
      "4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
      "size 12345\n");
  REQUIRE_FORMAT_ERROR(
      lfs_pointer, (void)metaguard::SafetensorsFile(f.tmp / "lfs.safetensors"));
  write_file(f.tmp / "cut.safetensors", bytes.substr(0, bytes.size() - 4));
  REQUIRE_FORMAT_ERROR(
      truncated, (void)metaguard::SafetensorsFile(f.tmp / "cut.safetensors"));
  write_file(f.tmp / "garbage.safetensors", safetensors_bytes("not json", ""));
  REQUIRE_FORMAT_ERROR(malformed, (void)metaguard::SafetensorsFile(
                                      f.tmp / "garbage.safetensors"));
  REQUIRE_FORMAT_ERROR(
      missing, (void)metaguard::SafetensorsFile(f.tmp / "absent.safetensors"));
  // U16: a dtype of the format that LibTorch 1.13 cannot hold. The file opens;
  // reading the tensor is unsupported.
  write_file(f.tmp / "u16.safetensors",
             safetensors_bytes(
                 R"({"x":{"dtype":"U16","shape":[2],"data_offsets":[0,4]}})",
                 std::string(4, '\1')));
  metaguard::SafetensorsFile u16(f.tmp / "u16.safetensors");
  REQUIRE(u16.info("x").dtype == "U16");
  REQUIRE_FORMAT_ERROR(unsupported, u16.tensor("x"));
  return true;
}

bool check_checkpoints(Fixture &f) {
  // Which files hold a folder's weights.
  const auto layout = metaguard::find_checkpoint(f.checkpoint);
  REQUIRE(layout.has_value());
  REQUIRE(layout->format == metaguard::CheckpointFormat::Safetensors);
  REQUIRE(layout->file == f.checkpoint / metaguard::kSafetensorsWeightsName);
  REQUIRE(!layout->sharded);
  fs::create_directories(f.tmp / "empty");
  REQUIRE(!metaguard::find_checkpoint(f.tmp / "empty"));
  REQUIRE_FORMAT_ERROR(missing, metaguard::open_checkpoint(f.tmp / "empty"));
  const metaguard::CheckpointLayout of_file = metaguard::checkpoint_layout(
      f.checkpoint / metaguard::kSafetensorsWeightsName);
  REQUIRE(of_file.format == metaguard::CheckpointFormat::Safetensors &&
          !of_file.sharded);
  REQUIRE(std::string(metaguard::kPytorchIndexName) ==
          "pytorch_model.bin.index.json");

  // The other format: pytorch_model.bin as torch.save wrote it (by real
  // PyTorch, test/data/pytorch-reference), through the same reader, loaded
  // into an empty model with its layer on "disk" read from the archive.
  const fs::path bin_dir = fs::path(METAGUARD_API_TEST_DATA) / "pytorch-reference";
  const fs::path bin_file = bin_dir / metaguard::kPytorchWeightsName;
  const metaguard::CheckpointLayout bin_layout = metaguard::checkpoint_layout(bin_file);
  REQUIRE(bin_layout.format == metaguard::CheckpointFormat::Pytorch && !bin_layout.sharded);
  const auto bin = metaguard::open_checkpoint(bin_file);
  REQUIRE(bin->format() == std::string("pytorch"));
  const torch::Tensor w = torch::arange(12, torch::kFloat).reshape({3, 4}) / 8;
  REQUIRE(same(bin->tensor("fc.weight"), w));
  Reference from_bin{nullptr};
  {
    auto guard = metaguard::init_empty_weights();
    from_bin = metaguard::from_config<Reference>(metaguard::Config::object());
  }
  metaguard::LoadOptions bin_options;
  bin_options.device_map = {{"", "cpu"}, {"fc", "disk"}};
  bin_options.offload_folder = f.tmp / "pytorch-offload";
  // The state dict holds more than fc (ties, views, other dtypes): one warning.
  bin_options.strict = false;
  metaguard::load_checkpoint_and_dispatch(*from_bin, bin_file, bin_options);
  REQUIRE(metaguard::offloaded_parameter_names(*from_bin).size() == 2);
  REQUIRE(same(metaguard::load_offloaded_parameter(*from_bin, "fc.weight"), w));
  REQUIRE(same(metaguard::load_offloaded_parameter(*from_bin, "fc.bias"),
               torch::tensor({0.5f, -0.5f, 0.25f})));

  // The reader every load goes through.
  const std::shared_ptr<const metaguard::CheckpointReader> reader =
      metaguard::open_checkpoint(f.checkpoint, metaguard::SafetensorsOptions{});
  REQUIRE(reader->folder() == f.checkpoint);
  REQUIRE(reader->format() == std::string("safetensors"));
  REQUIRE(!reader->sharded());
  REQUIRE(
      reader->file_paths() ==
      std::vector<fs::path>{f.checkpoint / metaguard::kSafetensorsWeightsName});
  REQUIRE(reader->files() == reader->file_paths());
  REQUIRE(names_of(reader->names()) == names_of(kTinyCheckpointKeys));
  REQUIRE(reader->contains("fc1.weight") &&
          !reader->contains("rotary.inv_freq"));
  REQUIRE(reader->info("fc1.weight").dtype == "F32");
  REQUIRE(reader->path_of("fc1.weight") ==
          f.checkpoint / metaguard::kSafetensorsWeightsName);
  REQUIRE(reader->metadata().at("format") == "pt");
  REQUIRE(same(reader->tensor("fc1.weight"), f.original->fc1->weight));
  REQUIRE(same(reader->private_tensor("fc1.bias"), f.original->fc1->bias));
  REQUIRE(reader->private_tensors({"fc1.weight", "fc1.bias"}).size() == 2);
  REQUIRE(reader->tensor("fc1.weight", torch::kBFloat16).dtype() ==
          torch::kBFloat16);
  REQUIRE_FORMAT_ERROR(missing, reader->info("nothing"));

  // The sharded checkpoint check_save_and_load wrote, as SafetensorsCheckpoint.
  const fs::path sharded_dir = f.tmp / "sharded";
  const auto sharded_layout = metaguard::find_checkpoint(sharded_dir);
  REQUIRE(sharded_layout && sharded_layout->sharded);
  REQUIRE(sharded_layout->file ==
          sharded_dir / metaguard::kSafetensorsIndexName);
  metaguard::SafetensorsCheckpoint sharded(sharded_dir,
                                           metaguard::SafetensorsOptions{});
  REQUIRE(sharded.sharded());
  REQUIRE(sharded.format() == std::string("safetensors"));
  REQUIRE(sharded.shard_files().size() >= 2);
  REQUIRE(sharded.file_paths().front() ==
          sharded_dir / metaguard::kSafetensorsIndexName);
  REQUIRE(sharded.file_paths().size() == sharded.shard_files().size() + 1);
  REQUIRE(sharded.metadata().count("metaguard.config") ==
          1); // the config commits with the index
  REQUIRE(sharded.private_tensors({"fc1.weight", "fc2.weight"}).size() == 2);
  REQUIRE(same(sharded.tensor("fc2.weight"), f.original->fc2->weight));
  return true;
}

// An I/O failure: a checkpoint folder that cannot be created because a
// regular file stands where its parent should be.
bool check_io_error(Fixture &f) {
  write_file(f.tmp / "a-file", "x");
  REQUIRE_FORMAT_ERROR(
      io, metaguard::save_pretrained(*f.original, f.tmp / "a-file" / "out"));
  return true;
}

} // namespace

int main() {
  try {
    if (!check_debug_switches() || !check_errors() || !check_policy() ||
        !check_sizes() || !check_dtypes() || !check_devices())
      return 1;

    // The model everything else loads, saves and compares with.
    Fixture f;
    torch::manual_seed(0);
    f.original = Tiny(tiny_config());
    f.input = torch::randn({3, kHidden});
    {
      torch::NoGradGuard no_grad;
      f.output = f.original->forward(f.input);
    }
    f.checkpoint = f.tmp / "tiny";
    metaguard::save_pretrained(*f.original, f.checkpoint);

    if (!check_modules(f) || !check_save_and_load(f) ||
        !check_meta_scope_rule(f) || !check_empty_model_and_disk(f) ||
        !check_to_empty(f) || !check_checkpoint_keys(f) ||
        !check_device_maps(f) || !check_dispatch_model(f) ||
        !check_weights_maps(f) || !check_safetensors_files(f) ||
        !check_checkpoints(f) || !check_io_error(f))
      return 1;
  } catch (const std::exception &e) {
    std::cerr << "public API contract: unexpected exception: " << e.what()
              << "\n";
    return 1;
  }
  std::cout << "public API contract: " << checks_passed << " checks passed\n";
  return 0;
}
