//===--- OffloadedParameterEvents.cpp - metaguard-tidy ---------*- C++ -*-===//

#include "OffloadedParameterEvents.h"

#include <algorithm>

namespace clang::tidy::metaguard::offload {

namespace {

/// Adds to Kills the events that put a new object in Ref, or in a member on
/// the way to it: reassignments and in-memory dispatches.
void addReplacements(const Events &Ev, const ModuleRef &Ref,
                     llvm::SmallVectorImpl<const Stmt *> &Kills) {
  for (const std::vector<ModelEvent> *List : {&Ev.Reassigns, &Ev.Undispatches})
    for (const ModelEvent &R : *List)
      if (sameRoot(R.Ref, Ref) && isPathPrefix(R.Ref.Path, Ref.Path))
        Kills.push_back(R.S);
}

} // namespace

const Dispatch *Events::reachingDispatch(const Stmt *Target,
                                         const ModuleRef &Ref,
                                         bool AncestorsToo,
                                         const CfgReachability &Cfg) const {
  llvm::SmallVector<const Stmt *, 4> Gens, Kills;
  for (const Dispatch &D : Dispatches)
    if (refCovers(D.Ref, Ref, AncestorsToo))
      Gens.push_back(D.S);
  if (Gens.empty())
    return nullptr;
  // A new object in the variable (or in a member on the way to Ref) is not
  // dispatched.
  addReplacements(*this, Ref, Kills);
  std::optional<CfgReachability::Reach> Reach =
      Cfg.findReachingGen(Target, Gens, Kills);
  if (!Reach || !Reach->Gen)
    return nullptr;
  for (const Dispatch &D : Dispatches)
    if (D.S == Reach->Gen)
      return &D;
  return nullptr;
}

bool Events::removalReaches(const ModelEvent &Removal, const ModelEvent &Need,
                            const CfgReachability &Cfg) const {
  if (!sameRoot(Removal.Ref, Need.Ref) ||
      !(isPathPrefix(Removal.Ref.Path, Need.Ref.Path) ||
        isPathPrefix(Need.Ref.Path, Removal.Ref.Path)))
    return false;
  llvm::SmallVector<const Stmt *, 4> Kills;
  for (const Dispatch &D : Dispatches)
    if (D.S != Need.S && sameRoot(D.Ref, Removal.Ref) &&
        isPathPrefix(D.Ref.Path, Removal.Ref.Path))
      Kills.push_back(D.S);
  addReplacements(*this, Removal.Ref, Kills);
  // A dispatch that needs the hooks does not restore them before it runs.
  Kills.erase(std::remove(Kills.begin(), Kills.end(), Need.S), Kills.end());
  const Stmt *Gen[] = {Removal.S};
  return Cfg.findReachingGen(Need.S, Gen, Kills).has_value();
}

bool Events::reachesExit(const Dispatch &D, const CfgReachability &Cfg) const {
  llvm::SmallVector<const Stmt *, 4> Kills;
  addReplacements(*this, D.Ref, Kills);
  const Stmt *Gen[] = {D.S};
  return Cfg.findReachingGenAtExit(Gen, Kills).has_value();
}

bool Events::reachedFromEntry(const Stmt *S, const ModuleRef &Ref,
                              const CfgReachability &Cfg,
                              bool RemovalsToo) const {
  llvm::SmallVector<const Stmt *, 4> Kills;
  addReplacements(*this, Ref, Kills);
  for (const Dispatch &D : Dispatches)
    if (sameRoot(D.Ref, Ref))
      Kills.push_back(D.S); // The dispatching function's analysis covers it.
  if (RemovalsToo)
    for (const ModelEvent &Removal : Removals)
      if (Removal.S != S && refCovers(Removal.Ref, Ref, /*AncestorsToo=*/false))
        Kills.push_back(Removal.S);
  return Cfg.reachableFromEntry(S, Kills);
}

std::vector<DispatchStep> dispatchChain(const Dispatch &D,
                                        const SummaryTable &Table) {
  // As many steps as the notes follow a factory's call with.
  const size_t MaxSteps = MaxFactoryDepth + 1;
  std::vector<DispatchStep> Chain;
  const Dispatch *Last = &D;
  for (const Dispatch *Step = &D; Step && Chain.size() < MaxSteps;
       Step = Step->Inner) {
    Chain.push_back(
        {Step->Source, Table.refOf(Step->S->getBeginLoc()), Step->Function});
    Last = Step;
  }
  // The innermost visible step may call a factory of another TU in turn.
  if (!Last->Inner)
    for (const DispatchStep &Next : Last->ExternalChain) {
      if (Chain.size() >= MaxSteps)
        break;
      Chain.push_back(Next);
    }
  return Chain;
}

} // namespace clang::tidy::metaguard::offload
