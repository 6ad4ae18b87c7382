//===--- SummaryMerge.cpp - metaguard-tidy ---------------------*- C++ -*-===//

#include "utils/SummaryMerge.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <set>

namespace clang::tidy::metaguard {

namespace {

template <typename Enum> Enum agreeOrUnknown(Enum A, Enum B) {
  return A == B ? A : Enum::Unknown;
}

std::string argKey(unsigned Index, const char *Fact) {
  return "args[" + std::to_string(Index) + "]." + Fact;
}

} // namespace

std::vector<std::string> disagreements(const FunctionSummary &A,
                                       const FunctionSummary &B) {
  std::vector<std::string> Keys;
  if (A.DefaultDevice != B.DefaultDevice)
    Keys.push_back("default_device");
  if (A.LoadsWeights != B.LoadsWeights)
    Keys.push_back("loads_weights");
  if (A.OpensMetaScope != B.OpensMetaScope)
    Keys.push_back("opens_meta_scope");
  if (A.ReturnsDispatchedModel != B.ReturnsDispatchedModel)
    Keys.push_back("returns_dispatched_model");
  if (A.ReturnedDeviceMap != B.ReturnedDeviceMap)
    Keys.push_back("returned_device_map");
  std::set<unsigned> Indices;
  for (const auto &Entry : A.Args)
    Indices.insert(Entry.first);
  for (const auto &Entry : B.Args)
    Indices.insert(Entry.first);
  for (unsigned Index : Indices) {
    ArgumentEffects EA, EB;
    if (auto It = A.Args.find(Index); It != A.Args.end())
      EA = It->second;
    if (auto It = B.Args.find(Index); It != B.Args.end())
      EB = It->second;
    if (EA.Moves != EB.Moves)
      Keys.push_back(argKey(Index, "moves"));
    if (EA.MutatesParameters != EB.MutatesParameters)
      Keys.push_back(argKey(Index, "mutates_parameters"));
    if (EA.RemovesHooks != EB.RemovesHooks)
      Keys.push_back(argKey(Index, "removes_hooks"));
  }
  std::sort(Keys.begin(), Keys.end());
  return Keys;
}

FunctionSummary mergeConservatively(const FunctionSummary &A,
                                    const FunctionSummary &B) {
  FunctionSummary M = A;
  if (M.Name.empty())
    M.Name = B.Name;
  M.DefaultDevice = agreeOrUnknown(A.DefaultDevice, B.DefaultDevice);
  if (M.DefaultDevice != A.DefaultDevice)
    M.DefaultDeviceAt = SourceRef();
  M.ReturnedDeviceMap =
      agreeOrUnknown(A.ReturnedDeviceMap, B.ReturnedDeviceMap);
  M.LoadsWeights = A.LoadsWeights && B.LoadsWeights;
  if (!M.LoadsWeights) {
    M.LoadsAt = SourceRef();
    M.Loader.clear();
  }
  M.OpensMetaScope = A.OpensMetaScope && B.OpensMetaScope;
  if (!M.OpensMetaScope)
    M.OpensMetaScopeAt = SourceRef();
  M.ReturnsDispatchedModel =
      A.ReturnsDispatchedModel && B.ReturnsDispatchedModel;
  if (!M.ReturnsDispatchedModel) {
    M.DispatchedAt = SourceRef();
    M.DispatchChain.clear();
  }
  M.Args.clear();
  for (const auto &[Index, EA] : A.Args) {
    auto It = B.Args.find(Index);
    if (It == B.Args.end())
      continue;
    ArgumentEffects E = EA;
    E.Moves = EA.Moves && It->second.Moves;
    E.MutatesParameters = EA.MutatesParameters && It->second.MutatesParameters;
    E.RemovesHooks = EA.RemovesHooks && It->second.RemovesHooks;
    if (E.any())
      M.Args[Index] = E;
  }
  return M;
}

std::string SummaryConflict::message() const {
  std::string Text =
      "conflicting summaries of '" + Name + "' (" + USR + ") in ";
  for (size_t I = 0; I < Sources.size(); ++I)
    Text += (I ? ", " : "") + Sources[I];
  Text += " disagree on ";
  for (size_t I = 0; I < Facts.size(); ++I)
    Text += (I ? ", " : "") + Facts[I];
  return Text + "; using only the facts they agree on";
}

void SummaryMerger::add(const FunctionSummary &S, llvm::StringRef Source) {
  std::vector<std::string> &Sources = SourcesOf[S.USR];
  Sources.push_back(Source.str());
  auto [It, Inserted] = Merged.try_emplace(S.USR, S);
  if (Inserted)
    return;
  // Compare with the merge so far: facts already reduced to "unknown" or
  // dropped stay so, and new disagreements are added once.
  std::vector<std::string> Keys = disagreements(It->second, S);
  if (!Keys.empty()) {
    std::vector<std::string> &Known = ConflictFacts[S.USR];
    Known.insert(Known.end(), Keys.begin(), Keys.end());
    std::sort(Known.begin(), Known.end());
    Known.erase(std::unique(Known.begin(), Known.end()), Known.end());
  }
  It->second = mergeConservatively(It->second, S);
}

std::vector<SummaryConflict> SummaryMerger::conflicts() const {
  std::vector<SummaryConflict> Result;
  for (const auto &[USR, Facts] : ConflictFacts) {
    SummaryConflict C;
    C.USR = USR;
    C.Name = Merged.at(USR).Name;
    C.Sources = SourcesOf.at(USR);
    // A source that exported the same function twice is named once.
    C.Sources.erase(std::unique(C.Sources.begin(), C.Sources.end()),
                    C.Sources.end());
    C.Facts = Facts;
    Result.push_back(std::move(C));
  }
  return Result;
}

} // namespace clang::tidy::metaguard
