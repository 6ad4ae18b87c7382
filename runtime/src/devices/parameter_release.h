// Private to the library: init_empty_weights() (buffers excluded, the
// default) puts parameters on the meta device and keeps buffers real, as
// accelerate's does. Factory functions cannot tell a future parameter from a
// future buffer, so inside such a scope they stay real, and every tensor the
// scope's operators create is watched (weakly): as soon as one has become a
// leaf that requires gradients (torch::nn::Module::register_parameter did
// that; register_buffer never does), it is released to meta in place, before
// the next operator on this thread runs and at the latest when the scope
// ends. Parameters are thus released before any initialisation kernel writes
// them; buffers keep their values. See docs/runtime-loading.md,
// "init_empty_weights: parameters on meta, buffers real", for why this hook
// and not another.
#pragma once

#include <ATen/core/stack.h>

#include <cstddef>

namespace metaguard::detail {

// A parameters-only meta scope begins or ends on this thread. Frames nest;
// ending one releases what its tensors became parameters and forgets them.
void begin_parameter_release();
void end_parameter_release();

// Called by the scope's dispatcher fallback before each operator: releases
// every watched tensor that is now a parameter. True when any was released
// (the operator's dispatch keys must then be computed again).
bool release_new_parameters();

// Called after each operator, whose `returns` outputs end the stack:
// watches every real floating-point or complex tensor among them.
void watch_outputs(const torch::jit::Stack &stack, std::size_t returns);

// Implemented in device.cpp: whether the innermost scope on this thread is a
// meta scope that keeps buffers real.
bool thread_releases_parameters();

} // namespace metaguard::detail
