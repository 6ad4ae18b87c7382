//===--- FactJson.cpp - metaguard-tidy -------------------------*- C++ -*-===//

#include "utils/summaries/FactJson.h"

namespace clang::tidy::metaguard {

llvm::StringRef jsonTypeName(const ReadJson &J) {
  if (J.is_boolean())
    return "a boolean";
  if (J.is_number())
    return "a number";
  if (J.is_string())
    return "a string";
  if (J.is_array())
    return "an array";
  if (J.is_object())
    return "an object";
  return "null";
}

FactJson refToJson(const SourceRef &R) {
  FactJson J = FactJson::object();
  J["file"] = R.File;
  J["line"] = R.Line;
  J["column"] = R.Column;
  return J;
}

const ReadJson *FactReader::find(const char *Key, bool Required) {
  if (!ok())
    return nullptr;
  auto It = Object.find(Key);
  if (It == Object.end()) {
    if (Required)
      fail(Key, "missing");
    return nullptr;
  }
  return &*It;
}

void FactReader::fail(llvm::StringRef Key, const std::string &Why) {
  if (!ok())
    return;
  // Nested readers report "key \"line\": ..." and the outer one prefixes
  // its own key, giving "key \"loads_at\": key \"line\": ...".
  Error = "key \"" + Key.str() + "\": " + Why;
}

void FactReader::string(const char *Key, std::string &Out, bool Required) {
  const ReadJson *V = find(Key, Required);
  if (!V)
    return;
  if (!V->is_string())
    return fail(Key, "expected a string, got " + jsonTypeName(*V).str());
  Out = V->get_ref<const std::string &>();
}

void FactReader::boolean(const char *Key, bool &Out) {
  const ReadJson *V = find(Key);
  if (!V)
    return;
  if (!V->is_boolean())
    return fail(Key, "expected a boolean, got " + jsonTypeName(*V).str());
  Out = V->get<bool>();
}

void FactReader::unsignedNumber(const char *Key, unsigned &Out, bool Required) {
  const ReadJson *V = find(Key, Required);
  if (!V)
    return;
  if (!V->is_number_unsigned() || V->get<uint64_t>() > 0xffffffffu)
    return fail(Key, "expected a non-negative integer, got " +
                         (V->is_number() ? V->dump() : jsonTypeName(*V).str()));
  Out = V->get<unsigned>();
}

void FactReader::ref(const char *Key, SourceRef &Out) {
  const ReadJson *V = find(Key);
  if (!V)
    return;
  if (!V->is_object())
    return fail(Key, "expected an object {\"file\", \"line\", \"column\"}, "
                     "got " +
                         jsonTypeName(*V).str());
  FactReader Inner(*V);
  Inner.string("file", Out.File);
  Inner.unsignedNumber("line", Out.Line);
  Inner.unsignedNumber("column", Out.Column);
  if (!Inner.ok())
    fail(Key, Inner.Error);
}

} // namespace clang::tidy::metaguard
