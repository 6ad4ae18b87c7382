// RUN: %check_clang_tidy -std=c++17 %s metaguard-from-pretrained-in-meta-scope

// An exception may leave a try block anywhere, also between a meta setting
// and the reset after it: the state after the try statement is then the
// one its handler leaves.

#include <metaguard/metaguard.h>

namespace fs = std::filesystem;

struct EncoderImpl : torch::nn::Module {
  explicit EncoderImpl(const metaguard::Config &);
};
TORCH_MODULE(Encoder);

struct Error {};
void may_throw();
void log();

void handlerKeepsMeta(const fs::path &p) {
  try {
    metaguard::set_default_device("meta");
    may_throw();
    metaguard::set_default_device("cpu");
  } catch (...) {
    log();
  }
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-8]]:5: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-6]]:5: note: an exception that leaves the try block before its reset lands in this handler, which does not reset the default device
  // CHECK-NOTES: :[[@LINE-4]]:3: note: if an empty model is what you want here, build it from its config
}

void handlerResets(const fs::path &p) {
  try {
    metaguard::set_default_device("meta");
    may_throw();
    metaguard::set_default_device("cpu");
  } catch (...) {
    metaguard::set_default_device("cpu");
  }
  metaguard::from_pretrained<Encoder>(p);
}

// A meta setting before the try block: the exception skips the reset inside.
void setBeforeTheTry(const fs::path &p) {
  metaguard::set_default_device("meta");
  try {
    may_throw();
    metaguard::reset_default_device();
  } catch (const Error &) {
    log();
  }
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-9]]:3: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-6]]:5: note: an exception that leaves the try block before its reset lands in this handler, which does not reset the default device
  // CHECK-NOTES: :[[@LINE-4]]:3: note: if an empty model is what you want here, build it from its config
}

// The handler rethrows: nothing after the try statement runs after it.
void handlerRethrows(const fs::path &p) {
  try {
    metaguard::set_default_device("meta");
    may_throw();
    metaguard::set_default_device("cpu");
  } catch (...) {
    throw;
  }
  metaguard::from_pretrained<Encoder>(p);
}

// A handler that resets, and one that does not: the one that does not
// decides.
void oneOfTwoHandlersKeepsMeta(const fs::path &p) {
  try {
    metaguard::set_default_device("meta");
    may_throw();
    metaguard::reset_default_device();
  } catch (const Error &) {
    metaguard::reset_default_device();
  } catch (...) {
    log();
  }
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-10]]:5: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-6]]:5: note: an exception that leaves the try block before its reset lands in this handler, which does not reset the default device
  // CHECK-NOTES: :[[@LINE-4]]:3: note: if an empty model is what you want here, build it from its config
}

// The reset is after the try statement: every path runs it.
void resetAfterTheTry(const fs::path &p) {
  try {
    metaguard::set_default_device("meta");
    may_throw();
  } catch (...) {
    log();
  }
  metaguard::reset_default_device();
  metaguard::from_pretrained<Encoder>(p);
}

// A load in the handler itself runs with what the try block left.
void loadInTheHandler(const fs::path &p) {
  try {
    metaguard::set_default_device("meta");
    may_throw();
    metaguard::reset_default_device();
  } catch (...) {
    metaguard::from_pretrained<Encoder>(p);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
    // CHECK-NOTES: :[[@LINE-6]]:5: note: the default device is set to meta here
    // CHECK-NOTES: :[[@LINE-4]]:5: note: an exception that leaves the try block before its reset lands in this handler, which does not reset the default device
    // CHECK-NOTES: :[[@LINE-4]]:5: note: if an empty model is what you want here, build it from its config
  }
}

// A helper whose handler keeps meta returns with it on that path.
void enterAndTry() {
  try {
    metaguard::set_default_device("meta");
    may_throw();
    metaguard::reset_default_device();
  } catch (...) {
    log();
  }
}

void throughAHelper(const fs::path &p) {
  enterAndTry();
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:3: note: 'enterAndTry' returns with the default device set to meta
  // CHECK-NOTES: :[[@LINE-13]]:5: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-4]]:3: note: if an empty model is what you want here, build it from its config
}

// ---- Where an exception can start ---------------------------------------------
// A handler is entered from the calls of the try block that may throw (their
// callee is not noexcept), its throw-expressions and new-expressions, with the
// state just before them: a noexcept call, a destructor or a reset that
// cannot throw is no way into the handler.

void restoreDevice() noexcept { metaguard::reset_default_device(); }
void note_progress() noexcept {}
struct Marker {
  Marker() noexcept {}
  ~Marker() {}
};

// A reset that cannot throw right after the setter: no exception leaves the
// try block while the default device is meta (the setter itself may throw,
// before it sets anything).
void noexceptResetAfterTheSetter(const fs::path &p) {
  try {
    may_throw();
    metaguard::set_default_device("meta");
    restoreDevice();
  } catch (...) {
    log();
  }
  metaguard::from_pretrained<Encoder>(p);
}

// Between the setter and the reset, only what cannot throw: a noexcept call
// and an object whose construction and destruction cannot throw.
void nothingThrowsBeforeTheReset(const fs::path &p) {
  try {
    metaguard::set_default_device("meta");
    note_progress();
    { Marker m; }
    restoreDevice();
  } catch (const Error &) {
    log();
  }
  metaguard::from_pretrained<Encoder>(p);
}

// A call that may throw between the setter and the reset that cannot.
void throwingCallBeforeTheReset(const fs::path &p) {
  try {
    metaguard::set_default_device("meta");
    may_throw();
    restoreDevice();
  } catch (...) {
    log();
  }
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-8]]:5: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-6]]:5: note: an exception that leaves the try block before its reset lands in this handler, which does not reset the default device
  // CHECK-NOTES: :[[@LINE-4]]:3: note: if an empty model is what you want here, build it from its config
}

// A throw-expression between the setter and the reset. Clang's CFG has the
// edge from a throw-expression into the handlers itself, so this path is an
// ordinary one (no note at the handler).
void throwBeforeTheReset(const fs::path &p, bool bad) {
  try {
    metaguard::set_default_device("meta");
    if (bad)
      throw Error{};
    restoreDevice();
  } catch (const Error &) {
    log();
  }
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-9]]:5: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-3]]:3: note: if an empty model is what you want here, build it from its config
}

// The reset may throw itself (set_default_device is not noexcept): it has
// then reset nothing.
void throwingReset(const fs::path &p) {
  try {
    metaguard::set_default_device("meta");
    metaguard::set_default_device("cpu");
  } catch (...) {
    log();
  }
  metaguard::from_pretrained<Encoder>(p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'metaguard::from_pretrained' loads pretrained weights while the default device is meta
  // CHECK-NOTES: :[[@LINE-7]]:5: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-6]]:5: note: an exception that leaves the try block before its reset lands in this handler, which does not reset the default device
  // CHECK-NOTES: :[[@LINE-4]]:3: note: if an empty model is what you want here, build it from its config
}
