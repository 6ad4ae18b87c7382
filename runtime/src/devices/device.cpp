#include <metaguard/device.h>

#include "devices/empty_model.h"
#include "devices/meta_factories.h"
#include "devices/parameter_release.h"

#include <atomic>
#include <mutex>

namespace metaguard {
namespace {

// The default device is per-process; a mutex keeps optional<Device> reads
// and writes whole across threads.
std::mutex default_mutex;
std::optional<torch::Device> default_slot;
// Read by every factory call while the default is meta: no lock there.
std::atomic<bool> default_is_meta{false};

// Innermost live scope of this thread; each scope remembers the one it hides.
thread_local const DeviceScope *innermost_scope = nullptr;

} // namespace

torch::Device parse_device(std::string_view text) {
  try {
    return torch::Device(std::string(text));
  } catch (const std::exception &) {
    throw Error("'" + std::string(text) +
                "' is not a device name; use e.g. \"meta\", \"cpu\" or "
                "\"cuda:0\"");
  }
}

void set_default_device(torch::Device device) {
  std::lock_guard<std::mutex> lock(default_mutex);
  default_slot = device;
  default_is_meta = device.is_meta();
  detail::set_process_meta_factories(device.is_meta());
}
void set_default_device(c10::DeviceType type) {
  set_default_device(torch::Device(type));
}
void set_default_device(std::string_view name) {
  set_default_device(parse_device(name));
}
void set_default_device(const std::string &name) {
  set_default_device(std::string_view(name));
}
void set_default_device(const char *name) {
  if (name == nullptr)
    throw Error("set_default_device was given a null device name");
  set_default_device(std::string_view(name));
}

void reset_default_device() {
  std::lock_guard<std::mutex> lock(default_mutex);
  default_slot.reset();
  default_is_meta = false;
  detail::set_process_meta_factories(false);
}

std::optional<torch::Device> default_device() {
  std::lock_guard<std::mutex> lock(default_mutex);
  return default_slot;
}

std::optional<torch::Device> ambient_device() {
  if (innermost_scope != nullptr)
    return innermost_scope->device();
  return default_device();
}

bool meta_device_active() {
  const auto device = ambient_device();
  return device && device->is_meta();
}

bool detail::process_default_sends_factories_to_meta() {
  return innermost_scope == nullptr && default_is_meta.load(std::memory_order_relaxed);
}

bool detail::thread_releases_parameters() {
  return innermost_scope != nullptr && innermost_scope->device().is_meta() &&
         !innermost_scope->include_buffers();
}

bool detail::thread_meta_scope_live() {
  return innermost_scope != nullptr && innermost_scope->device().is_meta();
}

std::string detail::ambient_meta_description() {
  if (thread_meta_scope_live())
    return innermost_scope->include_buffers()
               ? "a meta scope (MetaDeviceScope, DeviceScope(meta), with_meta_device or init_empty_weights(true))"
               : "init_empty_weights()";
  return "set_default_device(\"meta\")";
}

bool meta_factories_available() { return detail::meta_factories_installed(); }

bool ambient_includes_buffers() {
  return innermost_scope == nullptr || innermost_scope->include_buffers();
}

torch::TensorOptions tensor_options() {
  return torch::TensorOptions().device(
      ambient_device().value_or(torch::Device(torch::kCPU)));
}

DeviceScope::DeviceScope(torch::Device device) : DeviceScope(device, true) {}

DeviceScope::DeviceScope(torch::Device device, bool include_buffers)
    : device_(device), include_buffers_(include_buffers),
      previous_(innermost_scope),
      // Every meta scope routes this thread's operators through the scope
      // fallback: to send factories to meta, or, when buffers stay real, to
      // release parameters as they are registered (parameter_release.h).
      previous_meta_factories_(detail::set_thread_meta_factories(device.is_meta())) {
  innermost_scope = this;
  if (detail::thread_releases_parameters())
    detail::begin_parameter_release();
}

DeviceScope::~DeviceScope() {
  // Parameters registered since the last operator are released here, while
  // the scope is still innermost.
  if (detail::thread_releases_parameters())
    detail::end_parameter_release();
  innermost_scope = previous_;
  detail::set_thread_meta_factories(previous_meta_factories_);
}

MetaDeviceScope::MetaDeviceScope(bool include_buffers)
    : DeviceScope(torch::Device(torch::kMeta), include_buffers) {}

MetaDeviceScope init_empty_weights(bool include_buffers) {
  return MetaDeviceScope(include_buffers);
}

} // namespace metaguard
