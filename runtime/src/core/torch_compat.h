// Private to the library: the one place where the runtime's code differs
// between the LibTorch versions it is built against (Debian's 1.13 and the
// 2.x of the PyTorch wheel and the libtorch archives). Everything else is
// written once against the API both share. Which dispatcher keys each version
// uses, and why: docs/runtime-loading.md, "LibTorch versions".
#pragma once

#include <c10/core/DispatchKey.h>
#include <c10/util/Exception.h>
#include <torch/version.h>

namespace metaguard::detail {

// The mode key a meta scope includes thread-locally: above BackendSelect,
// registered by no library (PyTorch uses it only in its own dispatcher
// tests). 1.13 and 2.x both keep it, above BackendSelect.
constexpr c10::DispatchKey kScopeModeKey = c10::DispatchKey::TESTING_ONLY_GenericMode;

// The functionality key an offloaded parameter carries (offload_dispatch.h):
// above autograd and below kScopeModeKey, registered by no library (only
// PyTorch's own dispatcher tests). Neither version reserves a functionality
// key for libraries; 1.13 and 2.x both keep this one in that place.
constexpr c10::DispatchKey kOffloadKey = c10::DispatchKey::TESTING_ONLY_GenericWrapper;

// Swallows LibTorch warnings on the calling thread for its lifetime. 2.x
// moved the guard into c10::WarningUtils and hands the handler a c10::Warning;
// 1.13's guard lives in c10::Warning and its handler is process-wide, so
// another thread's warning in that window is lost too.
class QuietWarnings : public c10::WarningHandler {
public:
  QuietWarnings() : guard_(this) {}
#if TORCH_VERSION_MAJOR >= 2
  void process(const c10::Warning &) override {}

private:
  c10::WarningUtils::WarningHandlerGuard guard_;
#else
  void process(const c10::SourceLocation &, const std::string &, bool) override {}

private:
  c10::Warning::WarningHandlerGuard guard_;
#endif
};

} // namespace metaguard::detail
