// Test helpers for the offload rule: the message of the OffloadError a call
// raises (a test failure when it raises none), and substring search.
#pragma once

#include <metaguard/errors.h>

#include <gtest/gtest.h>

#include <string>

template <class F> std::string offload_error_of(F &&f) {
  try {
    f();
  } catch (const metaguard::OffloadError &e) {
    return e.what();
  }
  ADD_FAILURE() << "expected OffloadError";
  return {};
}

inline bool has(const std::string &text, const std::string &needle) {
  return text.find(needle) != std::string::npos;
}
