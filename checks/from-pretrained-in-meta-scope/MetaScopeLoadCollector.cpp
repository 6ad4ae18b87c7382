//===--- MetaScopeLoadCollector.cpp - metaguard-tidy -----------*- C++ -*-===//
//
// What one function does for metaguard-from-pretrained-in-meta-scope: its
// LoadFacts (whether calling it loads weights with the caller's ambient
// device, how deep, and which of the caller's states reach that load),
// collected call by call for the summary table.
//
//===----------------------------------------------------------------------===//

#include "MetaScopeLoadFinder.h"
#include "utils/analysis/FunctionBodies.h"
#include "utils/analysis/InvokedCallables.h"
#include "utils/analysis/RecordBases.h"
#include "utils/domain/LibraryCode.h"
#include "utils/domain/LoadFacts.h"

#include "clang/AST/DeclTemplate.h"
#include "clang/AST/ExprCXX.h"

namespace clang::tidy::metaguard {

namespace {

/// A constructor of a module holder (TORCH_MODULE(Name) declares one in user
/// code, inheriting ModuleHolder's): it only forwards to the Impl's.
bool isHolderConstructor(const FunctionDecl *FD) {
  const auto *Ctor = dyn_cast<CXXConstructorDecl>(FD);
  if (!Ctor)
    return false;
  return recordOrBase(Ctor->getParent(), [](const CXXRecordDecl *R) {
    const auto *Spec = dyn_cast<ClassTemplateSpecializationDecl>(R);
    return Spec && Spec->getSpecializedTemplate()->getIdentifier() &&
           Spec->getSpecializedTemplate()->getName() == "ModuleHolder";
  });
}

} // namespace

/// Calls that are plumbing between user functions and do not count towards
/// CallDepth.
bool MetaScopeLoadFinder::isFreeHop(const FunctionDecl *FD) {
  return isLibraryFunction(FD) || isHolderConstructor(FD) || FD->isImplicit();
}

/// The body of a thread Call starts (std::thread, std::jthread, a
/// container's emplace of one, std::async that may launch one); a
/// std::function given to one runs whatever the translation unit stores in it.
std::optional<InvokedCallable>
MetaScopeLoadFinder::threadStartedBy(const Expr *Call, SummaryTable &Table) {
  std::optional<InvokedCallable> Body =
      invokedCallable(Call, &Table.callableStores());
  if (!Body || !Body->OnAnotherThread)
    return std::nullopt;
  return Body;
}

/// Loads facts: whether calling the function loads weights with the caller's
/// ambient device (no scope of its own around the load, no device map), at
/// any depth, and whether the caller's default device reaches that load.
class MetaScopeLoadFinder::LoadsFacet : public SummaryFacetFor<LoadFacts> {
public:
  explicit LoadsFacet(MetaScopeLoadFinder &Finder) : Finder(Finder) {}

  bool follows(const FunctionDecl *FD) const override {
    return !Finder.Ambient.isMachinery(FD);
  }

