#include <metaguard/offload_checks.h>

#include <atomic>

namespace metaguard {

namespace {
// Off until a translation unit compiled without NDEBUG that includes
// debug_checks.h registers at start-up (the user's debug build, not ours);
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
void default_offload_checks_on() noexcept {
  if (!g_verify_set_explicitly.load())
    g_verify_on_materialise.store(true);
}
} // namespace detail

} // namespace metaguard
