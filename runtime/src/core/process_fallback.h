// A dispatcher fallback registered once for the life of the process: the
// meta scopes' and transparent offload's. Both take a dispatch key no
// library owns (torch_compat.h), so another library may have taken it
// first; then the feature is off and the user is told what they lose.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <string_view>

namespace metaguard::detail {

// Registers kernel as the fallback of key and returns true; or, when the
// key is taken, writes "metaguard: warning: cannot <feature>, ...; <without>"
// to stderr and returns false. The registration is never undone: undoing it
// during static destruction could outlive the dispatcher.
bool register_process_fallback(c10::DispatchKey key, c10::KernelFunction kernel, const char *debug,
                               std::string_view feature, std::string_view without);

} // namespace metaguard::detail