  void summarise(const FunctionDecl *F, FunctionSummary &Summary,
                 SummaryTable &Table) override {
    LoadFacts &Out = Summary.edit<LoadFacts>();
    ASTContext &Context = Table.context();
    const std::vector<const Expr *> Calls = collectCalls(F);
    // What sets the default device inside F: a load after it on every path
    // is out of reach of the caller's default device.
    llvm::SmallVector<const Stmt *, 4> Setters;
    for (const Expr *Call : Calls) {
      const FunctionDecl *Callee = calledFunction(Call);
      if (Finder.Ambient.isSetter(Callee)) {
        Setters.push_back(Call);
      } else if (Callee && !Finder.Ambient.isMachinery(Callee) &&
                 Finder.Ambient.helperEffect(Call, Table)) {
        Setters.push_back(Call);
      }
    }
    bool Found = false, FoundToDefault = false, FoundToScope = false;
    auto Keep = [&](const Expr *Call, const FunctionDecl *Callee,
                    const std::optional<std::string> &LoaderName,
                    const LoadFacts *S, bool ToDefault, bool ToScope) {
      if (!ToDefault && !ToScope)
        return; // Out of reach of every state of the caller.
      const unsigned Depth =
          LoaderName ? 0
                     : S->LoadsDepth + (Callee && isFreeHop(Callee) ? 0 : 1);
      // Keep one load for the notes: one that the most of the caller's
      // states reach, then the shallowest.
      const int Reach = ToDefault + ToScope;
      const int FoundReach = FoundToDefault + FoundToScope;
      const bool Better = !Found || Reach > FoundReach ||
                          (Reach == FoundReach && Depth < Out.LoadsDepth);
      if (Better) {
        Out.LoadsDepth = Depth;
        if (LoaderName) {
          Out.LoadsAt = Table.refOf(Call->getBeginLoc());
          Out.Loader = Callee ? displayName(Callee) : *LoaderName;
          Out.LoadsIn = displayName(F);
        } else {
          Out.LoadsAt = S->LoadsAt;
          Out.Loader = S->Loader;
          Out.LoadsIn = S->LoadsIn;
        }
      }
      Found = true;
      FoundToDefault |= ToDefault;
      FoundToScope |= ToScope;
    };
    // Whether the caller's default device reaches Call: no setter of F's
    // own on every path before it.
    auto DefaultReaches = [&](const Expr *Call) {
      if (Setters.empty())
        return true;
      const CfgReachability *Cfg =
          Finder.Ambient.cfgs().get(F, F->getBody(), Context);
      return Cfg && Cfg->reachableFromEntry(Call, Setters);
    };
    for (const Expr *Call : Calls) {
      // A thread's body runs with the process's default device and none of
      // the scopes of the thread that starts it.
      if (std::optional<InvokedCallable> Body = threadStartedBy(Call, Table)) {
        for (const FunctionDecl *Fn : Body->Functions) {
          if (Finder.Ambient.loaders().isLoader(Fn)) {
            Keep(Call, Fn, Fn->getNameAsString(), nullptr, DefaultReaches(Call),
                 false);
          } else if (const LoadFacts *TS = loadsOf(Fn, Table);
                     TS && !TS->LoadsOnlyAfterSettingDevice) {
            Keep(Call, Fn, std::nullopt, TS, DefaultReaches(Call), false);
          }
        }
        continue;
      }
      const FunctionDecl *Callee = calledFunction(Call);
      std::optional<std::string> LoaderName =
          Finder.Ambient.loaders().loaderCallName(Call);
      const LoadFacts *S = nullptr;
      // A deferred task runs here, as a call of it would.
      if (std::optional<InvokedCallable> Task =
              deferredCallableRunBy(Call, &Table.callableStores())) {
        for (const FunctionDecl *Fn : Task->Functions) {
          Callee = Fn;
          if (Finder.Ambient.loaders().isLoader(Fn))
            LoaderName = Fn->getNameAsString();
          else
            S = loadsOf(Fn, Table);
          if (LoaderName || S)
            break;
        }
        if (!LoaderName && !S)
          continue;
      }
      if (!LoaderName && !S) {
        if (!Callee || Finder.Ambient.isMachinery(Callee))
          continue;
        // Any function the call may run (overrides of a virtual one too,
        // also those only other translation units define).
        for (const FunctionDecl *Target : Table.callTargets(Call)) {
          const FunctionSummary *TS = Finder.Ambient.isMachinery(Target)
                                          ? nullptr
                                          : Table.lookup<LoadFacts>(Target);
          if (TS && TS->get<LoadFacts>().LoadsWeights) {
            S = &TS->get<LoadFacts>();
            Callee = Target;
            break;
          }
        }
        if (!S)
          for (const FunctionSummary *TS : Table.externalTargets(Call))
            if (TS->get<LoadFacts>().LoadsWeights) {
              S = &TS->get<LoadFacts>();
              Callee = nullptr; // User code: a call that counts.
              break;
            }
        if (!S)
          continue;
      }
      // Loads only on threads the callee starts: no scope of anyone's
      // reaches them, the default device does.
      const bool OtherThreads = S && S->LoadsOnlyOnOtherThreads;
      // A scope of the function's own decides the device there.
      if (!OtherThreads && Finder.Ambient.liveGuardAt(Call, F, Context))
        continue;
      if (LoaderName && !deferredCallableRunBy(Call, &Table.callableStores()) &&
          Finder.hasDeviceMap(Call, F, Context))
        continue;
      bool ToDefault = LoaderName || !S->LoadsOnlyAfterSettingDevice;
      Keep(Call, Callee, LoaderName, S, ToDefault && DefaultReaches(Call),
           !OtherThreads);
    }
    Out.LoadsWeights = Found;
    Out.LoadsOnlyAfterSettingDevice = Found && !FoundToDefault;
    Out.LoadsOnlyOnOtherThreads = Found && !FoundToScope;
  }

private:
  /// Fn's loads facts when calling it loads weights.
  const LoadFacts *loadsOf(const FunctionDecl *Fn, SummaryTable &Table) {
    const FunctionSummary *S =
        Finder.Ambient.canEnter(Fn) ? Table.lookup<LoadFacts>(Fn) : nullptr;
    return S && S->get<LoadFacts>().LoadsWeights ? &S->get<LoadFacts>()
                                                 : nullptr;
  }

  MetaScopeLoadFinder &Finder;
};

std::unique_ptr<SummaryFacet> MetaScopeLoadFinder::makeLoadsFacet() {
  return std::make_unique<LoadsFacet>(*this);
}

} // namespace clang::tidy::metaguard
