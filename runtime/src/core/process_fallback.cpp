#include "core/process_fallback.h"

#include <iostream>

namespace metaguard::detail {

bool register_process_fallback(c10::DispatchKey key, c10::KernelFunction kernel, const char *debug,
                               std::string_view feature, std::string_view without) {
  try {
    new c10::RegistrationHandleRAII(c10::Dispatcher::singleton().registerFallback(key, std::move(kernel), debug));
    return true;
  } catch (const std::exception &e) {
    std::cerr << "metaguard: warning: cannot " << feature << ", another library registered dispatch key "
              << c10::toString(key) << " first; " << without << " (" << e.what() << ")\n";
    return false;
  }
}

} // namespace metaguard::detail
