// RUN: %check_clang_tidy -std=c++20 %s metaguard-from-pretrained-in-meta-scope

// Calls through a std::function member or a table of them (factory
// registries): every function the translation unit stores into the member or
// the table is a target of a call through it, as every override is of a
// virtual call.

#include "fixtures/indirect-calls.h"

#include <functional>
#include <map>
#include <string>
#include <unordered_map>

// ---- A std::function member ----------------------------------------------

class Pipeline {
public:
  Pipeline() : build_(emptyEncoder) {}
  void usePretrained() { build_ = loadEncoder; }
  Encoder make(const fs::path &p) {
    auto guard = metaguard::init_empty_weights();
    return build_(p);
    // CHECK-NOTES: :[[@LINE-1]]:12: warning: 'loadEncoder' loads pretrained weights (through 'metaguard::from_pretrained') while a meta-device scope is active
    // CHECK-NOTES: :[[@LINE-3]]:10: note: meta-device scope 'guard'
    // CHECK-NOTES: indirect-calls.h:22:10: note: 'metaguard::from_pretrained' loads the weights here, in 'loadEncoder'
  }

private:
  std::function<Encoder(const fs::path &)> build_;
};

// ---- A table of factories ------------------------------------------------

std::map<std::string, std::function<Encoder(const fs::path &)>> &registry() {
  static std::map<std::string, std::function<Encoder(const fs::path &)>> r;
  return r;
}

struct Factories {
  std::unordered_map<std::string, std::function<Encoder(const fs::path &)>>
      table;
  void registerAll() {
    table["empty"] = emptyEncoder;
    table.emplace("pretrained",
                  [](const fs::path &p) { return loadEncoder(p); });
  }
  Encoder make(const std::string &name, const fs::path &p) {
    metaguard::set_default_device("meta");
    auto e = table.at(name)(p);
    // CHECK-NOTES: :[[@LINE-1]]:14: warning: 'lambda' loads pretrained weights (through 'metaguard::from_pretrained') while the default device is meta
    // CHECK-NOTES: :[[@LINE-3]]:5: note: the default device is set to meta here
    // CHECK-NOTES: indirect-calls.h:22:10: note: 'metaguard::from_pretrained' loads the weights here, in 'loadEncoder'
    metaguard::reset_default_device();
    return e;
  }
};

const std::map<std::string, std::function<Encoder(const fs::path &)>> Builders =
    {{"pretrained", loadEncoder}, {"empty", emptyEncoder}};

void buildFromTable(const std::string &name, const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  auto e = Builders.at(name)(p);
  // CHECK-NOTES: :[[@LINE-1]]:12: warning: 'loadEncoder' loads pretrained weights (through 'metaguard::from_pretrained') while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-3]]:8: note: meta-device scope 'guard'
  // CHECK-NOTES: indirect-calls.h:22:10: note: 'metaguard::from_pretrained' loads the weights here, in 'loadEncoder'
}

// ---- Other ways to reach an element of the table ---------------------------

void buildBySubscript(const std::string &name, const fs::path &p) {
  static std::map<std::string, std::function<Encoder(const fs::path &)>> local =
      {{"pretrained", loadEncoder}};
  auto guard = metaguard::init_empty_weights();
  auto e = local[name](p);
  // CHECK-NOTES: :[[@LINE-1]]:12: warning: 'loadEncoder' loads pretrained weights (through 'metaguard::from_pretrained') while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-3]]:8: note: meta-device scope 'guard'
  // CHECK-NOTES: indirect-calls.h:22:10: note: 'metaguard::from_pretrained' loads the weights here, in 'loadEncoder'
}

void buildThroughFind(const std::string &name, const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  auto e = Builders.find(name)->second(p);
  // CHECK-NOTES: :[[@LINE-1]]:12: warning: 'loadEncoder' loads pretrained weights (through 'metaguard::from_pretrained') while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-3]]:8: note: meta-device scope 'guard'
  // CHECK-NOTES: indirect-calls.h:22:10: note: 'metaguard::from_pretrained' loads the weights here, in 'loadEncoder'
}

