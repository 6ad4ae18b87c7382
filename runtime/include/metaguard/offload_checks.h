// Whether the offload runtime runs its debug checks. Included by
// offload_hook.h; a header of its own so that the offload dispatch fallback
// can read the setting without the hook API. How a debug build turns them
// on: debug_checks.h.
#pragma once

#include <metaguard/debug_checks.h>

namespace metaguard {

// Debug checks: whether every OnloadGuard runs the full verify_dispatch
// check on its subtree before materialising, and whether an operator that
// writes into an offloaded parameter (copy_, add_, ...) raises OffloadError
// instead of writing into a copy that is thrown away. On when the program
// has a translation unit compiled without NDEBUG that includes this header
// (your debug build, whatever build libmetaguard came from), off otherwise;
// set_verify_on_materialise decides explicitly. The cheap checks (replaced or
// moved parameters, parameters whose hook was removed) always run.
void set_verify_on_materialise(bool on);
bool verify_on_materialise();

namespace detail {
// Turns the offload debug checks on unless set_verify_on_materialise chose;
// called by note_debug_translation_unit.
void default_offload_checks_on() noexcept;
} // namespace detail

} // namespace metaguard
