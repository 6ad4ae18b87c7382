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
// kind() says which, so that a caller can act on it without reading the
// message (e.g. fetch the real weights on lfs_pointer, retry on io).
class FormatError : public Error {
public:
  enum class Kind {
    malformed,   // the bytes break the format's rules (JSON, layout, pickle)
    truncated,   // shorter than its contents say, or shrunk while in use
    unsupported, // well formed, but metaguard cannot read it (dtype, byte order)
    missing,     // no such file, or no such tensor or key in it
    mismatch,    // well formed, but it does not fit the model it is loaded into
    lfs_pointer, // a git-lfs pointer file stands where the weights should be
    io,          // the operating system refused a read, a write or a rename
  };
  FormatError(Kind kind, const std::string &what) : Error(what), kind_(kind) {}
  // The message alone, as before errors had kinds: an application's own
  // "this checkpoint is unusable" is `malformed` unless it says otherwise.
  explicit FormatError(const std::string &what) : FormatError(Kind::malformed, what) {}
  Kind kind() const noexcept { return kind_; }

private:
  Kind kind_;
};

} // namespace metaguard
