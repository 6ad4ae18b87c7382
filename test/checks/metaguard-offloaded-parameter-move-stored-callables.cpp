// RUN: %check_clang_tidy -std=c++20 %s metaguard-offloaded-parameter-move
//
// Thread bodies given as a std::function: a local one, a member, an element
// of a table of them. The thread runs a copy of it, so it runs whatever the
// translation unit stores into the variable, member or table, as a call
// through it does.

#include "fixtures/indirect-calls.h"

#include <functional>
#include <future>
#include <map>
#include <string>
#include <thread>

// ---- A local std::function --------------------------------------------------

void threadRunsStoredLambda(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  std::function<void()> job = [&] { m->to(torch::kCUDA); };
  std::thread worker(job);
  // CHECK-NOTES: :[[@LINE-1]]:15: warning: 'lambda' moves dispatched model 'm' (with 'to')
  // CHECK-NOTES: :[[@LINE-3]]:37: note: it is moved here with 'to', in 'lambda'
  // CHECK-NOTES: :[[@LINE-5]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
  worker.join();
}

void asyncRunsStoredFunction(Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  std::function<void(Net &)> halve = halveWeights;
  auto done = std::async(std::launch::async, halve, std::ref(m));
  // CHECK-NOTES: :[[@LINE-1]]:15: warning: 'halveWeights' changes a parameter of dispatched model 'm' in place (with 'mul_')
  // CHECK-NOTES: indirect-calls.h:37:5: note: its parameter is changed here with 'mul_', in 'halveWeights'
  // CHECK-NOTES: :[[@LINE-5]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
  done.wait();
}

// ---- Members and tables ---------------------------------------------------------

struct Jobs {
  std::map<std::string, std::function<void(Net &)>> table{{"gpu", moveToGpu},
                                                          {"look", lookAt}};
  std::function<void(Net &)> onStart = lookAt;
  void halveOnStart() { onStart = halveWeights; }

  void run(Net m, const DeviceMap &map, const std::string &name) {
    metaguard::dispatch_model(*m, map);
    std::jthread fromTable(table.at(name), std::ref(m));
    // CHECK-NOTES: :[[@LINE-1]]:18: warning: 'moveToGpu' moves dispatched model 'm' (with 'to')
    // CHECK-NOTES: indirect-calls.h:34:33: note: it is moved here with 'to', in 'moveToGpu'
    // CHECK-NOTES: :[[@LINE-4]]:5: note: 'm' is dispatched here by 'metaguard::dispatch_model'
    std::thread fromMember(onStart, std::ref(m));
    // CHECK-NOTES: :[[@LINE-1]]:17: warning: 'halveWeights' changes a parameter of dispatched model 'm' in place (with 'mul_')
    // CHECK-NOTES: indirect-calls.h:37:5: note: its parameter is changed here with 'mul_', in 'halveWeights'
    // CHECK-NOTES: :[[@LINE-8]]:5: note: 'm' is dispatched here by 'metaguard::dispatch_model'
    fromMember.join();
  }
};

// ---- Calls through an element of a table ---------------------------------------

void callThroughTable(Jobs &jobs, Net m, const DeviceMap &map,
                      const std::string &name) {
  metaguard::dispatch_model(*m, map);
  jobs.table.find(name)->second(m);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'moveToGpu' moves dispatched model 'm' (with 'to')
  // CHECK-NOTES: indirect-calls.h:34:33: note: it is moved here with 'to', in 'moveToGpu'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
  for (auto &[key, job] : jobs.table)
    job(m);
  // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'moveToGpu' moves dispatched model 'm' (with 'to')
  // CHECK-NOTES: indirect-calls.h:34:33: note: it is moved here with 'to', in 'moveToGpu'
  // CHECK-NOTES: :[[@LINE-9]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
}

// ---- Near misses -------------------------------------------------------------

// Only functions that look at the model are stored.
struct LookOnly {
  std::function<void(Net &)> job = lookAt;
  std::map<std::string, std::function<void(Net &)>> table{{"look", lookAt}};
  void run(Net m, const DeviceMap &map) {
    metaguard::dispatch_model(*m, map);
    std::thread a(job, std::ref(m));
    std::thread b(table.at("look"), std::ref(m));
    a.join();
    b.join();
  }
};

void storedBodiesElsewhere(Net m, Net plain, const DeviceMap &map,
                           const std::function<void(Net &)> &given) {
  // A thread started before the model is dispatched.
  std::function<void()> early = [&] { m->to(torch::kCUDA); };
  std::thread before(early);
  before.join();
  metaguard::dispatch_model(*m, map);
  // A model that was never dispatched may move.
  std::function<void()> other = [&] { plain->to(torch::kCUDA); };
  std::thread mover(other);
  mover.join();
  // What a parameter holds is not known here.
  std::thread unknown(given, std::ref(m));
  unknown.join();
}

// The keys of a table of jobs, and a table that only holds a look.
void walkJobTables(LookOnly &look, Jobs &jobs, Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  for (auto &[key, job] : jobs.table)
    (void)key.size();
  look.table.find("look")->second(m);
}
