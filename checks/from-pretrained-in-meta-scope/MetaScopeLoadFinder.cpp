//===--- MetaScopeLoadFinder.cpp - metaguard-tidy --------------*- C++ -*-===//

#include "MetaScopeLoadFinder.h"
#include "utils/analysis/FunctionBodies.h"
#include "utils/analysis/InvokedCallables.h"
#include "utils/analysis/NameList.h"
#include "utils/domain/ExplicitOptions.h"
#include "utils/domain/LibraryCode.h"
#include "utils/domain/LoadFacts.h"
#include "utils/domain/ReturnedOptions.h"

#include "clang/AST/ExprCXX.h"

namespace clang::tidy::metaguard {

namespace {

/// Inside a loader's own implementation, calls through the standard library
/// and LibTorch (make_shared, module holders, ...) are followed up to this
/// many in a row (libstdc++'s make_shared alone is about ten calls deep).
constexpr unsigned MaxFreeHops = 32;
/// How deep to look inside a loader's own implementation for the place where
/// it builds the model on meta.
constexpr unsigned LoaderBodyDepth = 4;

} // namespace

MetaScopeLoadFinder::MetaScopeLoadFinder(AmbientDevice &Ambient,
                                         MetaScopeLoadReporter &Reporter,
                                         unsigned CallDepth,
                                         SummariesFn Summaries)
    : Ambient(Ambient), Reporter(Reporter), CallDepth(CallDepth),
      Summaries(std::move(Summaries)), Loads(makeLoadsFacet()) {}

MetaScopeLoadFinder::~MetaScopeLoadFinder() = default;

SummaryFacet *MetaScopeLoadFinder::facet() { return Loads.get(); }

void MetaScopeLoadFinder::clear() {
  Analyzed.clear();
  WithinMemo.clear();
  WithinInProgress.clear();
}

bool MetaScopeLoadFinder::hasDeviceMap(const Expr *Call, const FunctionDecl *F,
                                       ASTContext &Context) {
  return findExplicitOptionMember(Call, {DeviceMapMember}, F, Context,
                                  Ambient.cfgs()) ||
         deviceMapFromHelpers(Call, Summaries(Context)) != DeviceMapKind::None;
}

std::optional<InnerLoad>
MetaScopeLoadFinder::exposedLoad(const FunctionDecl *Callee, Exposure Kind,
                                 ASTContext &Context) {
  if (CallDepth == 0 || !Ambient.canEnter(Callee))
    return std::nullopt;
  return exposedLoad(Summaries(Context).lookup<LoadFacts>(Callee),
                     isFreeHop(Callee), Kind, Context);
}

std::optional<InnerLoad>
MetaScopeLoadFinder::exposedLoad(const FunctionSummary *Summary, bool FreeHop,
                                 Exposure Kind, ASTContext &Context) {
  const LoadFacts *S = Summary ? &Summary->get<LoadFacts>() : nullptr;
  if (CallDepth == 0 || !S || !S->LoadsWeights)
    return std::nullopt;
  if (Kind == Exposure::DefaultDevice && S->LoadsOnlyAfterSettingDevice)
    return std::nullopt;
  if (Kind == Exposure::Scope && S->LoadsOnlyOnOtherThreads)
    return std::nullopt;
  if (S->LoadsDepth + (FreeHop ? 0 : 1) > CallDepth)
    return std::nullopt;
  return InnerLoad{Summaries(Context).locationOf(S->LoadsAt), S->Loader,
                   S->LoadsIn};
}

void MetaScopeLoadFinder::analyzeFunction(const FunctionDecl *F,
                                          const LambdaExpr *Lambda,
                                          ASTContext &Context) {
  if (!F || !F->getBody() || !Analyzed.insert(F).second)
    return;
  // The code of loaders, setters and scopes is the meta machinery itself,
  // including the lambdas written inside it (whose closure classes live in
  // it): no parent map needed to see that.
  if (Ambient.isInsideMachinery(F))
    return;
  if (!Lambda && Ambient.isMachinery(F))
    return;
  SummaryTable &Table = Summaries(Context);
  AmbientDevice::InFunction Here =
      Ambient.inFunction(F, Lambda, Table, Context);
  for (const Expr *Call : Here.calls()) {
    // A thread's body runs with the process's default device, whatever
    // scope the thread that starts it is in; a deferred task runs at the
    // get() or wait() that runs it, in the scopes live there.
    if (std::optional<InvokedCallable> Body = threadStartedBy(Call, Table)) {
      if (std::optional<AmbientDevice::Origin> Origin =
              Here.defaultDeviceAt(Call))
        checkCallableOnMeta(Call, *Body, *Origin, Context);
      continue;
    }
    if (std::optional<InvokedCallable> Task =
            deferredCallableRunBy(Call, &Table.callableStores())) {
      if (std::optional<AmbientDevice::Origin> Origin = Here.at(Call))
        checkCallableOnMeta(Call, *Task, *Origin, Context);
      continue;
    }
    const FunctionDecl *Callee = calledFunction(Call);
    if (Callee &&
        (Ambient.isSetter(Callee) || (Ambient.isMachinery(Callee) &&
                                      !Ambient.loaders().isLoader(Callee)))) {
      checkScopeFunctionCall(Call, Context);
      continue;
    }
    checkCallOnMeta(Call, F, Here, Context);
  }
}

void MetaScopeLoadFinder::checkCallableOnMeta(
    const Expr *Call, const InvokedCallable &Callable,
    const AmbientDevice::Origin &Origin, ASTContext &Context) {
  const Exposure Kind = Origin.Kind == AmbientDevice::Source::DefaultDevice
                            ? Exposure::DefaultDevice
                            : Exposure::Scope;
  for (const FunctionDecl *Fn : Callable.Functions) {
    if (Ambient.loaders().isLoader(Fn))
      return Reporter.loadOnMeta(Call, displayName(Fn), Origin, std::nullopt,
                                 Context);
    if (std::optional<InnerLoad> Inner = exposedLoad(Fn, Kind, Context))
      return Reporter.loadOnMeta(Call, displayName(Fn), Origin, Inner, Context);
  }
}

void MetaScopeLoadFinder::checkScopeFunctionCall(const Expr *Call,
                                                 ASTContext &Context) {
  // A scope function running a named function or a stored lambda: that
  // callable runs on meta.
  if (!Ambient.isScopeFunction(calledFunction(Call)) || CallDepth == 0)
    return;
  const auto *CE = cast<CallExpr>(Call);
  for (const Expr *Arg : CE->arguments()) {
    const FunctionDecl *Target = functionOfCallable(Arg);
    const LambdaExpr *L = lambdaOfCallable(Arg);
    if (L &&
        L->IgnoreImplicit() == Arg->IgnoreImplicit()->IgnoreParenImpCasts())
      continue; // Analysed as a function of its own.
    if (std::optional<InnerLoad> Inner =
            exposedLoad(Target, Exposure::Scope, Context))
      Reporter.loadOnMeta(
          CE, displayName(Target),
          AmbientDevice::Origin{
              AmbientDevice::Source::ScopeFunction, nullptr, CE, {}, {}},
          Inner, Context);
  }
}

void MetaScopeLoadFinder::checkCallOnMeta(const Expr *Call,
                                          const FunctionDecl *F,
                                          AmbientDevice::InFunction &Here,
                                          ASTContext &Context) {
  const FunctionDecl *Callee = calledFunction(Call);
  std::optional<AmbientDevice::Origin> Origin = Here.at(Call);
  if (std::optional<std::string> Loader =
          Ambient.loaders().loaderCallName(Call)) {
    if (Origin && !hasDeviceMap(Call, F, Context))
      Reporter.loadOnMeta(Call, Callee ? displayName(Callee) : *Loader, *Origin,
                          std::nullopt, Context);
    return;
  }
  // The loads on threads the call starts see the default device under any
  // scope live here (asked only for such loads: it walks the CFG).
  std::optional<std::optional<AmbientDevice::Origin>> Default;
  auto DefaultHere = [&]() -> const std::optional<AmbientDevice::Origin> & {
    if (!Default)
      Default = Origin && Origin->Kind == AmbientDevice::Source::DefaultDevice
                    ? Origin
                    : Here.defaultDeviceAt(Call);
    return *Default;
  };
  auto Try = [&](const FunctionSummary *S, bool FreeHop, llvm::StringRef Name) {
    if (!S || !S->get<LoadFacts>().LoadsWeights)
      return false;
    const std::optional<AmbientDevice::Origin> &At =
        S->get<LoadFacts>().LoadsOnlyOnOtherThreads ? DefaultHere() : Origin;
    if (!At)
      return false;
    const Exposure Kind = At->Kind == AmbientDevice::Source::DefaultDevice
                              ? Exposure::DefaultDevice
                              : Exposure::Scope;
    std::optional<InnerLoad> Inner = exposedLoad(S, FreeHop, Kind, Context);
    if (Inner)
      Reporter.loadOnMeta(Call, Name, *At, Inner, Context);
    return Inner.has_value();
  };
  // Every function the call may run (overrides of a virtual one too, also
  // those only other translation units define).
  SummaryTable &Table = Summaries(Context);
  for (const FunctionDecl *Target : Table.callTargets(Call))
    if (Ambient.canEnter(Target) && Try(Table.lookup<LoadFacts>(Target),
                                        isFreeHop(Target), displayName(Target)))
      return;
  for (const FunctionSummary *S : Table.externalTargets(Call))
    if (Try(S, /*FreeHop=*/false, S->Name))
      return;
}

std::optional<InnerLoad>
MetaScopeLoadFinder::findMetaLoadWithin(const FunctionDecl *F, unsigned Depth,
                                        unsigned FreeHops,
                                        ASTContext &Context) {
  const FunctionDecl *Def = definitionWithBody(F);
  if (!Def || Depth == 0 || CallDepth == 0)
    return std::nullopt;
  WithinKey Key{Def, Depth, FreeHops};
  if (auto It = WithinMemo.find(Key); It != WithinMemo.end())
    return It->second;
  if (!WithinInProgress.insert(Def).second)
    return std::nullopt;

  std::optional<InnerLoad> Found;
  const SourceManager &SM = Context.getSourceManager();
  for (const Expr *Call : collectCalls(Def)) {
    const FunctionDecl *Callee = calledFunction(Call);
    if (std::optional<LiveGuard> Guard =
            Ambient.liveGuardAt(Call, Def, Context)) {
      if (Guard->Kind != DeviceKind::Meta)
        continue;
      if (std::optional<std::string> Name =
              Ambient.loaders().loaderCallName(Call)) {
        if (hasDeviceMap(Call, Def, Context))
          continue;
        Found =
            InnerLoad{SM.getFileLoc(Call->getBeginLoc()),
                      Callee ? displayName(Callee) : *Name, displayName(Def)};
        break;
      }
      Found = exposedLoad(Callee, Exposure::Scope, Context);
      if (Found)
        break;
      continue;
    }
    if (Callee && Ambient.isScopeFunction(Callee)) {
      for (const Expr *Arg : cast<CallExpr>(Call)->arguments()) {
        Found = exposedLoad(functionOfCallable(Arg), Exposure::Scope, Context);
        if (Found)
          break;
      }
      if (Found)
        break;
      continue;
    }
    if (!Ambient.canEnter(Callee) || !definitionWithBody(Callee))
      continue;
    if (isFreeHop(Callee)) {
      if (FreeHops < MaxFreeHops)
        Found = findMetaLoadWithin(Callee, Depth, FreeHops + 1, Context);
    } else {
      Found = findMetaLoadWithin(Callee, Depth - 1, 0, Context);
    }
    if (Found)
      break;
  }
  WithinInProgress.erase(Def);
  WithinMemo[Key] = Found;
  return Found;
}

void MetaScopeLoadFinder::checkLoaderBuildsOnMeta(const CallExpr *Call,
                                                  ASTContext &Context) {
  const FunctionDecl *Loader = Call->getDirectCallee();
  if (!Loader || !definitionWithBody(Loader))
    return;
  // A loader's own implementation is analysed from its callers only.
  EnclosingFunction Outer = Ambient.functions().enclosing(Call, Context);
  if (Outer.Function && Ambient.isInsideLoader(Outer.Function))
    return;
  std::optional<InnerLoad> Inner =
      findMetaLoadWithin(Loader, LoaderBodyDepth, 0, Context);
  if (!Inner)
    return;
  std::string Model = "the model";
  if (const TemplateArgumentList *Args =
          Loader->getTemplateSpecializationArgs())
    if (Args->size() > 0 && Args->get(0).getKind() == TemplateArgument::Type)
      Model =
          "'" +
          Args->get(0).getAsType().getAsString(Context.getPrintingPolicy()) +
          "'";
  Reporter.loaderBuildsOnMeta(Call, displayName(Loader), Model, *Inner,
                              Context);
}

} // namespace clang::tidy::metaguard
