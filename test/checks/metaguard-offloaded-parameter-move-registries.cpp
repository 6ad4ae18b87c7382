// RUN: %check_clang_tidy -std=c++20 %s metaguard-offloaded-parameter-move
//
// Registries of jobs: tables of std::function reached through a helper that
// returns a reference to a static one, filled from a namespace-scope
// initialiser or a registration object's constructor, called through at(),
// [] or find(); a table passed as a parameter, and an iterator kept in a
// data member.

#include "fixtures/indirect-calls.h"

#include <functional>
#include <map>
#include <string>

using Job = std::function<void(Net &)>;
using JobTable = std::map<std::string, Job>;

// ---- Filled by a namespace-scope initialiser --------------------------------

JobTable &jobs() {
  static JobTable t;
  return t;
}

static bool registeredGpu = (jobs()["gpu"] = moveToGpu, true);
static bool registeredLook = (jobs().emplace("look", lookAt), true);

void runRegistered(Net m, const DeviceMap &map, const std::string &name) {
  metaguard::dispatch_model(*m, map);
  jobs().at(name)(m);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'moveToGpu' moves dispatched model 'm' (with 'to')
  // CHECK-NOTES: indirect-calls.h:34:33: note: it is moved here with 'to', in 'moveToGpu'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
}

// ---- Filled by registration objects, called through [] and find() ------------

JobTable &steps() {
  static JobTable t;
  return t;
}

struct StepRegistration {
  StepRegistration(const std::string &name, Job job) {
    steps()[name] = std::move(job);
  }
};

#define REGISTER_STEP(name, job)                                              \
  static StepRegistration step_##name(#name, job)

REGISTER_STEP(halve, halveWeights);

void runStep(Net m, const DeviceMap &map, const std::string &name) {
  metaguard::dispatch_model(*m, map);
  steps()[name](m);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'halveWeights' changes a parameter of dispatched model 'm' in place (with 'mul_')
  // CHECK-NOTES: indirect-calls.h:37:5: note: its parameter is changed here with 'mul_', in 'halveWeights'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
  steps().find(name)->second(m);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'halveWeights' changes a parameter of dispatched model 'm' in place (with 'mul_')
  // CHECK-NOTES: indirect-calls.h:37:5: note: its parameter is changed here with 'mul_', in 'halveWeights'
  // CHECK-NOTES: :[[@LINE-8]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
}

// ---- A table passed as a parameter -----------------------------------------

void runFrom(const JobTable &t, Net m, const DeviceMap &map,
             const std::string &name) {
  metaguard::dispatch_model(*m, map);
  t.at(name)(m);
  // CHECK-NOTES: :[[@LINE-1]]:3: warning: 'moveToGpu' moves dispatched model 'm' (with 'to')
  // CHECK-NOTES: indirect-calls.h:34:33: note: it is moved here with 'to', in 'moveToGpu'
  // CHECK-NOTES: :[[@LINE-4]]:3: note: 'm' is dispatched here by 'metaguard::dispatch_model'
}

void runJobs(Net m, const DeviceMap &map, const std::string &name) {
  runFrom(jobs(), m, map, name);
}

// ---- An iterator kept in a data member --------------------------------------

class Scheduler {
public:
  void pick(const std::string &name) { next_ = jobs().find(name); }
  void run(Net m, const DeviceMap &map) {
    metaguard::dispatch_model(*m, map);
    next_->second(m);
    // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'moveToGpu' moves dispatched model 'm' (with 'to')
    // CHECK-NOTES: indirect-calls.h:34:33: note: it is moved here with 'to', in 'moveToGpu'
    // CHECK-NOTES: :[[@LINE-4]]:5: note: 'm' is dispatched here by 'metaguard::dispatch_model'
  }

private:
  JobTable::iterator next_;
};

// ---- Near misses ------------------------------------------------------------

// A registry that only holds a look at the model.
JobTable &looks() {
  static JobTable t{{"look", lookAt}};
  return t;
}

static bool registeredPeek = (looks()["peek"] = lookAt, true);

void runLooks(const JobTable &t, Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  t.at("look")(m);
}

class LookScheduler {
public:
  void pick(const std::string &name) { next_ = looks().find(name); }
  void run(Net m, const DeviceMap &map) {
    metaguard::dispatch_model(*m, map);
    next_->second(m);
    looks().at("peek")(m);
    runLooks(looks(), m, map);
  }

private:
  JobTable::iterator next_;
};

// A model that was never dispatched may move; a table parameter whose
// callers are not all known is not followed.
void runUndispatched(Net m, const std::string &name) { jobs().at(name)(m); }

void runFromAny(const JobTable &t, Net m, const DeviceMap &map) {
  metaguard::dispatch_model(*m, map);
  t.at("gpu")(m);
}

void callRunFromAny(const JobTable &given, Net m, const DeviceMap &map) {
  runFromAny(jobs(), m, map);
  runFromAny(given, m, map);
}
