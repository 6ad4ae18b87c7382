// Test helpers for messages: an expectation that a text contains a part,
// and the message of the FormatError a call throws.
#pragma once

#include <metaguard/errors.h>

#include <gtest/gtest.h>

#include <functional>
#include <string>

#define EXPECT_CONTAINS(text, part)                                                                \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << "'" << (part) << "' not in: " << (text)

namespace metaguard_test {

// What `f` throws as a FormatError, or "(no FormatError)".
inline std::string format_error_of(const std::function<void()> &f) {
  try {
    f();
  } catch (const metaguard::FormatError &e) {
    return e.what();
  }
  return "(no FormatError)";
}

} // namespace metaguard_test
