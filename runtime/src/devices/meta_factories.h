// Private to the library: makes LibTorch factory functions (torch::empty,
// zeros, randn, ... and so every torch::nn layer) create meta tensors while
// the ambient device says so. See docs/runtime-loading.md, "Stock layers
// under a meta scope", for the mechanism and why it was chosen.
#pragma once

namespace metaguard::detail {

// Installs the dispatcher hooks once per process (on first use). False when
// they could not be installed (another library owns the dispatch key);
// scopes then fall back to releasing parameters after construction.
bool meta_factories_installed();

// Turns the redirection on or off for the calling thread (a thread-local
// dispatch key); returns the previous state, for scopes to restore.
bool set_thread_meta_factories(bool on);

// Turns the redirection on or off for every thread, present and future (the
// process default device). Registers per-operator kernels on a key every
// factory call passes through; they defer to the calling thread's scope.
void set_process_meta_factories(bool on);

// Implemented in device.cpp: whether a factory call on this thread without
// an explicit device must go to meta because of the process default, i.e.
// no scope is live on this thread and the default device is meta.
bool process_default_sends_factories_to_meta();

} // namespace metaguard::detail
