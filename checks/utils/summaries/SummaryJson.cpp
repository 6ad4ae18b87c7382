//===--- SummaryJson.cpp - metaguard-tidy ----------------------*- C++ -*-===//

#include "utils/summaries/SummaryJson.h"
#include "utils/summaries/FactJson.h"
#include "utils/summaries/SummaryMerge.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

namespace clang::tidy::metaguard {

FactJson summaryObject(const FunctionSummary &S) {
  FactJson J = FactJson::object();
  J["usr"] = S.USR;
  J["name"] = S.Name;
  // Every facet's keys, defaults too: a reader of the file (a person, the
  // driver) need not know the defaults.
  for (const FacetKind *K : FacetKind::all()) {
    if (const FacetFacts *F = S.facts(*K))
      F->write(J);
    else
      K->make()->write(J);
  }
  return J;
}

std::optional<FunctionSummary> summaryFromObject(const ReadJson &Entry,
                                                 std::string &Error) {
  FunctionSummary S;
  FactReader R(Entry);
  R.string("usr", S.USR, /*Required=*/true);
  R.string("name", S.Name);
  for (const FacetKind *K : FacetKind::all()) {
    std::unique_ptr<FacetFacts> F = K->make();
    F->read(R);
    if (R.ok() && !F->empty())
      S.setFacts(*K, std::move(F));
  }
  if (S.USR.empty() && R.ok())
    R.fail("usr", "empty");
  if (!R.ok()) {
    Error = R.error();
    return std::nullopt;
  }
  return S;
}

namespace {

using Json = ReadJson;
using OrderedJson = FactJson;

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

void readStrings(const Json &Root, const char *Key, llvm::StringRef Path,
                 std::vector<std::string> &Out,
                 std::vector<std::string> &Errors) {
  auto It = Root.find(Key);
  if (It == Root.end())
    return;
  if (!It->is_array()) {
    Errors.push_back((Path + ": key \"" + Key + "\": expected an array, got " +
                      jsonTypeName(*It))
                         .str());
    return;
  }
  for (size_t I = 0; I < It->size(); ++I) {
    const Json &V = (*It)[I];
    if (V.is_string())
      Out.push_back(V.get<std::string>());
    else
      Errors.push_back((Path + ": " + Key + "[" + llvm::Twine(I) +
                        "]: expected a string, got " + jsonTypeName(V))
                           .str());
  }
}

/// `"overrides": {"<method>": ["<override>", ...]}` and `"stores":
/// {"<slot>": ["<function>", ...]}`; bad entries are reported and skipped.
void readUsrMap(const Json &Root, const char *Key, llvm::StringRef Path,
                std::map<std::string, std::vector<std::string>> &Out,
                std::vector<std::string> &Errors) {
  auto It = Root.find(Key);
  if (It == Root.end())
    return;
  if (!It->is_object()) {
    Errors.push_back((Path + ": key \"" + Key + "\": expected an object, got " +
                      jsonTypeName(*It))
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

std::string factsToJson(const TranslationUnitFacts &Facts) {
  OrderedJson J = OrderedJson::object();
  J["metaguard_facts"] = FactsFormatVersion;
  J["tu"] = Facts.MainFile;
  OrderedJson Functions = OrderedJson::array();
  for (const FunctionSummary &S : Facts.Functions)
    Functions.push_back(summaryObject(S));
  J["functions"] = std::move(Functions);
  J["merge_rules"] = mergeRulesToJson(FacetKind::all());
  J["defines"] = Facts.Defines;
  J["uses"] = Facts.Uses;
  J["inputs"] = Facts.Inputs;
  if (!Facts.Overrides.empty())
    J["overrides"] = Facts.Overrides;
  if (!Facts.Stores.empty())
    J["stores"] = Facts.Stores;
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
        (Path + ": expected a JSON object, got " + jsonTypeName(Root)).str());
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
  readUsrMap(Root, "overrides", Path, Facts.Overrides, Result.Errors);
  readUsrMap(Root, "stores", Path, Facts.Stores, Result.Errors);

  auto Functions = Root.find("functions");
  if (Functions == Root.end())
    return Result;
  if (!Functions->is_array()) {
    Result.Errors.push_back((Path +
                             ": key \"functions\": expected an array, "
                             "got " +
                             jsonTypeName(*Functions))
                                .str());
    return Result;
  }
  for (size_t I = 0; I < Functions->size(); ++I) {
    const Json &Entry = (*Functions)[I];
    std::string Where = (Path + ": functions[" + llvm::Twine(I) + "]").str();
    if (!Entry.is_object()) {
      Result.Errors.push_back(Where + ": expected an object, got " +
                              jsonTypeName(Entry).str());
      continue;
    }
    std::string Error;
    std::optional<FunctionSummary> S = summaryFromObject(Entry, Error);
    if (!S) {
      auto USR = Entry.find("usr");
      if (USR != Entry.end() && USR->is_string() &&
          !USR->get_ref<const std::string &>().empty())
        Where += " (\"" + USR->get<std::string>() + "\")";
      Result.Errors.push_back(Where + ": " + Error +
                              "; this function is treated as unknown");
      continue;
    }
    Facts.Functions.push_back(std::move(*S));
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
