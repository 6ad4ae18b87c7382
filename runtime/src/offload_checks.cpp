#include <metaguard/offload_checks.h>

#include <atomic>

namespace metaguard {

namespace {
// Off until a translation unit compiled without NDEBUG that includes
// offload_checks.h (offload_hook.h and metaguard.h include it) registers at
// start-up (the user's debug build, not ours);
// an explicit set_verify_on_materialise wins over later registrations.
std::atomic<bool> g_verify_on_materialise{false};
std::atomic<bool> g_verify_set_explicitly{false};
} // namespace

void set_verify_on_materialise(bool on) {
  g_verify_set_explicitly.store(true);
  g_verify_on_materialise.store(on);
}
bool verify_on_materialise() { return g_verify_on_materialise.load(std::memory_order_relaxed); }

namespace detail {
bool note_debug_translation_unit() noexcept {
  if (!g_verify_set_explicitly.load())
    g_verify_on_materialise.store(true);
  return true;
}
} // namespace detail

} // namespace metaguard
