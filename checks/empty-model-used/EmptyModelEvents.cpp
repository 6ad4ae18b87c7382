//===--- EmptyModelEvents.cpp - metaguard-tidy -----------------*- C++ -*-===//

#include "EmptyModelEvents.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

namespace clang::tidy::metaguard::emptymodel {

namespace {

constexpr CfgReachability::Paths Handlers =
    CfgReachability::Paths::WithHandlers;

/// The part of a model that a use of Use needs from a model built as Built
/// (one covers the other): the deeper of the two.
const ModuleRef &neededPart(const ModuleRef &Built, const ModuleRef &Use) {
  return Built.Path.size() >= Use.Path.size() ? Built : Use;
}

bool isUninitialised(const Gen &G) {
  return G.How.Kind == BuiltModel::Uninitialised;
}

/// Which gen a question about how a model is left prefers: an empty model
/// first, then one without values, then one built with the caller's device.
unsigned preference(BuiltModel Kind) {
  switch (Kind) {
  case BuiltModel::Empty:
    return 3;
  case BuiltModel::Uninitialised:
    return 2;
  case BuiltModel::CallersDevice:
    return 1;
  default:
    return 0;
  }
}

void eraseStmt(llvm::SmallVectorImpl<const Stmt *> &Stmts, const Stmt *S) {
  Stmts.erase(std::remove(Stmts.begin(), Stmts.end(), S), Stmts.end());
}

/// Whether a use of the given kind can happen to a model in state Of.
bool concerns(UseOf UseKind, UseOf State) {
  return UseKind == UseOf::Any || UseKind == State;
}

} // namespace

bool Events::buildsEmpty() const {
  return llvm::any_of(Gens, [](const Gen &G) {
    return G.How.Kind == BuiltModel::Empty ||
           (isUninitialised(G) && !G.How.IfEmptyBefore);
  });
}

llvm::SmallVector<const Stmt *, 8>
Events::killsOf(const ModuleRef &Part, const Gen *G, bool Values) const {
  llvm::SmallVector<const Stmt *, 8> Result;
  // The statement that builds G replaces what was there before G.
  for (const Kill &K : Kills)
    if ((!G || K.S != G->S) && (Values || K.Kind != KillKind::Initialises) &&
        refCovers(K.Ref, Part, /*AncestorsToo=*/false))
      Result.push_back(K.S);
  // Another model built into the variable replaces this one.
  for (const Gen &Other : Gens)
    if (&Other != G && refCovers(Other.Ref, Part, /*AncestorsToo=*/false))
      Result.push_back(Other.S);
  return Result;
}

const Gen *Events::emptyBefore(const Gen &G, const CfgReachability &Cfg) const {
  for (const Gen &E : Gens) {
    if (E.How.Kind != BuiltModel::Empty ||
        !refCovers(E.Ref, G.Ref, /*AncestorsToo=*/true))
      continue;
    llvm::SmallVector<const Stmt *, 8> Kills =
        killsOf(neededPart(E.Ref, G.Ref), &E);
    eraseStmt(Kills, G.S);
    const Stmt *From[] = {E.S};
    if (Cfg.findReachingGen(G.S, From, Kills, /*EntryIsGen=*/false, {},
                            Handlers))
      return &E;
  }
  return nullptr;
}

bool Events::wasEmpty(const Gen &G, const CfgReachability &Cfg,
                      bool EntryMayBeEmpty) const {
  if (!G.How.IfEmptyBefore || emptyBefore(G, Cfg))
    return true;
  if (!EntryMayBeEmpty)
    return false;
  llvm::SmallVector<const Stmt *, 8> Kills = killsOf(G.Ref, &G);
  eraseStmt(Kills, G.S);
  return Cfg.reachableFromEntry(G.S, Kills, Handlers);
}

const Gen *Events::emptyAt(const Use &U, const CfgReachability &Cfg,
                           bool EntryMayBeEmpty) const {
  // An empty model first: the message then names the first mistake.
  for (bool Uninitialised : {false, true}) {
    if (!concerns(U.Of, Uninitialised ? UseOf::Uninitialised : UseOf::Empty))
      continue;
    for (const Gen &G : Gens) {
      const bool Wanted =
          Uninitialised ? isUninitialised(G) : G.How.Kind == BuiltModel::Empty;
      if (!Wanted || !refCovers(G.Ref, U.Ref, /*AncestorsToo=*/true) ||
          (Uninitialised && !wasEmpty(G, Cfg, EntryMayBeEmpty)))
        continue;
      const Stmt *From[] = {G.S};
      if (Cfg.findReachingGen(U.S, From,
                              killsOf(neededPart(G.Ref, U.Ref), &G,
                                      /*Values=*/Uninitialised),
                              /*EntryIsGen=*/false, {}, Handlers))
        return &G;
    }
  }
  return nullptr;
}

const Gen *Events::leftAtReturn(const ModuleRef &Ref,
                                const CfgReachability &Cfg) const {
  const Gen *Found = nullptr;
  for (const Gen &G : Gens) {
    if (!refCovers(Ref, G.Ref, /*AncestorsToo=*/false) ||
        (Found && (Found->How.Kind == BuiltModel::Empty ||
                   preference(Found->How.Kind) > preference(G.How.Kind))) ||
        (isUninitialised(G) && !wasEmpty(G, Cfg, /*EntryMayBeEmpty=*/true)))
      continue;
    const Stmt *From[] = {G.S};
    llvm::SmallVector<const Stmt *, 8> Weights =
        killsOf(G.Ref, &G, /*Values=*/isUninitialised(G));
    Weights.append(Exits.begin(), Exits.end());
    if (Cfg.findReachingGenAtExit(From, Weights, /*EntryIsGen=*/false, {},
                                  Handlers))
      Found = &G;
  }
  return Found;
}

const Gen *Events::reachingGen(const Stmt *S, const ModuleRef &Ref,
                               const CfgReachability &Cfg) const {
  // The nearest model built into it, given memory counting as a new one.
  llvm::SmallVector<const Stmt *, 8> From;
  llvm::SmallVector<const Stmt *, 8> Weights;
  for (const Gen &G : Gens)
    if (refCovers(Ref, G.Ref, /*AncestorsToo=*/true))
      (isUninitialised(G) ? Weights : From).push_back(G.S);
  for (const Kill &K : Kills)
    if (K.Kind != KillKind::Initialises &&
        refCovers(K.Ref, Ref, /*AncestorsToo=*/false))
      Weights.push_back(K.S);
  const Gen *Built = nullptr;
  if (!From.empty())
    if (std::optional<CfgReachability::Reach> Reach = Cfg.findReachingGen(
            S, From, Weights, /*EntryIsGen=*/false, {}, Handlers);
        Reach && Reach->Gen)
      for (const Gen &G : Gens)
        if (G.S == Reach->Gen && !isUninitialised(G))
          Built = &G;
  if (Built && Built->How.Kind == BuiltModel::Empty)
    return Built;
  for (const Gen &G : Gens) {
    if (!isUninitialised(G) || !refCovers(Ref, G.Ref, /*AncestorsToo=*/true) ||
        !wasEmpty(G, Cfg, /*EntryMayBeEmpty=*/true))
      continue;
    const Stmt *Memory[] = {G.S};
    if (Cfg.findReachingGen(S, Memory, killsOf(Ref, &G, /*Values=*/true),
                            /*EntryIsGen=*/false, {}, Handlers))
      return &G;
  }
  return Built;
}

bool Events::givesWeights(const ModuleRef &Ref, bool NewValues,
                          const CfgReachability &Cfg) const {
  llvm::SmallVector<const Stmt *, 8> Weights;
  for (const Kill &K : Kills)
    if ((K.Kind == KillKind::Weights ||
         (NewValues && K.Kind == KillKind::NewValue)) &&
        refCovers(K.Ref, Ref, /*AncestorsToo=*/false))
      Weights.push_back(K.S);
  // Memory for the whole model, when something then gives it values.
  llvm::SmallVector<const Stmt *, 4> Memory;
  for (const Gen &G : Gens)
    if (isUninitialised(G) && G.How.IfEmptyBefore &&
        refCovers(G.Ref, Ref, /*AncestorsToo=*/false))
      Memory.push_back(G.S);
  if (Weights.empty() && Memory.empty())
    return false;
  // A path that throws or never returns gives the caller nothing to use.
  Weights.append(Exits.begin(), Exits.end());
  // A model built into it afterwards has no weights either.
  llvm::SmallVector<const Stmt *, 4> Built;
  for (const Gen &G : Gens)
    if (!isUninitialised(G) && refCovers(Ref, G.Ref, /*AncestorsToo=*/true))
      Built.push_back(G.S);
  llvm::SmallVector<const Stmt *, 8> EmptyKills(Weights);
  EmptyKills.append(Memory.begin(), Memory.end());
  if (Cfg.findReachingGenAtExit(Built, EmptyKills, /*EntryIsGen=*/true, {},
                                Handlers))
    return false;
  return Memory.empty() || initialises(Ref, Cfg);
}

bool Events::initialises(const ModuleRef &Ref,
                         const CfgReachability &Cfg) const {
  llvm::SmallVector<const Stmt *, 8> Values;
  for (const Kill &K : Kills)
    if (K.Kind != KillKind::NewValue &&
        refCovers(K.Ref, Ref, /*AncestorsToo=*/false))
      Values.push_back(K.S);
  if (Values.empty())
    return false;
  Values.append(Exits.begin(), Exits.end());
  llvm::SmallVector<const Stmt *, 4> Unfilled;
  for (const Gen &G : Gens)
    if (refCovers(Ref, G.Ref, /*AncestorsToo=*/true))
      Unfilled.push_back(G.S);
  return !Cfg.findReachingGenAtExit(Unfilled, Values, /*EntryIsGen=*/true, {},
                                    Handlers);
}

const Use *
Events::useBeforeWeights(llvm::function_ref<bool(const ModuleRef &)> Concerns,
                         UseOf Of, const CfgReachability &Cfg) const {
  const bool Values = Of == UseOf::Uninitialised;
  for (const Use &U : Uses) {
    if (!Concerns(U.Ref))
      continue;
    if (concerns(U.Of, Of) &&
        Cfg.reachableFromEntry(U.S, killsOf(U.Ref, nullptr, Values), Handlers))
      return &U;
    // Given empty, the function may give it memory and use it without values.
    if (Of == UseOf::Empty && concerns(U.Of, UseOf::Uninitialised))
      for (const Gen &G : Gens)
        if (isUninitialised(G) && G.How.IfEmptyBefore &&
            refCovers(G.Ref, U.Ref, /*AncestorsToo=*/true) &&
            wasEmpty(G, Cfg, /*EntryMayBeEmpty=*/true)) {
          const Stmt *From[] = {G.S};
          if (Cfg.findReachingGen(U.S, From,
                                  killsOf(neededPart(G.Ref, U.Ref), &G, true),
                                  /*EntryIsGen=*/false, {}, Handlers))
            return &U;
        }
  }
  return nullptr;
}

} // namespace clang::tidy::metaguard::emptymodel