Encoder buildThroughIterator(const std::string &name, const fs::path &p) {
  metaguard::MetaDeviceScope scope;
  auto it = Builders.find(name);
  if (it == Builders.end())
    return emptyEncoder(p);
  auto first = it->second(p);
  // CHECK-NOTES: :[[@LINE-1]]:16: warning: 'loadEncoder' loads pretrained weights (through 'metaguard::from_pretrained') while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-6]]:30: note: meta-device scope 'scope' is active
  // CHECK-NOTES: indirect-calls.h:22:10: note: 'metaguard::from_pretrained' loads the weights here, in 'loadEncoder'
  return (*it).second(p);
  // CHECK-NOTES: :[[@LINE-1]]:10: warning: 'loadEncoder' loads pretrained weights (through 'metaguard::from_pretrained') while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-10]]:30: note: meta-device scope 'scope' is active
  // CHECK-NOTES: indirect-calls.h:22:10: note: 'metaguard::from_pretrained' loads the weights here, in 'loadEncoder'
}

void buildEveryEntry(const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  for (const auto &[name, make] : Builders)
    make(p);
  // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'loadEncoder' loads pretrained weights (through 'metaguard::from_pretrained') while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-4]]:8: note: meta-device scope 'guard'
  // CHECK-NOTES: indirect-calls.h:22:10: note: 'metaguard::from_pretrained' loads the weights here, in 'loadEncoder'
  for (const auto &entry : Builders)
    entry.second(p);
  // CHECK-NOTES: :[[@LINE-1]]:5: warning: 'loadEncoder' loads pretrained weights (through 'metaguard::from_pretrained') while a meta-device scope is active
  // CHECK-NOTES: :[[@LINE-9]]:8: note: meta-device scope 'guard'
  // CHECK-NOTES: indirect-calls.h:22:10: note: 'metaguard::from_pretrained' loads the weights here, in 'loadEncoder'
}

// ---- Near misses ---------------------------------------------------------

// Only functions that build empty models are ever stored.
struct EmptyOnly {
  std::function<Encoder(const fs::path &)> build = emptyEncoder;
  std::map<std::string, std::function<Encoder(const fs::path &)>> table{
      {"empty", emptyEncoder}};
  Encoder make(const fs::path &p) {
    auto guard = metaguard::init_empty_weights();
    table["other"] = [](const fs::path &q) { return emptyEncoder(q); };
    auto e = table.at("empty")(p);
    return build(p);
  }
};

// A loading factory called outside any meta state.
void buildOutsideMeta(const std::string &name, const fs::path &p) {
  auto e = Builders.at(name)(p);
}

// What a parameter holds is not known here.
void callParameter(const std::function<Encoder(const fs::path &)> &f,
                   const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  auto e = f(p);
}

// The same shapes over tables that only build empty models, or a table that
// is a parameter (what it holds is not known here).
struct EmptyTable {
  std::map<std::string, std::function<Encoder(const fs::path &)>> table{
      {"empty", emptyEncoder}};
  void buildAll(const std::string &name, const fs::path &p) {
    auto guard = metaguard::init_empty_weights();
    auto e = table.find(name)->second(p);
    auto it = table.find(name);
    auto f = it->second(p);
    for (auto &[key, make] : table)
      make(p);
    for (auto &entry : table)
      entry.second(p);
    auto g = table[name](p);
  }
};

void buildFromParameterTable(
    const std::map<std::string, std::function<Encoder(const fs::path &)>> &t,
    const std::string &name, const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  auto e = t.find(name)->second(p);
  for (const auto &[key, make] : t)
    make(p);
}

// The keys of a table of factories are not factories.
void walkKeys(const fs::path &p) {
  auto guard = metaguard::init_empty_weights();
  for (const auto &[name, make] : Builders)
    (void)name.size();
}
