//===--- FactJson.h - metaguard-tidy ---------------------------*- C++ -*-===//
//
// What a facet needs to read and write its facts as JSON: a reader that
// never throws (the plugin may be built without exceptions, and a stale or
// hand-edited facts file must not take clang-tidy or clangd down) and
// records the first problem with the key at fault, and the writers of the
// shapes facets share (source locations, enumerations).
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_SUMMARIES_FACTJSON_H
#define METAGUARD_CHECKS_UTILS_SUMMARIES_FACTJSON_H

#include "utils/summaries/FunctionSummary.h"

#include "llvm/ADT/StringRef.h"

#include <nlohmann/json.hpp>

#include <string>
#include <utility>

namespace clang::tidy::metaguard {

using ReadJson = nlohmann::json;

/// "a boolean", "an array"...: a JSON value's type, for messages.
llvm::StringRef jsonTypeName(const ReadJson &J);

/// {"file", "line", "column"}.
FactJson refToJson(const SourceRef &R);

/// Reads the keys of one JSON object. Each accessor records the first
/// problem ("key \"loads_at\": key \"line\": expected ...") and makes the
/// object unusable; absent keys keep the value they had.
class FactReader {
public:
  explicit FactReader(const ReadJson &Object) : Object(Object) {}

  bool ok() const { return Error.empty(); }
  const std::string &error() const { return Error; }

  void string(const char *Key, std::string &Out, bool Required = false);
  void boolean(const char *Key, bool &Out);
  void unsignedNumber(const char *Key, unsigned &Out, bool Required = false);
  void ref(const char *Key, SourceRef &Out);

  /// An enumeration written by name, from its table of {value, name}.
  template <typename Enum, size_t N>
  void enumeration(const char *Key, Enum &Out,
                   const std::pair<Enum, const char *> (&Names)[N]) {
    std::string Name;
    string(Key, Name);
    if (!ok() || !Object.contains(Key))
      return;
    for (const auto &[Value, EnumName] : Names)
      if (Name == EnumName) {
        Out = Value;
        return;
      }
    std::string Allowed;
    for (size_t I = 0; I < N; ++I)
      Allowed += (I == 0       ? ""
                  : I + 1 == N ? " or "
                               : ", ") +
                 std::string(Names[I].second);
    fail(Key, "unknown value \"" + Name + "\" (expected " + Allowed + ")");
  }

  /// An array of objects: ReadItem(FactReader &Item) for each, the problems
  /// reported as "key \"args[2]\": ...".
  template <typename Fn> void objects(const char *Key, Fn ReadItem) {
    const ReadJson *V = find(Key);
    if (!V)
      return;
    if (!V->is_array())
      return fail(Key, "expected an array, got " + jsonTypeName(*V).str());
    for (size_t I = 0; I < V->size() && ok(); ++I) {
      const ReadJson &Item = (*V)[I];
      std::string ItemKey = std::string(Key) + "[" + std::to_string(I) + "]";
      if (!Item.is_object())
        return fail(ItemKey,
                    "expected an object, got " + jsonTypeName(Item).str());
      FactReader Inner(Item);
      ReadItem(Inner);
      if (!Inner.ok())
        return fail(ItemKey, Inner.Error);
    }
  }

  void fail(llvm::StringRef Key, const std::string &Why);

private:
  const ReadJson *find(const char *Key, bool Required = false);

  const ReadJson &Object;
  std::string Error;
};

/// The name of an enumerator, from its table of {value, name}.
template <typename Enum, size_t N>
llvm::StringRef enumName(Enum E,
                         const std::pair<Enum, const char *> (&Names)[N]) {
  for (const auto &[Value, Name] : Names)
    if (Value == E)
      return Name;
  return Names[0].second;
}

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_SUMMARIES_FACTJSON_H
