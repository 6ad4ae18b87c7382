// What metaguard does when it detects a rule violation at run time.
#pragma once

#include <metaguard/errors.h>

#include <string_view>

namespace metaguard {

// Throw: raise the typed error (default). Abort: print the message and abort
// (useful under a debugger or in death tests). Warn: print and carry on.
// Off: skip the check entirely.
enum class Policy { Throw, Abort, Warn, Off };

// The process-wide policy. Initialised once from METAGUARD_POLICY
// (throw|abort|warn|off, case-insensitive) and Throw when unset; an
// unrecognised value is reported on stderr and ignored.
Policy policy();
void set_policy(Policy p);

// Parses "throw", "abort", "warn" or "off"; throws Error naming a bad value.
Policy parse_policy(std::string_view text);
std::string_view to_string(Policy p);

namespace detail {
// Prints the violation; aborts under Policy::Abort.
void report_violation(const Error &error, Policy p);

// Applies the current policy to a violation of type E: throws E under Throw,
// aborts under Abort, prints under Warn, and ignores it under Off. Callers
// that can skip the detection work should test `policy() == Policy::Off`.
template <class E> void enforce(const E &error) {
  const Policy p = policy();
  if (p == Policy::Throw)
    throw error;
  report_violation(error, p);
}
} // namespace detail

} // namespace metaguard
