#include <metaguard/debug_checks.h>
#include <metaguard/offload_checks.h>

#include <atomic>

namespace metaguard {

namespace {
// As the offload checks: off until a debug translation unit registers; an
// explicit set_empty_model_checks wins over later registrations.
std::atomic<bool> g_empty_model_checks{false};
std::atomic<bool> g_empty_set_explicitly{false};
} // namespace

void set_empty_model_checks(bool on) {
  g_empty_set_explicitly.store(true);
  g_empty_model_checks.store(on);
}
bool empty_model_checks() { return g_empty_model_checks.load(std::memory_order_relaxed); }

namespace detail {
bool note_debug_translation_unit() noexcept {
  if (!g_empty_set_explicitly.load())
    g_empty_model_checks.store(true);
  default_offload_checks_on();
  return true;
}
} // namespace detail

} // namespace metaguard
