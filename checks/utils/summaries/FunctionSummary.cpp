//===--- FunctionSummary.cpp - metaguard-tidy ------------------*- C++ -*-===//

#include "utils/summaries/FunctionSummary.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>

namespace clang::tidy::metaguard {

namespace {

struct Registry {
  std::mutex Lock;
  std::vector<const FacetKind *> Kinds;
};

Registry &registry() {
  static Registry R;
  return R;
}

} // namespace

FacetKind::FacetKind() {
  Registry &R = registry();
  std::lock_guard<std::mutex> Guard(R.Lock);
  Id = static_cast<unsigned>(R.Kinds.size());
  // A programming error of the plugin, found by its first test run.
  if (Id >= MaxFacets)
    std::abort();
  R.Kinds.push_back(this);
}

std::vector<const FacetKind *> FacetKind::all() {
  Registry &R = registry();
  std::vector<const FacetKind *> Kinds;
  {
    std::lock_guard<std::mutex> Guard(R.Lock);
    Kinds = R.Kinds;
  }
  std::sort(Kinds.begin(), Kinds.end(),
            [](const FacetKind *A, const FacetKind *B) {
              return A->name() < B->name();
            });
  return Kinds;
}

FunctionSummary::FunctionSummary(const FunctionSummary &O)
    : USR(O.USR), Name(O.Name) {
  for (const auto &Slot : O.Slots)
    Slots.push_back(Slot ? Slot->clone() : nullptr);
}

FunctionSummary &FunctionSummary::operator=(const FunctionSummary &O) {
  if (this != &O) {
    FunctionSummary Copy(O);
    *this = std::move(Copy);
  }
  return *this;
}

const FacetFacts *FunctionSummary::facts(const FacetKind &K) const {
  return K.id() < Slots.size() ? Slots[K.id()].get() : nullptr;
}

FacetFacts &FunctionSummary::editFacts(const FacetKind &K) {
  if (Slots.size() <= K.id())
    Slots.resize(K.id() + 1);
  if (!Slots[K.id()])
    Slots[K.id()] = K.make();
  return *Slots[K.id()];
}

void FunctionSummary::setFacts(const FacetKind &K,
                               std::unique_ptr<FacetFacts> F) {
  if (Slots.size() <= K.id())
    Slots.resize(K.id() + 1);
  Slots[K.id()] = std::move(F);
}

void FunctionSummary::clearFacts(const FacetKind &K) {
  if (K.id() < Slots.size())
    Slots[K.id()].reset();
}

bool FunctionSummary::empty() const {
  return std::all_of(Slots.begin(), Slots.end(),
                     [](const auto &Slot) { return !Slot || Slot->empty(); });
}

} // namespace clang::tidy::metaguard
