// The ambient device: where new weights are created. Mirrors PyTorch's
// `torch.set_default_device` and device context managers, and accelerate's
// `init_empty_weights`.
//
// Threading: the default device is per-process (like a global setting made at
// start-up, and so that worker threads see it); scopes are per-thread, and the
// innermost live scope on the calling thread wins over the default device.
//
// LibTorch factory functions follow the meta device: while a meta scope that
// includes buffers is live on a thread (MetaDeviceScope, DeviceScope(meta),
// init_empty_weights(true), with_meta_device), or the process default is meta
// and the thread has no scope, every factory call without an explicit device
// (torch::empty, zeros, randn, ..., hence every torch::nn layer) creates a
// meta tensor. An explicit device (torch::zeros({2}, torch::kCPU)) is kept.
// init_empty_weights() (buffers excluded, the default) matches accelerate's:
// factories stay real, so buffers keep their constructed values, and every
// tensor torch::nn::Module::register_parameter makes a parameter on this
// thread goes to meta in place before the next LibTorch operator runs (and
// at the latest when the scope ends), so initialisers never write it. Peak
// memory is at most about one parameter (one filled before registration).
// tensor_options() still says meta there: use it for parameters, and plain
// factories for buffers (they follow the scope).
#pragma once

#include <metaguard/debug_checks.h>
#include <metaguard/errors.h>

#include <torch/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>

// Put on users' own loader functions so that the clang-tidy check
// metaguard-from-pretrained-in-meta-scope treats calls to them as loads.
#if defined(__has_cpp_attribute)
#if __has_cpp_attribute(clang::annotate)
#define METAGUARD_LOADS_WEIGHTS [[clang::annotate("metaguard::loads_weights")]]
#endif
#endif
#ifndef METAGUARD_LOADS_WEIGHTS
#define METAGUARD_LOADS_WEIGHTS
#endif

namespace metaguard {

// Parses "meta", "cpu", "cuda", "cuda:0", ... ; throws Error naming the text.
torch::Device parse_device(std::string_view text);

// Sets the process-wide default device. Every overload is exact for its
// argument type, so none is ambiguous.
void set_default_device(torch::Device device);
void set_default_device(c10::DeviceType type);
void set_default_device(std::string_view name);
void set_default_device(const std::string &name);
void set_default_device(const char *name);
// Clears the default device (as if set_default_device had never been called).
void reset_default_device();
std::optional<torch::Device> default_device();

// The innermost live scope on this thread, else the default device, else
// nullopt (nothing set: LibTorch's own default, the CPU, applies).
std::optional<torch::Device> ambient_device();
bool meta_device_active();
// Whether buffers, not only parameters, are created on the ambient device.
// False only inside init_empty_weights(false).
bool ambient_includes_buffers();
// Whether LibTorch factory functions follow meta scopes in this process
// (false only when another library took the dispatch key metaguard uses;
// a warning says so). Installs the hook on first call.
bool meta_factories_available();

// Options on the ambient device (CPU when nothing is set), for layers that
// allocate through metaguard so that construction under meta allocates nothing.
torch::TensorOptions tensor_options();

// Makes `device` the ambient device of this thread for the scope's lifetime.
// Scopes nest and restore the previous state on exit, also during unwinding.
class DeviceScope {
public:
  explicit DeviceScope(torch::Device device);
  ~DeviceScope();
  DeviceScope(const DeviceScope &) = delete;
  DeviceScope &operator=(const DeviceScope &) = delete;
  DeviceScope(DeviceScope &&) = delete;
  DeviceScope &operator=(DeviceScope &&) = delete;

  torch::Device device() const { return device_; }
  bool include_buffers() const { return include_buffers_; }

protected:
  DeviceScope(torch::Device device, bool include_buffers);

private:
  torch::Device device_;
  bool include_buffers_;
  const DeviceScope *previous_;
  bool previous_meta_factories_;
};

// A DeviceScope on the meta device: parameters (and buffers, when
// include_buffers) created inside have shapes but no storage.
class MetaDeviceScope : public DeviceScope {
public:
  MetaDeviceScope() : MetaDeviceScope(true) {}
  explicit MetaDeviceScope(bool include_buffers);
};

// accelerate's init_empty_weights: build a model skeleton without allocating
// its parameters. Buffers stay real unless include_buffers is true.
[[nodiscard]] MetaDeviceScope init_empty_weights(bool include_buffers = false);

// Runs f() with the meta device ambient and returns what it returns.
template <class F> decltype(auto) with_meta_device(F &&f) {
  MetaDeviceScope scope;
  return std::forward<F>(f)();
}

} // namespace metaguard
