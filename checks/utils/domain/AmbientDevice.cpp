//===--- AmbientDevice.cpp - metaguard-tidy --------------------*- C++ -*-===//

#include "utils/domain/AmbientDevice.h"
#include "utils/ClangCompat.h"
#include "utils/analysis/ExprPlumbing.h"
#include "utils/analysis/FunctionBodies.h"
#include "utils/analysis/LocalVariables.h"
#include "utils/analysis/NameList.h"
#include "utils/analysis/UserCodeMatchers.h"
#include "utils/domain/DeviceExpr.h"
#include "utils/domain/DeviceFacts.h"
#include "utils/domain/HolderEvents.h"

#include "clang/AST/ExprCXX.h"
#include "clang/Basic/SourceManager.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <algorithm>

namespace clang::tidy::metaguard {

namespace {

/// The functions FD is written in, innermost first: FD itself, and for a
/// lambda's call operator or a local class's method, the functions around
/// them. Lambda call operators are skipped (Pred is not called for them).
template <class Fn> bool anyEnclosingFunction(const FunctionDecl *FD, Fn Pred) {
  for (const DeclContext *DC = FD; DC; DC = DC->getParent()) {
    const auto *F = dyn_cast<FunctionDecl>(DC);
    if (!F)
      continue;
    if (const auto *Method = dyn_cast<CXXMethodDecl>(F);
        Method && Method->getParent()->isLambda())
      continue;
    if (Pred(F))
      return true;
  }
  return false;
}

/// The try statement whose try block holds S, innermost first.
const CXXTryStmt *enclosingTry(const Stmt *S, const StmtParents &Parents) {
  for (unsigned Steps = 0; S && Steps < ambient_limits::TryBlockParents;
       ++Steps) {
    const Stmt *Parent = Parents.parent(S);
    if (const auto *Try = dyn_cast_or_null<CXXTryStmt>(Parent);
        Try && Try->getTryBlock() == S)
      return Try;
    S = Parent;
  }
  return nullptr;
}

/// The catch handler through which a meta setting (Gen) reaches a statement
/// only by an exception: a handler, of the try around Gen (or around a
/// reset that the exception skips), without a reset of its own.
const CXXCatchStmt *handlerWithoutReset(const Stmt *Gen,
                                        llvm::ArrayRef<const Stmt *> Kills,
                                        const CfgReachability &Cfg) {
  const StmtParents &Parents = Cfg.parents();
  llvm::SmallVector<const CXXTryStmt *, 2> Tries;
  if (const CXXTryStmt *Try = enclosingTry(Gen, Parents))
    Tries.push_back(Try);
  for (const Stmt *Kill : Kills)
    if (const CXXTryStmt *Try = enclosingTry(Kill, Parents))
      Tries.push_back(Try);
  for (const CXXTryStmt *Try : Tries)
    for (unsigned I = 0; I < Try->getNumHandlers(); ++I) {
      const CXXCatchStmt *Handler = Try->getHandler(I);
      if (llvm::none_of(Kills, [&](const Stmt *Kill) {
            return Parents.isInside(Kill, Handler);
          }))
        return Handler;
    }
  return nullptr;
}

} // namespace

bool AmbientDevice::isSourceGuard(const VarDecl *Var) const {
  // A guard passed by reference: the function runs inside its scope.
  if (const auto *Param = dyn_cast<ParmVarDecl>(Var))
    return Guards.isMetaGuardParameter(Param);
  // A local guard variable; a holder of a DeviceScope is meta where a meta
  // guard engages it.
  if (!Var->hasLocalStorage())
    return false;
  std::optional<DeviceKind> Kind = Guards.classify(Var);
  return Kind && (*Kind == DeviceKind::Meta || Guards.isGuardHolder(Var));
}

const Expr *AmbientDevice::matchedCall(
    const ast_matchers::MatchFinder::MatchResult &Result) {
  if (const CXXConstructExpr *Construct = UserCodeMatchers::construct(Result))
    return Construct;
  const CallExpr *Call = UserCodeMatchers::call(Result);
  const FunctionDecl *Callee = UserCodeMatchers::callee(Result);
  if (!Call || !Callee)
    return nullptr;
  // A function of the user's (not a setter), or std::make_unique<Session>()
  // and kin, which run the user's constructor from a system header.
  const SourceManager &SM = *Result.SourceManager;
  if (OwningFactories::isOwningFactory(Callee) ||
      OwningFactories::isOptionalEmplace(Callee) ||
      !SM.isInSystemHeader(SM.getExpansionLoc(Callee->getBeginLoc())))
    return Call;
  return nullptr;
}

llvm::SmallVector<EnclosingFunction, 2> AmbientDevice::functionsWithSource(
    const ast_matchers::MatchFinder::MatchResult &Result, SummaryTable &Table) {
  ASTContext &Context = *Result.Context;
  llvm::SmallVector<EnclosingFunction, 2> Found;
  if (const VarDecl *Var = UserCodeMatchers::var(Result)) {
    if (isSourceGuard(Var))
      Found.push_back(Functions.enclosing(Var, Context));
    return Found;
  }
  const CallExpr *Call = UserCodeMatchers::call(Result);
  const FunctionDecl *Callee = UserCodeMatchers::callee(Result);
  if (Call && isSetter(Callee)) {
    if (Call->getNumArgs() > 0 &&
        classifyDeviceExpr(Call->getArg(0), Context) == DeviceKind::Meta)
      Found.push_back(Functions.enclosing(Call, Context));
    return Found;
  }
  // A helper or constructor that may leave the default device meta: any
  // function the call may run, an override of a virtual one too.
  if (const Expr *Helper = matchedCall(Result);
      Helper && canEnter(calledFunction(Helper))) {
    std::optional<HelperEffect> Effect = helperEffect(Helper, Table);
    if (Effect && Effect->Meta)
      Found.push_back(Functions.enclosing(Helper, Context));
  }
  if (Call && isScopeFunction(Callee)) {
    // The lambdas it runs are meta throughout; other callables are followed
    // from the enclosing function.
    for (const Expr *Arg : Call->arguments())
      if (const auto *Lambda = lambdaOfCallable(Arg))
        if (Lambda->IgnoreImplicit() ==
            Arg->IgnoreImplicit()->IgnoreParenImpCasts())
          Found.push_back({Lambda->getCallOperator(), Lambda});
    Found.push_back(Functions.enclosing(Call, Context));
  }
  return Found;
}

bool AmbientDevice::isSetter(const FunctionDecl *FD) const {
  return FD && Setters.matches(FD);
}

bool AmbientDevice::isScopeFunction(const FunctionDecl *FD) const {
  return FD && ScopeFunctions.matches(FD);
}

bool AmbientDevice::isMachinery(const FunctionDecl *FD) const {
  if (!FD)
    return true;
  if (isSetter(FD) || isScopeFunction(FD) || Loaders.isLoader(FD))
    return true;
  if (const auto *Method = dyn_cast<CXXMethodDecl>(FD))
    if (Guards.isGuardClass(Method->getParent()))
      return true;
  return false;
}

bool AmbientDevice::isInsideMachinery(const FunctionDecl *FD) const {
  return anyEnclosingFunction(
      FD, [this](const FunctionDecl *F) { return isMachinery(F); });
}

bool AmbientDevice::isInsideLoader(const FunctionDecl *FD) const {
  return anyEnclosingFunction(
      FD, [this](const FunctionDecl *F) { return Loaders.isLoader(F); });
}

std::optional<LiveGuard> AmbientDevice::liveGuardAt(const Stmt *S,
                                                    const FunctionDecl *F,
                                                    ASTContext &Context) {
  const Stmt *Body = F->getBody();
  const Stmt *At = S;
  // A guard held in a std::optional or std::unique_ptr counts where it is
  // engaged on some path; where it is not, the scope outside it decides.
  for (unsigned Steps = 0; At && Steps < ambient_limits::NestedGuardHolders;
       ++Steps) {
    std::optional<LiveGuard> Guard = LiveGuards.innermost(At, Body);
    if (!Guard)
      break;
    if (!Guard->Holder)
      return Guard;
    const CfgReachability *Cfg = Cfgs.get(F, Body, Context);
    if (std::optional<DeviceKind> Kind =
            Cfg ? guardHolderEngagedAt(*Guard, S, F, *Cfg) : std::nullopt) {
      Guard->Kind = *Kind;
      return Guard;
    }
    At = Guard->DeclaredBy;
  }
  // A guard passed in by reference is live for the whole call.
  for (const ParmVarDecl *Param : F->parameters())
    if (Guards.isMetaGuardParameter(Param))
      return LiveGuard{Param, DeviceKind::Meta};
  return std::nullopt;
}

void AmbientDevice::clear() {
  Cfgs.clear();
  LiveGuards.clear();
  Functions.clear();
  Guards.clearCache();
  Destructions.clear();
  Owning.clear();
}

std::optional<AmbientDevice::Origin>
AmbientDevice::lambdaOrigin(const LambdaExpr *Lambda, ASTContext &Context) {
  // Climb from the lambda through conversions to the call it is an
  // argument of.
  Functions.enclosing(Lambda, Context); // Indexes the code around it.
  const Stmt *Node = Lambda;
  for (unsigned Steps = 0; Steps < ambient_limits::LambdaToCall; ++Steps) {
    Node = Functions.parents().parent(Node);
    if (!Node)
      return std::nullopt;
    if (const auto *Call = dyn_cast<CallExpr>(Node)) {
      if (isScopeFunction(Call->getDirectCallee()) ||
          (!Call->getDirectCallee() &&
           ScopeFunctions.matchesUnresolved(unresolvedCalleeName(Call))))
        return Origin{Source::ScopeFunction, nullptr, Call, {}, {}};
      return std::nullopt;
    }
    if (!isa<ImplicitCastExpr, MaterializeTemporaryExpr, CXXBindTemporaryExpr,
             CXXConstructExpr, ParenExpr>(Node))
      return std::nullopt;
  }
  return std::nullopt;
}

AmbientDevice::InFunction AmbientDevice::inFunction(const FunctionDecl *F,
                                                    const LambdaExpr *Lambda,
                                                    SummaryTable &Table,
                                                    ASTContext &Context) {
  std::optional<Origin> Top;
  if (Lambda)
    Top = lambdaOrigin(Lambda, Context);
  return InFunction(*this, F, Top, Table, Context);
}

AmbientDevice::InFunction::InFunction(AmbientDevice &Ambient,
                                      const FunctionDecl *F,
                                      std::optional<Origin> Top,
                                      SummaryTable &Table, ASTContext &Context)
    : Ambient(Ambient), F(F), Top(std::move(Top)), Table(Table),
      Context(Context), Calls(collectCalls(F)),
      Events(Ambient.deviceEvents(F, Calls, Table)) {
  if (!Events.Gens.empty())
    Cfg = Ambient.Cfgs.get(F, F->getBody(), Context);
}

std::optional<AmbientDevice::Origin>
AmbientDevice::InFunction::at(const Expr *Call) {
  if (std::optional<LiveGuard> Guard = Ambient.liveGuardAt(Call, F, Context)) {
    // The innermost scope wins, whatever its device.
    if (Guard->Kind != DeviceKind::Meta)
      return std::nullopt;
    return Origin{Source::ScopeGuard, Guard->Var, nullptr, {}, {}};
  }
  if (Top)
    return Top;
  return defaultDeviceAt(Call);
}

std::optional<AmbientDevice::Origin>
AmbientDevice::InFunction::defaultDeviceAt(const Expr *Call) {
  if (!Cfg)
    return std::nullopt;
  // An exception may leave a try block before the reset in it, and the
  // handler it lands in may not reset the device either.
  std::optional<CfgReachability::Reach> Reach = Cfg->findReachingGen(
      Call, Events.Gens, Events.Kills,
      /*EntryIsGen=*/false, Events.Ended, CfgReachability::Paths::WithHandlers);
  if (!Reach || !Reach->Gen)
    return std::nullopt;
  Origin O{Source::DefaultDevice, nullptr, Reach->Gen, {}, {}};
  if (!Cfg->findReachingGen(Call, Events.Gens, Events.Kills,
                            /*EntryIsGen=*/false, Events.Ended))
    O.Handler = handlerWithoutReset(Reach->Gen, Events.Kills, *Cfg);
  if (auto It = Events.Helpers.find(Reach->Gen); It != Events.Helpers.end()) {
    O.Helper = It->second.Target;
    O.InnerSetter = Table.locationOf(It->second.At);
    O.UntilDestroyed = llvm::is_contained(Events.Ended, Reach->Gen) ||
                       llvm::is_contained(Events.Held, Reach->Gen);
    O.MetaArgument = It->second.MetaArgument;
    O.Parameter = It->second.Parameter;
  }
  // A call between the setter and Call that ends the state through some of
  // its targets only: the target that keeps it is part of the story.
  for (const auto &[Partial, KeptBy] : Events.KeptBy) {
    std::optional<CfgReachability::Reach> ToCall = Cfg->findReachingGen(
        Call, {Partial}, Events.Kills, false, Events.Ended);
    if (!ToCall || ToCall->Gen != Partial ||
        !Cfg->findReachingGen(Partial, {Reach->Gen}, Events.Kills, false,
                              Events.Ended))
      continue;
    O.KeptAt = Partial;
    O.KeptBy = KeptBy;
    break;
  }
  return O;
}

} // namespace clang::tidy::metaguard