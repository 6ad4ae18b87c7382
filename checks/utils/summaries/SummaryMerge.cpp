//===--- SummaryMerge.cpp - metaguard-tidy ---------------------*- C++ -*-===//

#include "utils/summaries/SummaryMerge.h"
#include "utils/summaries/SummaryJson.h"

#include <algorithm>
#include <map>
#include <set>

namespace clang::tidy::metaguard {

namespace {

const char *kindName(MergeRule::Kind K) {
  switch (K) {
  case MergeRule::Kind::Agree:
    return "agree";
  case MergeRule::Kind::All:
    return "all";
  case MergeRule::Kind::Each:
    return "each";
  }
  return "all";
}

FactJson ruleToJson(const MergeRule &R) {
  FactJson J = FactJson::object();
  J["merge"] = kindName(R.How);
  if (R.How == MergeRule::Kind::Agree) {
    J["default"] = R.Default;
    J["disputed"] = R.Disputed;
  }
  if (R.How == MergeRule::Kind::Each) {
    J["by"] = R.By;
    FactJson Items = FactJson::object();
    for (const MergeRule &Item : R.Items)
      Items[Item.Key] = ruleToJson(Item);
    J["facts"] = std::move(Items);
  }
  if (!R.Details.empty())
    J["details"] = R.Details;
  return J;
}

std::vector<MergeRule> allRules() {
  std::vector<MergeRule> Rules;
  for (const FacetKind *K : FacetKind::all())
    Rules.insert(Rules.end(), K->rules().begin(), K->rules().end());
  return Rules;
}

/// A fact's value in an entry: an Agree fact's value (its default when
/// absent), an All fact's yes or no (anything but true is no).
FactJson factValue(const FactJson &Entry, const MergeRule &R) {
  auto It = Entry.find(R.Key);
  if (R.How == MergeRule::Kind::Agree)
    return It == Entry.end() ? FactJson(R.Default) : *It;
  return It != Entry.end() && It->is_boolean() && It->get<bool>();
}

bool isDefault(const FactJson &Value, const MergeRule &R) {
  return R.How == MergeRule::Kind::Agree ? Value == FactJson(R.Default)
                                         : Value == FactJson(false);
}

/// The items of an Each list by their identifying number, those that state
/// some fact; malformed items state nothing.
std::map<uint64_t, FactJson> itemsOf(const FactJson &Entry,
                                     const MergeRule &R) {
  std::map<uint64_t, FactJson> Items;
  auto It = Entry.find(R.Key);
  if (It == Entry.end() || !It->is_array())
    return Items;
  for (const FactJson &Item : *It) {
    if (!Item.is_object())
      continue;
    auto By = Item.find(R.By);
    if (By == Item.end() || !By->is_number_unsigned())
      continue;
    if (std::any_of(R.Items.begin(), R.Items.end(), [&](const MergeRule &F) {
          return !isDefault(factValue(Item, F), F);
        }))
      Items[By->get<uint64_t>()] = Item;
  }
  return Items;
}

/// The merged value of one Agree or All fact of Merged (a copy of A).
void mergeFact(FactJson &Merged, const FactJson &A, const FactJson &B,
               const MergeRule &R) {
  FactJson VA = factValue(A, R), VB = factValue(B, R);
  FactJson V = R.How == MergeRule::Kind::Agree
                   ? (VA == VB ? VA : FactJson(R.Disputed))
                   : FactJson(VA.get<bool>() && VB.get<bool>());
  if (V != VA || isDefault(V, R))
    for (const std::string &Detail : R.Details)
      Merged.erase(Detail);
  Merged[R.Key] = std::move(V);
}

void mergeEach(FactJson &Merged, const FactJson &A, const FactJson &B,
               const MergeRule &R) {
  std::map<uint64_t, FactJson> ItemsA = itemsOf(A, R), ItemsB = itemsOf(B, R);
  FactJson List = FactJson::array();
  for (const auto &[Id, ItemA] : ItemsA) {
    auto ItB = ItemsB.find(Id);
    if (ItB == ItemsB.end())
      continue;
    FactJson Item = ItemA;
    bool States = false;
    for (const MergeRule &F : R.Items) {
      mergeFact(Item, ItemA, ItB->second, F);
      States |= !isDefault(Item[F.Key], F);
    }
    if (States)
      List.push_back(std::move(Item));
  }
  Merged[R.Key] = std::move(List);
}

std::vector<std::string>
jsonDisagreements(const FactJson &A, const FactJson &B,
                  const std::vector<MergeRule> &Rules) {
  std::vector<std::string> Keys;
  for (const MergeRule &R : Rules) {
    if (R.How != MergeRule::Kind::Each) {
      if (factValue(A, R) != factValue(B, R))
        Keys.push_back(R.Key);
      continue;
    }
    std::map<uint64_t, FactJson> ItemsA = itemsOf(A, R), ItemsB = itemsOf(B, R);
    std::set<uint64_t> Ids;
    for (const auto &Item : ItemsA)
      Ids.insert(Item.first);
    for (const auto &Item : ItemsB)
      Ids.insert(Item.first);
    const FactJson None = FactJson::object();
    for (uint64_t Id : Ids) {
      auto ItA = ItemsA.find(Id), ItB = ItemsB.find(Id);
      const FactJson &IA = ItA == ItemsA.end() ? None : ItA->second;
      const FactJson &IB = ItB == ItemsB.end() ? None : ItB->second;
      for (const MergeRule &F : R.Items)
        if (factValue(IA, F) != factValue(IB, F))
          Keys.push_back(R.Key + "[" + std::to_string(Id) + "]." + F.Key);
    }
  }
  std::sort(Keys.begin(), Keys.end());
  return Keys;
}

/// The conservative merge of two versions of one function's entry.
FactJson mergeEntries(const FactJson &A, const FactJson &B,
                      const std::vector<MergeRule> &Rules) {
  FactJson Merged = A;
  if (Merged.value("name", std::string()).empty() && B.contains("name"))
    Merged["name"] = B["name"];
  for (const MergeRule &R : Rules) {
    if (R.How == MergeRule::Kind::Each)
      mergeEach(Merged, A, B, R);
    else
      mergeFact(Merged, A, B, R);
  }
  return Merged;
}

} // namespace

FactJson mergeRulesToJson(const std::vector<const FacetKind *> &Kinds) {
  FactJson J = FactJson::object();
  for (const FacetKind *K : Kinds)
    for (const MergeRule &R : K->rules())
      J[R.Key] = ruleToJson(R);
  return J;
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
  SourcesOf[S.USR].push_back(Source.str());
  auto It = Entries.find(S.USR);
  if (It == Entries.end()) {
    Entries.emplace(S.USR, Entry{S, std::nullopt});
    return;
  }
  Entry &E = It->second;
  if (!E.Merged)
    E.Merged = summaryObject(E.First);
  const FactJson Next = summaryObject(S);
  const std::vector<MergeRule> Rules = allRules();
  // Compare with the merge so far: facts already reduced to "unknown" or
  // dropped stay so, and new disagreements are added once.
  std::vector<std::string> Keys = jsonDisagreements(*E.Merged, Next, Rules);
  if (!Keys.empty()) {
    std::vector<std::string> &Known = ConflictFacts[S.USR];
    Known.insert(Known.end(), Keys.begin(), Keys.end());
    std::sort(Known.begin(), Known.end());
    Known.erase(std::unique(Known.begin(), Known.end()), Known.end());
  }
  E.Merged = mergeEntries(*E.Merged, Next, Rules);
}

std::map<std::string, FunctionSummary> SummaryMerger::take() {
  std::map<std::string, FunctionSummary> Result;
  for (auto &[USR, E] : Entries) {
    if (!E.Merged) {
      Result.emplace(USR, std::move(E.First));
      continue;
    }
    // Both versions were written by the facets themselves, so the merge
    // reads back; the first version stands if it somehow does not.
    std::string Error;
    std::optional<FunctionSummary> M =
        summaryFromObject(ReadJson(*E.Merged), Error);
    Result.emplace(USR, M ? std::move(*M) : std::move(E.First));
  }
  Entries.clear();
  return Result;
}

std::vector<SummaryConflict> SummaryMerger::conflicts() const {
  std::vector<SummaryConflict> Result;
  for (const auto &[USR, Facts] : ConflictFacts) {
    SummaryConflict C;
    C.USR = USR;
    C.Name = Entries.at(USR).First.Name;
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
