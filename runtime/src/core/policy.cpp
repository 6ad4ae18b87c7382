#include <metaguard/policy.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <iostream>
#include <string>

namespace metaguard {
namespace {

Policy initial_policy() {
  const char *env = std::getenv("METAGUARD_POLICY");
  if (env == nullptr || *env == '\0')
    return Policy::Throw;
  try {
    return parse_policy(env);
  } catch (const Error &e) {
    // A typo in the environment must not change behaviour silently, nor
    // crash a program at start-up: keep the safe default and say so.
    std::cerr << "metaguard: " << e.what() << "; using 'throw'\n";
    return Policy::Throw;
  }
}

std::atomic<Policy> &policy_slot() {
  static std::atomic<Policy> slot{initial_policy()};
  return slot;
}

} // namespace

Policy policy() { return policy_slot().load(std::memory_order_relaxed); }

void set_policy(Policy p) { policy_slot().store(p, std::memory_order_relaxed); }

Policy parse_policy(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (lower == "throw")
    return Policy::Throw;
  if (lower == "abort")
    return Policy::Abort;
  if (lower == "warn")
    return Policy::Warn;
  if (lower == "off")
    return Policy::Off;
  throw Error("METAGUARD_POLICY value '" + std::string(text) +
              "' is not one of throw, abort, warn, off");
}

std::string_view to_string(Policy p) {
  switch (p) {
  case Policy::Throw:
    return "throw";
  case Policy::Abort:
    return "abort";
  case Policy::Warn:
    return "warn";
  case Policy::Off:
    return "off";
  }
  return "throw";
}

namespace detail {
void report_violation(const Error &error, Policy p) {
  if (p == Policy::Off)
    return;
  std::cerr << "metaguard: " << error.what() << '\n';
  if (p == Policy::Abort)
    std::abort();
}
} // namespace detail

} // namespace metaguard
