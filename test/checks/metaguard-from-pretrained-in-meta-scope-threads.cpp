// RUN: %check_clang_tidy -std=c++20 %s metaguard-from-pretrained-in-meta-scope

// Threads: the default device is the process's, so a thread started while it
// is meta loads on meta; device scopes belong to the thread that opens them
// (runtime/include/metaguard/device.h), so a thread started inside one does
// not see it. A deferred std::async task runs on the thread that calls get()
// or wait(), in the scopes live there.

#include "fixtures/indirect-calls.h"

#include <functional>
#include <future>
#include <thread>
#include <vector>

// ---- Threads started while the default device is meta --------------------

void threadAfterMetaDefault(const fs::path &p) {
  metaguard::set_default_device("meta");
  std::thread worker([&] { auto e = metaguard::from_pretrained<Encoder>(p); });
  // CHECK-NOTES: :[[@LINE-1]]:15: warning: 'lambda' loads pretrained weights (through 'metaguard::from_pretrained') while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:3: note: the default device is set to meta here
  // CHECK-NOTES: :[[@LINE-3]]:37: note: 'metaguard::from_pretrained' loads the weights here, in 'lambda'
  worker.join();
  metaguard::reset_default_device();
}

void asyncAfterMetaDefault(const fs::path &p) {
  metaguard::set_default_device(torch::kMeta);
  auto done = std::async(std::launch::async, loadEncoder, p);
  // CHECK-NOTES: :[[@LINE-1]]:15: warning: 'loadEncoder' loads pretrained weights (through 'metaguard::from_pretrained') while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:3: note: the default device is set to meta here
  // CHECK-NOTES: indirect-calls.h:22:10: note: 'metaguard::from_pretrained' loads the weights here, in 'loadEncoder'
  done.get();
}

// std::async's default policy may start a thread: libstdc++ and libc++ do.
void asyncDefaultPolicy(const fs::path &p) {
  metaguard::set_default_device(torch::kMeta);
  auto done = std::async([&] { return loadEncoder(p); });
  // CHECK-NOTES: :[[@LINE-1]]:15: warning: 'lambda' loads pretrained weights (through 'metaguard::from_pretrained') while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:3: note: the default device is set to meta here
  // CHECK-NOTES: indirect-calls.h:22:10: note: 'metaguard::from_pretrained' loads the weights here, in 'loadEncoder'
  done.wait();
}

// A std::function handed to a thread runs what was stored in it.
void storedFunctionOnAThread(const fs::path &p) {
  std::function<Encoder(const fs::path &)> load = loadEncoder;
  metaguard::set_default_device("meta");
  std::thread worker(load, p);
  // CHECK-NOTES: :[[@LINE-1]]:15: warning: 'loadEncoder' loads pretrained weights (through 'metaguard::from_pretrained') while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:3: note: the default device is set to meta here
  // CHECK-NOTES: indirect-calls.h:22:10: note: 'metaguard::from_pretrained' loads the weights here, in 'loadEncoder'
  worker.join();
  metaguard::reset_default_device();
}

void jthreadAndPool(const fs::path &p) {
  metaguard::set_default_device("meta");
  std::jthread stoppable([&](std::stop_token) { loadEncoder(p); });
  // CHECK-NOTES: :[[@LINE-1]]:16: warning: 'lambda' loads pretrained weights
  // CHECK-NOTES: :[[@LINE-3]]:3: note: the default device is set to meta here
  // CHECK-NOTES: indirect-calls.h:22:10: note: 'metaguard::from_pretrained' loads the weights here
  std::vector<std::thread> pool;
  pool.emplace_back(loadEncoder, p);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'loadEncoder' loads pretrained weights
  // CHECK-NOTES: :[[@LINE-8]]:3: note: the default device is set to meta here
  // CHECK-NOTES: indirect-calls.h:22:10: note: 'metaguard::from_pretrained' loads the weights here
  for (std::thread &t : pool)
    t.join();
}

// A helper whose loads all run on a thread it starts: the caller's default
// device reaches them, even under a scope of the caller's.
void startLoader(const fs::path &p) {
  std::thread worker(loadEncoder, p);
  worker.detach();
}

void helperThreadAfterMetaDefault(const fs::path &p) {
  metaguard::set_default_device("meta");
  {
    metaguard::DeviceScope cpu(torch::kCPU);
    startLoader(p);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'startLoader' loads pretrained weights (through 'metaguard::from_pretrained') while the default device is meta
    // CHECK-NOTES: :[[@LINE-5]]:3: note: the default device is set to meta here
    // CHECK-NOTES: indirect-calls.h:22:10: note: 'metaguard::from_pretrained' loads the weights here
  }
  metaguard::reset_default_device();
}

// ---- Deferred tasks run where they are waited for ------------------------

void deferredWaitedInScope(const fs::path &p) {
  metaguard::MetaDeviceScope scope;
  auto task = std::async(std::launch::deferred, [&] { return loadEncoder(p); });
  auto e = task.get();
  // CHECK-NOTES: :[[@LINE-1]]:12: warning: 'lambda' loads pretrained weights (through 'metaguard::from_pretrained') while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-4]]:30: note: meta-device scope 'scope' is active
  // CHECK-NOTES: indirect-calls.h:22:10: note: 'metaguard::from_pretrained' loads the weights here
}

// ---- Near misses ---------------------------------------------------------

// Scopes are per thread: the worker loads on the default device.
void threadInsideMetaScope(const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  std::thread worker([&] { auto e = metaguard::from_pretrained<Encoder>(p); });
  worker.join();
  auto done = std::async(std::launch::async, loadEncoder, p);
  done.get();
  metaguard::with_meta_device([&] {
    std::thread inner(loadEncoder, p);
    inner.join();
  });
  startLoader(p);
}

void threadAfterReset(const fs::path &p) {
  metaguard::set_default_device("meta");
  metaguard::reset_default_device();
  std::thread worker(loadEncoder, p);
  worker.join();
}

// A std::function that holds only a factory of empty models.
void storedEmptyFactoryOnAThread(const fs::path &p) {
  std::function<Encoder(const fs::path &)> make = emptyEncoder;
  metaguard::set_default_device("meta");
  std::thread worker(make, p);
  worker.join();
  metaguard::reset_default_device();
}

// A thread that sets its own device before loading.
void threadSetsItsOwnDevice(const fs::path &p) {
  metaguard::set_default_device("meta");
  std::thread worker([&] {
    metaguard::DeviceScope cpu(torch::kCPU);
    loadEncoder(p);
  });
  worker.join();
  metaguard::reset_default_device();
}

// A deferred task made in a meta scope but run after it.
Encoder deferredWaitedOutside(const fs::path &p) {
  std::future<Encoder> task;
  {
    metaguard::MetaDeviceScope scope;
  }
  auto later = std::async(std::launch::deferred, loadEncoder, p);
  {
    metaguard::MetaDeviceScope scope;
    auto other = std::async(std::launch::deferred, loadEncoder, p);
  }
  return later.get();
}
