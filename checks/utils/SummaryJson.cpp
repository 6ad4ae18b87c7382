//===--- SummaryJson.cpp - metaguard-tidy ----------------------*- C++ -*-===//

#include "utils/SummaryJson.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <optional>

namespace clang::tidy::metaguard {

namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

llvm::StringRef deviceName(DeviceAtReturn D) {
  switch (D) {
  case DeviceAtReturn::Unchanged:
    return "unchanged";
  case DeviceAtReturn::Meta:
    return "meta";
  case DeviceAtReturn::Restored:
    return "restored";
  case DeviceAtReturn::Unknown:
    return "unknown";
  }
  return "unknown";
}

llvm::StringRef mapName(DeviceMapKind K) {
  switch (K) {
  case DeviceMapKind::None:
    return "none";
  case DeviceMapKind::SingleDevice:
    return "single-device";
  case DeviceMapKind::Offloading:
    return "offloading";
  case DeviceMapKind::Unknown:
    return "unknown";
  }
  return "unknown";
}

llvm::StringRef dispatchName(DispatchKind K) {
  switch (K) {
  case DispatchKind::Call:
    return "dispatch";
  case DispatchKind::Loader:
    return "loader";
  case DispatchKind::Factory:
    return "factory";
  }
  return "dispatch";
}

std::optional<DispatchKind> dispatchFromName(llvm::StringRef Name) {
  for (DispatchKind K :
       {DispatchKind::Call, DispatchKind::Loader, DispatchKind::Factory})
    if (Name == dispatchName(K))
      return K;
  return std::nullopt;
}

std::optional<DeviceAtReturn> deviceFromName(llvm::StringRef Name) {
  for (DeviceAtReturn D : {DeviceAtReturn::Unchanged, DeviceAtReturn::Meta,
                           DeviceAtReturn::Restored, DeviceAtReturn::Unknown})
    if (Name == deviceName(D))
      return D;
  return std::nullopt;
}

std::optional<DeviceMapKind> mapFromName(llvm::StringRef Name) {
  for (DeviceMapKind K : {DeviceMapKind::None, DeviceMapKind::SingleDevice,
                          DeviceMapKind::Offloading, DeviceMapKind::Unknown})
    if (Name == mapName(K))
      return K;
  return std::nullopt;
}

OrderedJson refToJson(const SourceRef &R) {
  OrderedJson J = OrderedJson::object();
  J["file"] = R.File;
  J["line"] = R.Line;
  J["column"] = R.Column;
  return J;
}

OrderedJson summaryObject(const FunctionSummary &S) {
  OrderedJson J = OrderedJson::object();
  J["usr"] = S.USR;
  J["name"] = S.Name;
  J["default_device"] = std::string(deviceName(S.DefaultDevice));
  if (S.DefaultDeviceAt.valid())
    J["default_device_at"] = refToJson(S.DefaultDeviceAt);
  J["loads_weights"] = S.LoadsWeights;
  if (S.LoadsAt.valid())
    J["loads_at"] = refToJson(S.LoadsAt);
  if (!S.Loader.empty())
    J["loader"] = S.Loader;
  if (!S.LoadsIn.empty())
    J["loads_in"] = S.LoadsIn;
  if (S.LoadsDepth)
    J["loads_depth"] = S.LoadsDepth;
  if (S.LoadsOnlyAfterSettingDevice)
    J["loads_only_after_setting_device"] = true;
  J["opens_meta_scope"] = S.OpensMetaScope;
  if (S.OpensMetaScopeAt.valid())
    J["opens_meta_scope_at"] = refToJson(S.OpensMetaScopeAt);
  J["returns_dispatched_model"] = S.ReturnsDispatchedModel;
  if (S.DispatchedAt.valid())
    J["dispatched_at"] = refToJson(S.DispatchedAt);
  if (!S.DispatchChain.empty()) {
    OrderedJson Chain = OrderedJson::array();
    for (const DispatchStep &Step : S.DispatchChain) {
      OrderedJson StepJson = OrderedJson::object();
      StepJson["how"] = std::string(dispatchName(Step.How));
      StepJson["with"] = Step.With;
      StepJson["at"] = refToJson(Step.At);
      Chain.push_back(std::move(StepJson));
    }
    J["dispatch_chain"] = std::move(Chain);
  }
  OrderedJson Args = OrderedJson::array();
  for (const auto &[Index, Effects] : S.Args) {
    OrderedJson A = OrderedJson::object();
    A["index"] = Index;
    A["moves"] = Effects.Moves;
    A["mutates_parameters"] = Effects.MutatesParameters;
    A["removes_hooks"] = Effects.RemovesHooks;
    if (Effects.At.valid())
      A["at"] = refToJson(Effects.At);
    if (!Effects.What.empty())
      A["what"] = Effects.What;
    if (!Effects.In.empty())
      A["in"] = Effects.In;
    Args.push_back(std::move(A));
  }
  J["args"] = std::move(Args);
  J["returned_device_map"] = std::string(mapName(S.ReturnedDeviceMap));
  return J;
}

/// dump() throws on invalid UTF-8 unless told to replace it; a file name in
/// a SourceRef is bytes from the file system, not necessarily UTF-8.
std::string dumpJson(const OrderedJson &J, int Indent) {
  return J.dump(Indent, ' ', false, OrderedJson::error_handler_t::replace);
}

/// nlohmann's DOM builder, except that a syntax error is recorded instead of
/// thrown (sax_parse calls this class's parse_error, hiding the base's).
class RecordingDomParser : public nlohmann::detail::json_sax_dom_parser<Json> {
public:
  explicit RecordingDomParser(Json &Root)
      : json_sax_dom_parser<Json>(Root, /*allow_exceptions_=*/false) {}
  template <class Exception>
  bool parse_error(std::size_t, const std::string &, const Exception &Ex) {
    // what() is "[json.exception.parse_error.101] parse error at line 3,
    // column 5: ..."; keep the part after the bracketed id.
    llvm::StringRef What = Ex.what();
    size_t Close = What.find("] ");
    Error = (Close == llvm::StringRef::npos ? What : What.drop_front(Close + 2))
                .str();
    return false;
  }
  std::string Error;
};

llvm::StringRef typeName(const Json &J) {
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

/// Reads the keys of one function entry. Each accessor records the first
/// problem and makes the entry unusable; absent keys keep their defaults.
class EntryReader {
public:
  explicit EntryReader(const Json &Object) : Object(Object) {}

  bool ok() const { return Error.empty(); }
  const std::string &error() const { return Error; }

  void string(const char *Key, std::string &Out, bool Required = false) {
    const Json *V = find(Key, Required);
    if (!V)
      return;
    if (!V->is_string())
      return fail(Key, "expected a string, got " + typeName(*V).str());
    Out = V->get_ref<const std::string &>();
  }
  void boolean(const char *Key, bool &Out) {
    const Json *V = find(Key);
    if (!V)
      return;
    if (!V->is_boolean())
      return fail(Key, "expected a boolean, got " + typeName(*V).str());
    Out = V->get<bool>();
  }
  void ref(const char *Key, SourceRef &Out) {
    const Json *V = find(Key);
    if (!V)
      return;
    if (!V->is_object())
      return fail(Key, "expected an object {\"file\", \"line\", \"column\"}, "
                       "got " +
                           typeName(*V).str());
    EntryReader Inner(*V);
    Inner.string("file", Out.File);
    Inner.unsignedNumber("line", Out.Line);
    Inner.unsignedNumber("column", Out.Column);
    if (!Inner.ok())
      fail(Key, Inner.Error);
  }
  void unsignedNumber(const char *Key, unsigned &Out, bool Required = false) {
    const Json *V = find(Key, Required);
    if (!V)
      return;
    if (!V->is_number_unsigned() || V->get<uint64_t>() > 0xffffffffu)
      return fail(Key, "expected a non-negative integer, got " +
                           (V->is_number() ? V->dump() : typeName(*V).str()));
    Out = V->get<unsigned>();
  }
  template <typename Enum>
  void enumeration(const char *Key, Enum &Out,
                   std::optional<Enum> (*FromName)(llvm::StringRef),
                   const char *Allowed) {
    std::string Name;
    string(Key, Name);
    if (!ok() || !Object.contains(Key))
      return;
    if (std::optional<Enum> E = FromName(Name))
      Out = *E;
    else
      fail(Key, "unknown value \"" + Name + "\" (expected " + Allowed + ")");
  }
  void args(std::map<unsigned, ArgumentEffects> &Out) {
    const Json *V = find("args");
    if (!V)
      return;
    if (!V->is_array())
      return fail("args", "expected an array, got " + typeName(*V).str());
    for (size_t I = 0; I < V->size() && ok(); ++I) {
      const Json &A = (*V)[I];
      std::string Key = "args[" + std::to_string(I) + "]";
      if (!A.is_object())
        return fail(Key, "expected an object, got " + typeName(A).str());
      EntryReader Inner(A);
      unsigned Index = 0;
      ArgumentEffects Effects;
      Inner.unsignedNumber("index", Index, /*Required=*/true);
      Inner.boolean("moves", Effects.Moves);
      Inner.boolean("mutates_parameters", Effects.MutatesParameters);
      Inner.boolean("removes_hooks", Effects.RemovesHooks);
      Inner.ref("at", Effects.At);
      Inner.string("what", Effects.What);
      Inner.string("in", Effects.In);
      if (!Inner.ok())
        return fail(Key, Inner.Error);
      if (Effects.any())
        Out[Index] = Effects;
    }
  }

  void dispatchChain(std::vector<DispatchStep> &Out) {
    const Json *V = find("dispatch_chain");
    if (!V)
      return;
    if (!V->is_array())
      return fail("dispatch_chain",
                  "expected an array, got " + typeName(*V).str());
    for (size_t I = 0; I < V->size() && ok(); ++I) {
      const Json &Entry = (*V)[I];
      std::string Key = "dispatch_chain[" + std::to_string(I) + "]";
      if (!Entry.is_object())
        return fail(Key, "expected an object, got " + typeName(Entry).str());
      EntryReader Inner(Entry);
      DispatchStep Step;
      Inner.enumeration("how", Step.How, dispatchFromName,
                        "dispatch, loader or factory");
      Inner.string("with", Step.With);
      Inner.ref("at", Step.At);
      if (!Inner.ok())
        return fail(Key, Inner.Error);
      Out.push_back(std::move(Step));
    }
  }

private:
  const Json *find(const char *Key, bool Required = false) {
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
  void fail(llvm::StringRef Key, const std::string &Why) {
    if (!ok())
      return;
    // Nested readers report "key \"line\": ..." and the outer one prefixes
    // its own key, giving "key \"loads_at\": key \"line\": ...".
    Error = "key \"" + Key.str() + "\": " + Why;
  }

  const Json &Object;
  std::string Error;
};

void readStrings(const Json &Root, const char *Key, llvm::StringRef Path,
                 std::vector<std::string> &Out,
                 std::vector<std::string> &Errors) {
  auto It = Root.find(Key);
  if (It == Root.end())
    return;
  if (!It->is_array()) {
    Errors.push_back((Path + ": key \"" + Key + "\": expected an array, got " +
                      typeName(*It))
                         .str());
    return;
  }
  for (size_t I = 0; I < It->size(); ++I) {
    const Json &V = (*It)[I];
    if (V.is_string())
      Out.push_back(V.get<std::string>());
    else
      Errors.push_back((Path + ": " + Key + "[" + llvm::Twine(I) +
                        "]: expected a string, got " + typeName(V))
                           .str());
  }
}

/// `"overrides": {"<method>": ["<override>", ...]}`; bad entries are
/// reported and skipped.
void readOverrides(const Json &Root, llvm::StringRef Path,
                   std::map<std::string, std::vector<std::string>> &Out,
                   std::vector<std::string> &Errors) {
  auto It = Root.find("overrides");
  if (It == Root.end())
    return;
  if (!It->is_object()) {
    Errors.push_back(
        (Path + ": key \"overrides\": expected an object, got " + typeName(*It))
            .str());
    return;
  }
  for (const auto &[Base, By] : It->items())
    readStrings(*It, Base.c_str(), Path, Out[Base], Errors);
}

/// Removes a temporary file on a path that failed anyway; a second error
/// would only hide the first.
void removeQuietly(llvm::StringRef Path) {
  std::error_code Ignored = llvm::sys::fs::remove(Path);
  (void)Ignored;
}

} // namespace

std::string summaryToJson(const FunctionSummary &S) {
  return dumpJson(summaryObject(S), -1);
}

std::string factsToJson(const TranslationUnitFacts &Facts) {
  OrderedJson J = OrderedJson::object();
  J["metaguard_facts"] = FactsFormatVersion;
  J["tu"] = Facts.MainFile;
  OrderedJson Functions = OrderedJson::array();
  for (const FunctionSummary &S : Facts.Functions)
    Functions.push_back(summaryObject(S));
  J["functions"] = std::move(Functions);
  J["defines"] = Facts.Defines;
  J["uses"] = Facts.Uses;
  J["inputs"] = Facts.Inputs;
  if (!Facts.Overrides.empty())
    J["overrides"] = Facts.Overrides;
  return dumpJson(J, 1) + "\n";
}

ParsedFacts parseFacts(llvm::StringRef Text, llvm::StringRef Path) {
  ParsedFacts Result;
  Json Root;
  RecordingDomParser Dom(Root);
  bool Parsed = Json::sax_parse(Text.begin(), Text.end(), &Dom);
  if (!Parsed || Dom.is_errored()) {
    Result.Unreadable = true;
    Result.Errors.push_back(
        (Path + ": not valid JSON: " +
         (Dom.Error.empty() ? std::string("syntax error") : Dom.Error))
            .str());
    return Result;
  }
  if (!Root.is_object()) {
    Result.Unreadable = true;
    Result.Errors.push_back(
        (Path + ": expected a JSON object, got " + typeName(Root)).str());
    return Result;
  }
  for (const char *VersionKey : {"metaguard_facts", "metaguard_facts_index"}) {
    auto It = Root.find(VersionKey);
    if (It == Root.end())
      continue;
    if (!It->is_number_unsigned() || It->get<uint64_t>() > FactsFormatVersion) {
      Result.Unreadable = true;
      Result.Errors.push_back(
          (Path + ": key \"" + VersionKey + "\": format " + It->dump() +
           " is not supported (this plugin reads format " +
           llvm::Twine(FactsFormatVersion) + "); re-create the facts file")
              .str());
      return Result;
    }
  }
  TranslationUnitFacts &Facts = Result.Facts;
  if (auto It = Root.find("tu"); It != Root.end() && It->is_string())
    Facts.MainFile = It->get<std::string>();
  readStrings(Root, "defines", Path, Facts.Defines, Result.Errors);
  readStrings(Root, "uses", Path, Facts.Uses, Result.Errors);
  readStrings(Root, "inputs", Path, Facts.Inputs, Result.Errors);
  readOverrides(Root, Path, Facts.Overrides, Result.Errors);

  auto Functions = Root.find("functions");
  if (Functions == Root.end())
    return Result;
  if (!Functions->is_array()) {
    Result.Errors.push_back((Path +
                             ": key \"functions\": expected an array, "
                             "got " +
                             typeName(*Functions))
                                .str());
    return Result;
  }
  for (size_t I = 0; I < Functions->size(); ++I) {
    const Json &Entry = (*Functions)[I];
    std::string Where = (Path + ": functions[" + llvm::Twine(I) + "]").str();
    if (!Entry.is_object()) {
      Result.Errors.push_back(Where + ": expected an object, got " +
                              typeName(Entry).str());
      continue;
    }
    FunctionSummary S;
    EntryReader R(Entry);
    R.string("usr", S.USR, /*Required=*/true);
    R.string("name", S.Name);
    R.enumeration("default_device", S.DefaultDevice, deviceFromName,
                  "unchanged, meta, restored or unknown");
    R.ref("default_device_at", S.DefaultDeviceAt);
    R.boolean("loads_weights", S.LoadsWeights);
    R.ref("loads_at", S.LoadsAt);
    R.string("loader", S.Loader);
    R.string("loads_in", S.LoadsIn);
    R.unsignedNumber("loads_depth", S.LoadsDepth);
    R.boolean("loads_only_after_setting_device", S.LoadsOnlyAfterSettingDevice);
    R.boolean("opens_meta_scope", S.OpensMetaScope);
    R.ref("opens_meta_scope_at", S.OpensMetaScopeAt);
    R.boolean("returns_dispatched_model", S.ReturnsDispatchedModel);
    R.ref("dispatched_at", S.DispatchedAt);
    R.dispatchChain(S.DispatchChain);
    R.args(S.Args);
    R.enumeration("returned_device_map", S.ReturnedDeviceMap, mapFromName,
                  "none, single-device, offloading or unknown");
    if (S.USR.empty() && R.ok()) {
      Result.Errors.push_back(Where + ": key \"usr\": empty");
      continue;
    }
    if (!R.ok()) {
      if (!S.USR.empty())
        Where += " (\"" + S.USR + "\")";
      Result.Errors.push_back(Where + ": " + R.error() +
                              "; this function is treated as unknown");
      continue;
    }
    Facts.Functions.push_back(std::move(S));
  }
  return Result;
}

std::string writeFileAtomically(llvm::StringRef Path,
                                llvm::StringRef Contents) {
  llvm::StringRef Parent = llvm::sys::path::parent_path(Path);
  if (!Parent.empty())
    if (std::error_code EC = llvm::sys::fs::create_directories(Parent))
      return ("cannot create " + Parent + ": " + EC.message()).str();
  // Beside the target (same file system, so the rename is atomic), named
  // after it and this process so that parallel writers never share one.
  llvm::SmallString<256> Temp;
  int FD = -1;
  if (std::error_code EC = llvm::sys::fs::createUniqueFile(
          Path + ".tmp-" + llvm::Twine(llvm::sys::Process::getProcessId()) +
              "-%%%%%%",
          FD, Temp))
    return ("cannot create a temporary file beside " + Path + ": " +
            EC.message())
        .str();
  {
    llvm::raw_fd_ostream Out(FD, /*shouldClose=*/true);
    Out << Contents;
    Out.close();
    if (Out.has_error()) {
      std::string Why = Out.error().message();
      Out.clear_error();
      removeQuietly(Temp); // The error to report is the write's.
      return ("cannot write " + Temp + ": " + Why).str();
    }
  }
  if (std::error_code EC = llvm::sys::fs::rename(Temp, Path)) {
    removeQuietly(Temp); // The error to report is the rename's.
    return ("cannot rename " + Temp + " to " + Path + ": " + EC.message())
        .str();
  }
  return "";
}

} // namespace clang::tidy::metaguard
