// metaguard's debug checks follow the build type of the program that uses
// metaguard, not the one of the library: how a debug build turns them on, and
// the switch of the empty-model checks. Included by device.h (and so by every
// metaguard header); the offload checks' own switch is in offload_checks.h.
#pragma once

namespace metaguard {

// Empty-model checks: a model built empty (from_config or Model(config) while
// the meta device is ambient) has its meta tensors marked, and the first
// operator that reads one together with real tensors, a copy of one to a
// device, a set_data with real values and PreTrainedModel::to(device) raise
// MetaDeviceError naming the tensor, where the model was built empty and how
// to give it weights (docs/runtime-loading.md, "Using an empty model before
// its weights are there"). save_pretrained refuses meta tensors in every
// build; with the checks on its message also says where the model was built
// empty. Outside a meta scope only: inside one, models are being built.
// On when the program has a translation unit compiled without NDEBUG that
// includes this header (your debug build, whatever build libmetaguard came
// from), off otherwise; set_empty_model_checks decides explicitly. Only
// models built while the checks are on are marked.
void set_empty_model_checks(bool on);
bool empty_model_checks();

namespace detail {
// Called once at start-up by each debug translation unit: turns the empty
// model checks and the offload debug checks (set_verify_on_materialise) on,
// unless a program chose explicitly before. Returns true.
bool note_debug_translation_unit() noexcept;
#ifndef NDEBUG
// Internal linkage: one per translation unit, so debug and release units
// can share a program without an ODR conflict.
[[maybe_unused]] static const bool debug_translation_unit = note_debug_translation_unit();
#endif
} // namespace detail

} // namespace metaguard
