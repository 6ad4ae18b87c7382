//===--- EmptyModelEvents.cpp - metaguard-tidy -----------------*- C++ -*-===//

#include "EmptyModelEvents.h"

namespace clang::tidy::metaguard::emptymodel {

namespace {

constexpr CfgReachability::Paths Handlers =
    CfgReachability::Paths::WithHandlers;

/// The part of a model that a use of Use needs from a model built as Built
/// (one covers the other): the deeper of the two.
const ModuleRef &neededPart(const ModuleRef &Built, const ModuleRef &Use) {
  return Built.Path.size() >= Use.Path.size() ? Built : Use;
}

} // namespace

bool Events::buildsEmpty() const {
  for (const Gen &G : Gens)
    if (G.How.Kind == BuiltModel::Empty)
      return true;
  return false;
}

llvm::SmallVector<const Stmt *, 8> Events::killsOf(const ModuleRef &Part,
                                                   const Gen *G) const {
  llvm::SmallVector<const Stmt *, 8> Result;
  // The statement that builds G replaces what was there before G.
  for (const Kill &K : Kills)
    if ((!G || K.S != G->S) && refCovers(K.Ref, Part, /*AncestorsToo=*/false))
      Result.push_back(K.S);
  // Another model built into the variable replaces this one.
  for (const Gen &Other : Gens)
    if (&Other != G && refCovers(Other.Ref, Part, /*AncestorsToo=*/false))
      Result.push_back(Other.S);
  return Result;
}

const Gen *Events::emptyAt(const Use &U, const CfgReachability &Cfg) const {
  for (const Gen &G : Gens) {
    if (G.How.Kind != BuiltModel::Empty ||
        !refCovers(G.Ref, U.Ref, /*AncestorsToo=*/true))
      continue;
    const Stmt *From[] = {G.S};
    if (Cfg.findReachingGen(U.S, From, killsOf(neededPart(G.Ref, U.Ref), &G),
                            /*EntryIsGen=*/false, {}, Handlers))
      return &G;
  }
  return nullptr;
}

const Gen *Events::leftAtReturn(const ModuleRef &Ref,
                                const CfgReachability &Cfg) const {
  const Gen *Found = nullptr;
  for (const Gen &G : Gens) {
    if (!refCovers(Ref, G.Ref, /*AncestorsToo=*/false) ||
        (Found && Found->How.Kind == BuiltModel::Empty))
      continue;
    const Stmt *From[] = {G.S};
    llvm::SmallVector<const Stmt *, 8> Weights = killsOf(G.Ref, &G);
    Weights.append(Exits.begin(), Exits.end());
    if (Cfg.findReachingGenAtExit(From, Weights, /*EntryIsGen=*/false, {},
                                  Handlers))
      Found = &G;
  }
  return Found;
}

const Gen *Events::reachingGen(const Stmt *S, const ModuleRef &Ref,
                               const CfgReachability &Cfg) const {
  llvm::SmallVector<const Stmt *, 8> From;
  for (const Gen &G : Gens)
    if (refCovers(Ref, G.Ref, /*AncestorsToo=*/true))
      From.push_back(G.S);
  if (From.empty())
    return nullptr;
  llvm::SmallVector<const Stmt *, 8> Weights;
  for (const Kill &K : Kills)
    if (refCovers(K.Ref, Ref, /*AncestorsToo=*/false))
      Weights.push_back(K.S);
  std::optional<CfgReachability::Reach> Reach =
      Cfg.findReachingGen(S, From, Weights, /*EntryIsGen=*/false, {}, Handlers);
  if (!Reach || !Reach->Gen)
    return nullptr;
  for (const Gen &G : Gens)
    if (G.S == Reach->Gen)
      return &G;
  return nullptr;
}

bool Events::givesWeights(const ModuleRef &Ref, bool NewValues,
                          const CfgReachability &Cfg) const {
  llvm::SmallVector<const Stmt *, 8> Weights;
  for (const Kill &K : Kills)
    if ((NewValues || !K.NewValue) &&
        refCovers(K.Ref, Ref, /*AncestorsToo=*/false))
      Weights.push_back(K.S);
  if (Weights.empty())
    return false;
  // A path that throws or never returns gives the caller nothing to use.
  Weights.append(Exits.begin(), Exits.end());
  // A model built into it afterwards has no weights either.
  llvm::SmallVector<const Stmt *, 4> Built;
  for (const Gen &G : Gens)
    if (refCovers(Ref, G.Ref, /*AncestorsToo=*/true))
      Built.push_back(G.S);
  return !Cfg.findReachingGenAtExit(Built, Weights, /*EntryIsGen=*/true, {},
                                    Handlers);
}

const Use *
Events::useBeforeWeights(llvm::function_ref<bool(const ModuleRef &)> Concerns,
                         const CfgReachability &Cfg) const {
  for (const Use &U : Uses) {
    if (!Concerns(U.Ref))
      continue;
    if (Cfg.reachableFromEntry(U.S, killsOf(U.Ref, nullptr), Handlers))
      return &U;
  }
  return nullptr;
}

} // namespace clang::tidy::metaguard::emptymodel
