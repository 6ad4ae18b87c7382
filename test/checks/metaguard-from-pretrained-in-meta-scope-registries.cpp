// RUN: %check_clang_tidy -std=c++20 %s metaguard-from-pretrained-in-meta-scope

// Registries: tables of factories reached through a helper that returns a
// reference to a static one (the table is known by the helper), filled by
// its subscript, emplace or insert, from a function, a namespace-scope
// initialiser or a registration object's constructor, and called through
// at(), [] or find(); tables passed as a parameter (they hold what every
// call site passes), and iterators kept in a data member.

#include "fixtures/indirect-calls.h"

#include <functional>
#include <map>
#include <string>
#include <unordered_map>

using Factory = std::function<Encoder(const fs::path &)>;
using Registry = std::map<std::string, Factory>;

// ---- Filled by a function, called through at() ----------------------------

Registry &models() {
  static Registry r;
  return r;
}

void registerModels() {
  models()["empty"] = emptyEncoder;
  models().emplace("pretrained", loadEncoder);
}

Encoder buildModel(const std::string &name, const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  return models().at(name)(p);
  // CHECK-NOTES: :[[@LINE-1]]:10: warning: 'loadEncoder' loads pretrained weights (through 'metaguard::from_pretrained') while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-3]]:8: note: meta-device scope 'guard'
  // CHECK-NOTES: indirect-calls.h:22:10: note: 'metaguard::from_pretrained' loads the weights here, in 'loadEncoder'
}

// ---- Filled by a namespace-scope initialiser, called through [] ------------

Registry &encoders() {
  static Registry r;
  return r;
}

static bool registeredBert =
    (encoders()["bert"] = [](const fs::path &p) { return loadEncoder(p); },
     true);

void buildEncoder(const std::string &name, const fs::path &p) {
  metaguard::set_default_device("meta");
  auto e = encoders()[name](p);
  // CHECK-NOTES: :[[@LINE-1]]:12: warning: 'lambda' loads pretrained weights (through 'metaguard::from_pretrained') while the default device is meta
  // CHECK-NOTES: :[[@LINE-3]]:3: note: the default device is set to meta here
  // CHECK-NOTES: indirect-calls.h:22:10: note: 'metaguard::from_pretrained' loads the weights here, in 'loadEncoder'
  metaguard::reset_default_device();
}

// ---- Filled by registration objects (a REGISTER_MODEL macro), called
// through find() -------------------------------------------------------------

std::unordered_map<std::string, Factory> &builders() {
  static std::unordered_map<std::string, Factory> r;
  return r;
}

struct Registration {
  Registration(const std::string &name, Factory make) {
    builders().insert({name, std::move(make)});
  }
};

#define REGISTER_MODEL(name, make)                                            \
  static Registration registration_##name(#name, make)

REGISTER_MODEL(tiny, emptyEncoder);
REGISTER_MODEL(bert, [](const fs::path &p) { return loadEncoder(p); });

Encoder buildRegistered(const std::string &name, const fs::path &p) {
  metaguard::MetaDeviceScope scope;
  return builders().find(name)->second(p);
  // CHECK-NOTES: :[[@LINE-1]]:10: warning: 'lambda' loads pretrained weights (through 'metaguard::from_pretrained') while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-3]]:30: note: meta-device scope 'scope' is active
  // CHECK-NOTES: indirect-calls.h:22:10: note: 'metaguard::from_pretrained' loads the weights here, in 'loadEncoder'
}

// ---- A registry written as the helper's braced static -----------------------

Registry &defaults() {
  static Registry r{{"pretrained", loadEncoder}};
  return r;
}

void buildDefault(const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  auto e = defaults().at("pretrained")(p);
  // CHECK-NOTES: :[[@LINE-1]]:12: warning: 'loadEncoder' loads pretrained weights (through 'metaguard::from_pretrained') while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-3]]:8: note: meta-device scope 'guard'
  // CHECK-NOTES: indirect-calls.h:22:10: note: 'metaguard::from_pretrained' loads the weights here, in 'loadEncoder'
}

// ---- A table passed as a parameter -----------------------------------------

void runFrom(const Registry &r, const std::string &name, const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  auto e = r.at(name)(p);
  // CHECK-NOTES: :[[@LINE-1]]:12: warning: 'loadEncoder' loads pretrained weights (through 'metaguard::from_pretrained') while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-3]]:8: note: meta-device scope 'guard'
  // CHECK-NOTES: indirect-calls.h:22:10: note: 'metaguard::from_pretrained' loads the weights here, in 'loadEncoder'
}

void runModels(const std::string &name, const fs::path &p) {
  runFrom(models(), name, p);
}

// ---- An iterator kept in a data member --------------------------------------

class Selection {
public:
  void select(const std::string &name) { it_ = models().find(name); }
  Encoder build(const fs::path &p) {
    auto guard = metaguard::init_empty_weights();
    return it_->second(p);
    // CHECK-NOTES: :[[@LINE-1]]:12: warning: 'loadEncoder' loads pretrained weights (through 'metaguard::from_pretrained') while a meta-device scope is active
    // CHECK-NOTES: :[[@LINE-3]]:10: note: meta-device scope 'guard'
    // CHECK-NOTES: indirect-calls.h:22:10: note: 'metaguard::from_pretrained' loads the weights here, in 'loadEncoder'
  }

private:
  Registry::iterator it_;
};

// ---- Near misses ------------------------------------------------------------

// A registry that only ever holds factories of empty models, reached every
// way above.
Registry &emptyModels() {
  static Registry r{{"empty", emptyEncoder}};
  return r;
}

static bool registeredTiny =
    (emptyModels()["tiny"] = [](const fs::path &p) { return emptyEncoder(p); },
     true);

void runEmpty(const Registry &r, const std::string &name, const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  auto e = r.at(name)(p);
}

class EmptySelection {
public:
  void select(const std::string &name) { it_ = emptyModels().find(name); }
  Encoder build(const fs::path &p) {
    auto guard = metaguard::init_empty_weights();
    return it_->second(p);
  }

private:
  Registry::iterator it_;
};

void buildEmpty(const std::string &name, const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  auto e = emptyModels().at(name)(p);
  auto f = emptyModels()[name](p);
  auto g = emptyModels().find(name)->second(p);
  runEmpty(emptyModels(), name, p);
}

// A loading registry called outside any meta state.
void buildOutsideMeta(const std::string &name, const fs::path &p) {
  auto e = models().at(name)(p);
  auto f = builders().find(name)->second(p);
}

// A table parameter one of whose call sites passes a table not known here:
// what it holds is not known.
void runFromAny(const Registry &r, const std::string &name,
                const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  auto e = r.at(name)(p);
}

void callRunFromAny(const Registry &given, const std::string &name,
                    const fs::path &p) {
  runFromAny(models(), name, p);
  runFromAny(given, name, p);
}

// A table parameter of a function nothing here calls.
void runUncalled(const Registry &r, const std::string &name,
                 const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  auto e = r.at(name)(p);
}
