// Error types raised by metaguard. Every error says what happened, where
// (file, tensor or key) and what to do about it.
#pragma once

#include <stdexcept>
#include <string>

namespace metaguard {

// Base of every metaguard error, so callers can catch them all at once.
class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// Real weights were requested while the ambient device is meta, or a model
// built empty (on meta) was used as if it had weights.
class MetaDeviceError : public Error {
public:
  using Error::Error;
};

// A tensor that to_empty gave memory to was read (by an operator, a move or
// save_pretrained) before anything wrote it: its memory still holds the
// poison to_empty filled it with (docs/runtime-loading.md, "Empty models").
// Raised by the debug checks only (debug_checks.h); a sibling of
// MetaDeviceError, which is about tensors that have no memory at all.
class UninitializedMemoryError : public Error {
public:
  using Error::Error;
};

// An offloaded parameter can no longer reach its bytes (hook removed,
// tensor moved or replaced), or offload data on disk is unusable.
class OffloadError : public Error {
public:
  using Error::Error;
};

// A checkpoint, index or config file is malformed or does not match the model.
class FormatError : public Error {
public:
  using Error::Error;
};

} // namespace metaguard
