//===--- AmbientDeviceSetters.cpp - metaguard-tidy -------------*- C++ -*-===//
//
// The default device, for AmbientDevice: setter calls, and the helpers,
// constructors and RAII sessions that leave it meta (their DeviceFacts, the
// facet AmbientDevice holds), with where a session's meta state ends.
//
//===----------------------------------------------------------------------===//

#include "utils/ClangCompat.h"
#include "utils/analysis/ExprPlumbing.h"
#include "utils/analysis/FunctionBodies.h"
#include "utils/analysis/LocalVariables.h"
#include "utils/analysis/NameList.h"
#include "utils/analysis/UserCodeMatchers.h"
#include "utils/domain/AmbientDevice.h"
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

/// The argument of Call for the callee's parameter Index (a default
/// argument the call leaves out included), or nullptr.
const Expr *callArgument(const Expr *Call, unsigned Index) {
  if (const auto *Construct = dyn_cast<CXXConstructExpr>(Call))
    return Index < Construct->getNumArgs() ? Construct->getArg(Index) : nullptr;
  const auto *CE = dyn_cast<CallExpr>(Call);
  if (!CE)
    return nullptr;
  // An overloaded operator that is a method has its object as argument 0.
  if (isa<CXXOperatorCallExpr>(CE) &&
      isa_and_nonnull<CXXMethodDecl>(CE->getDirectCallee()))
    ++Index;
  return Index < CE->getNumArgs() ? CE->getArg(Index) : nullptr;
}

/// The name of the callee's parameter Index, for notes.
std::string parameterName(const Expr *Call, unsigned Index) {
  const FunctionDecl *Callee = calledFunction(Call);
  if (const auto *Construct = dyn_cast<CXXConstructExpr>(Call))
    Callee = Construct->getConstructor();
  if (!Callee || Index >= Callee->getNumParams())
    return "";
  return Callee->getParamDecl(Index)->getNameAsString();
}

} // namespace

std::optional<AmbientDevice::HelperEffect>
AmbientDevice::helperEffect(const Expr *Call, SummaryTable &Table,
                            std::string *KeptBy, const FunctionDecl *Caller) {
  // std::make_unique<Session>() runs the user's constructor inside a system
  // header: that constructor decides, with the arguments the factory is
  // given (it passes them on).
  const Expr *Factory = nullptr;
  if (const CXXConstructExpr *Inner = Owning.construction(Call)) {
    Factory = Call;
    Call = Inner;
  }
  auto ArgumentFor = [&](unsigned Index) -> const Expr * {
    if (Factory)
      if (const Expr *Given =
              OwningFactories::forwardedArgument(Factory, Index))
        return Given;
    return callArgument(Call, Index);
  };
  std::optional<HelperEffect> Result;
  bool EveryTargetEnds = true;
  // Whether the call is done: a target that may leave the default device
  // meta decides; Name is only spelled for the target that decides.
  std::string Keeper;
  const ParmVarDecl *Forwarded = nullptr;
  SourceRef ForwardedAt;
  auto Visit = [&](const FunctionSummary *S, auto Name) {
    const DeviceFacts *D = S ? &S->get<DeviceFacts>() : nullptr;
    if (!D || D->DefaultDevice == DeviceAtReturn::Unchanged) {
      if (EveryTargetEnds)
        Keeper = Name();
      EveryTargetEnds = false;
      return false;
    }
    // A target that sets the device its parameter gives: the argument of
    // this call (its default argument when it is left out) decides.
    if (const Expr *Arg = D->DefaultDeviceParam == DeviceFacts::NoParam
                              ? nullptr
                              : ArgumentFor(D->DefaultDeviceParam)) {
      if (classifyDeviceExpr(Arg, Table.context()) == DeviceKind::Meta) {
        Result = HelperEffect{true, false, Name(), D->DefaultDeviceParamAt};
        Result->MetaArgument = Arg;
        Result->Parameter = parameterName(Call, D->DefaultDeviceParam);
        return true;
      }
      if (const ParmVarDecl *P = deviceParameter(Arg, Caller);
          P && !Forwarded) {
        Forwarded = P;
        ForwardedAt = D->DefaultDeviceParamAt;
      }
    }
    if (D->DefaultDevice == DeviceAtReturn::Meta) {
      Result = HelperEffect{true, false, Name(), D->DefaultDeviceAt};
      return true;
    }
    if (!Result)
      Result = HelperEffect{false, false, Name(), D->DefaultDeviceAt};
    Result->Unknown |= D->DefaultDevice == DeviceAtReturn::Unknown;
    return false;
  };
  // Every function the call may run: the targets declared here, then the
  // overrides only other translation units define.
  for (const FunctionDecl *Target : Table.callTargets(Call)) {
    // A pure virtual method without a body never runs: a virtual call
    // dispatches to an override.
    if (const auto *Method = dyn_cast<CXXMethodDecl>(Target);
        Method && compat::isPureVirtual(Method) && !definitionWithBody(Method))
      continue;
    if (Visit(Table.lookup<DeviceFacts>(Target),
              [Target] { return displayName(Target); }))
      return Result;
  }
  for (const FunctionSummary *S : Table.externalTargets(Call))
    if (Visit(S, [S] { return S->Name; }))
      return Result;
  if (!EveryTargetEnds) {
    // Some target ends the state and another keeps it: the one that keeps
    // it is why the call does not end it.
    if (KeptBy && Result)
      *KeptBy = Keeper;
    return std::nullopt;
  }
  if (Result && Forwarded) {
    Result->Forwarded = Forwarded;
    Result->ForwardedAt = ForwardedAt;
  }
  return Result;
}

/// The session among Sessions that Value (what a holder is given) builds:
/// the value itself, through temporaries, casts, `new` and the holder's own
/// construction from it (`std::unique_ptr<S>(new S(...))`); or nullptr.
static const Expr *
sessionIn(const Expr *Value,
          const llvm::SmallPtrSetImpl<const Expr *> &Sessions) {
  ExprPlumbing Through;
  Through.Copies = ExprPlumbing::CopyMoves::Keep;
  for (unsigned Steps = 0; Value && Steps < ambient_limits::SessionPlumbing;
       ++Steps) {
    if (Sessions.count(Value))
      return Value;
    const Expr *Bare = ignoreExprPlumbing(Value, Through);
    if (Bare != Value) {
      Value = Bare;
      continue;
    }
    if (const auto *New = dyn_cast<CXXNewExpr>(Value))
      Value = New->getConstructExpr();
    else if (const auto *Construct = dyn_cast<CXXConstructExpr>(Value);
             Construct && Construct->getNumArgs() == 1)
      Value = Construct->getArg(0);
    else
      return nullptr;
  }
  return nullptr;
}

void AmbientDevice::addHeldSessionEnds(const FunctionDecl *F,
                                       DeviceEvents &Events) {
  // A session put into a local holder (an emplace, std::in_place, an
  // assignment, reset(new ...), `new` for a raw pointer) lives until the
  // holder lets it go (HolderEvents) or ends: those end its meta state as
  // its destruction does. A temporary moved into the holder hands it over:
  // its own end does not count.
  if (Events.Ended.empty())
    return;
  llvm::SmallPtrSet<const Expr *, 4> Sessions(Events.Ended.begin(),
                                              Events.Ended.end());
  llvm::SmallPtrSet<const Expr *, 4> Held;
  llvm::SmallVector<const VarDecl *, 2> Holders;
  llvm::SmallVector<std::pair<const VarDecl *, const Stmt *>, 2> Empties;
  // Where a holder is given a session, and whether that replaces what it
  // holds (an assignment, reset(p); not an emplace, which destroys the old
  // one before it builds the new one, nor an initialiser).
  struct Engaged {
    const VarDecl *Holder;
    const Stmt *At;
    bool Replaces;
  };
  llvm::SmallVector<Engaged, 2> Engages;
  auto Hold = [&](const VarDecl *Holder, const Expr *Value, const Stmt *At,
                  bool Replaces) {
    // Containers of sessions are not followed (the library builds them).
    HolderKind Kind = holderKind(Holder->getType());
    if (Kind == HolderKind::Container)
      return;
    // A raw pointer given a new object does not delete the old one.
    Replaces &= Kind != HolderKind::RawPointer;
    if (const Expr *Session = sessionIn(Value, Sessions)) {
      Held.insert(Session);
      Engages.push_back({Holder, At, Replaces});
      if (!llvm::is_contained(Holders, Holder))
        Holders.push_back(Holder);
    }
  };
  forEachEvaluatedStmt(F, [&](const Stmt *S) {
    if (const auto *Decls = dyn_cast<DeclStmt>(S)) {
      for (const Decl *D : Decls->decls())
        if (const auto *Var = dyn_cast<VarDecl>(D);
            Var && Var->hasLocalStorage() &&
            !Var->getType()->isReferenceType() &&
            holderKind(Var->getType()) != HolderKind::None)
          Hold(Var, Var->getInit(), Var->getInit(), false);
      return;
    }
    std::optional<HolderEvent> Event = holderEvent(S);
    if (!Event)
      return;
    if (Event->What == HolderEvent::Empties)
      Empties.emplace_back(Event->Holder, S);
    else if (Event->Value)
      Hold(Event->Holder, Event->Value, S, true);
    else
      Hold(Event->Holder, cast<Expr>(S), S, false);
  });
  if (Holders.empty())
    return;
  llvm::erase_if(Events.Ended, [&](const Expr *E) { return Held.count(E); });
  Events.Held.append(Held.begin(), Held.end());
  for (const VarDecl *Holder : Holders)
    if (holderKind(Holder->getType()) != HolderKind::RawPointer)
      if (const auto *Init = dyn_cast_or_null<Expr>(Holder->getInit()))
        Events.Ended.push_back(Init);
  for (const auto &[Holder, Empty] : Empties)
    if (llvm::is_contained(Holders, Holder))
      Events.Kills.push_back(Empty);
  // A session put where one may be held already: the old one is destroyed
  // after the new one is built, and its destructor ends the state.
  if (llvm::none_of(Engages, [](const Engaged &E) { return E.Replaces; }))
    return;
  const CfgReachability *Cfg = Cfgs.get(F, F->getBody(), F->getASTContext());
  if (!Cfg)
    return;
  for (const Engaged &E : Engages) {
    if (!E.Replaces)
      continue;
    llvm::SmallVector<const Stmt *, 2> Before, Emptied;
    for (const Engaged &Other : Engages)
      if (Other.Holder == E.Holder)
        Before.push_back(Other.At);
    for (const auto &[Holder, Empty] : Empties)
      if (Holder == E.Holder)
        Emptied.push_back(Empty);
    if (Cfg->findReachingGen(E.At, Before, Emptied))
      Events.Kills.push_back(E.At);
  }
}

AmbientDevice::DeviceEvents
AmbientDevice::deviceEvents(const FunctionDecl *F,
                            llvm::ArrayRef<const Expr *> Calls,
                            SummaryTable &Table) {
  DeviceEvents Events;
  for (const Expr *Call : Calls) {
    const FunctionDecl *Callee = calledFunction(Call);
    if (!Callee)
      continue;
    if (isSetter(Callee)) {
      // A setter without arguments (reset_default_device) ends the state.
      const auto *CE = dyn_cast<CallExpr>(Call);
      DeviceKind Kind =
          CE && CE->getNumArgs() > 0
              ? classifyDeviceExpr(CE->getArg(0), Callee->getASTContext())
              : DeviceKind::NonMeta;
      (Kind == DeviceKind::Meta ? Events.Gens : Events.Kills).push_back(Call);
      Events.UnknownKill |= Kind == DeviceKind::Unknown;
      if (Kind == DeviceKind::Unknown)
        if (const ParmVarDecl *P = deviceParameter(CE->getArg(0), F))
          Events.FromParameters.push_back({Call, P, {}});
      continue;
    }
    if (isMachinery(Callee))
      continue;
    std::string KeptBy;
    std::optional<HelperEffect> Effect = helperEffect(Call, Table, &KeptBy, F);
    if (endsWhenDestroyed(Call, Effect && Effect->Meta, Table))
      Events.Ended.push_back(Call);
    if (!KeptBy.empty())
      Events.KeptBy.emplace_back(Call, KeptBy);
    if (!Effect)
      continue;
    (Effect->Meta ? Events.Gens : Events.Kills).push_back(Call);
    Events.UnknownKill |= Effect->Unknown;
    if (!Effect->Meta && Effect->Forwarded)
      Events.FromParameters.push_back(
          {Call, Effect->Forwarded, Effect->ForwardedAt});
    Events.Helpers[Call] = *Effect;
  }
  addHeldSessionEnds(F, Events);
  return Events;
}

/// DefaultDevice facts: over the function's CFG, how the default device may
/// be when it returns, from its setter calls and the summaries of the user
/// functions it calls.
class AmbientDevice::DeviceFacet : public SummaryFacetFor<DeviceFacts> {
public:
  explicit DeviceFacet(AmbientDevice &Ambient) : Ambient(Ambient) {}

  bool follows(const FunctionDecl *FD) const override {
    // Library code never sets metaguard's default device: staying in user
    // code keeps this facet as cheap as the user's own code.
    return !Ambient.isMachinery(FD) &&
           !FD->getASTContext().getSourceManager().isInSystemHeader(
               FD->getLocation());
  }

  void summarise(const FunctionDecl *F, FunctionSummary &Summary,
                 SummaryTable &Table) override {
    DeviceFacts &Out = Summary.edit<DeviceFacts>();
    // A constructor of an RAII class that holds a meta guard opens a meta
    // scope for the object's life (a fact for export; locals of the class
    // are guards to the check itself).
    if (const auto *Ctor = dyn_cast<CXXConstructorDecl>(F))
      if (Ambient.Guards.isMetaRaiiClass(Ctor->getParent())) {
        Out.OpensMetaScope = true;
        Out.OpensMetaScopeAt = Table.refOf(Ctor->getParent()->getLocation());
      }
    DeviceEvents Events = Ambient.deviceEvents(F, collectCalls(F), Table);
    auto &Gens = Events.Gens;
    auto &Kills = Events.Kills;
    auto &Ended = Events.Ended;
    auto &Helpers = Events.Helpers;
    const bool UnknownKill = Events.UnknownKill;
    if (Gens.empty() && Kills.empty() && Ended.empty())
      return;
    const CfgReachability *Cfg =
        Ambient.Cfgs.get(F, F->getBody(), Table.context());
    if (!Cfg) {
      Out.DefaultDevice = DeviceAtReturn::Unknown;
      return;
    }
    // Objects that outlive F (returned, on the heap) end nothing here.
    llvm::erase_if(Ended, [Cfg](const Expr *E) { return !Cfg->destroys(E); });
    if (!Gens.empty())
      if (std::optional<CfgReachability::Reach> R = Cfg->findReachingGenAtExit(
              Gens, Kills, /*EntryIsGen=*/false, Ended,
              CfgReachability::Paths::WithHandlers);
          R && R->Gen) {
        Out.DefaultDevice = DeviceAtReturn::Meta;
        auto Helper = Helpers.find(R->Gen);
        Out.DefaultDeviceAt = Helper != Helpers.end()
                                  ? Helper->second.At
                                  : Table.refOf(R->Gen->getBeginLoc());
        return;
      }
    summariseParameterDevice(F, Events, *Cfg, Out, Table);
    if (Kills.empty() && Ended.empty())
      return; // Meta settings that never reach the return.
    // A session object's destruction is a reset where its life ends: one
    // that runs on every path makes F restore the default device.
    const bool EveryPath =
        !Cfg->findReachingGenAtExit({}, Kills, /*EntryIsGen=*/true, Ended);
    Out.DefaultDevice = EveryPath && !UnknownKill ? DeviceAtReturn::Restored
                                                  : DeviceAtReturn::Unknown;
    Out.DefaultDeviceAt = Table.refOf(
        (Kills.empty() ? Ended.front() : Kills.front())->getBeginLoc());
  }

private:
  /// Whether F may return with the default device its parameter gave: a
  /// setter (or a helper) given one of F's parameters, that F leaves as
  /// the caller passed it, and no setting after it on some path.
  static void summariseParameterDevice(const FunctionDecl *F,
                                       const DeviceEvents &Events,
                                       const CfgReachability &Cfg,
                                       DeviceFacts &Out, SummaryTable &Table) {
    llvm::SmallVector<const Stmt *, 2> FromParameters;
    for (const ParameterSetting &S : Events.FromParameters)
      if (S.Param->getDeclContext() == F && keepsItsArgument(S.Param))
        FromParameters.push_back(S.Setting);
    if (FromParameters.empty())
      return;
    // Every other setting after it decides instead.
    llvm::SmallVector<const Stmt *, 4> Others(Events.Gens);
    for (const Stmt *Kill : Events.Kills)
      if (!llvm::is_contained(FromParameters, Kill))
        Others.push_back(Kill);
    std::optional<CfgReachability::Reach> R = Cfg.findReachingGenAtExit(
        FromParameters, Others, /*EntryIsGen=*/false, Events.Ended,
        CfgReachability::Paths::WithHandlers);
    if (!R || !R->Gen)
      return;
    for (const ParameterSetting &S : Events.FromParameters)
      if (S.Setting == R->Gen) {
        Out.DefaultDeviceParam = S.Param->getFunctionScopeIndex();
        Out.DefaultDeviceParamAt =
            S.At.valid() ? S.At : Table.refOf(S.Setting->getBeginLoc());
        return;
      }
  }

  AmbientDevice &Ambient;
};

bool AmbientDevice::endsWhenDestroyed(const Expr *Call,
                                      bool ConstructorSetsMeta,
                                      SummaryTable &Table) {
  // A construction here, or one a smart pointer's factory makes (the
  // pointer runs the destructor where its own life ends).
  const CXXRecordDecl *Built = OwningFactories::builtRecord(Call);
  if (const auto *Construct = dyn_cast<CXXConstructExpr>(Call);
      !Built && Construct)
    Built = Construct->getConstructor()->getParent();
  if (!Built)
    return false;
  switch (destructionEffect(Built, Table)) {
  case Destruction::Ends:
    return true;
  case Destruction::Unknown:
    // A session whose destructor is not visible: assume it ends what its
    // constructor started (no finding after its life rather than noise).
    return ConstructorSetsMeta;
  case Destruction::Keeps:
    return false;
  }
  return false;
}

AmbientDevice::Destruction
AmbientDevice::destructionEffect(const CXXRecordDecl *RD, SummaryTable &Table) {
  if (!RD || !RD->hasDefinition())
    return Destruction::Keeps;
  RD = RD->getDefinition();
  auto [It, Inserted] = Destructions.try_emplace(RD, Destruction::Keeps);
  if (!Inserted)
    return It->second; // Known, or being decided (a cycle adds nothing).
  // Library classes never set metaguard's default device (as helpers in
  // system headers); guard classes are scopes, not default-device setters.
  if (Table.context().getSourceManager().isInSystemHeader(RD->getLocation()) ||
      Guards.isGuardClass(RD))
    return Destruction::Keeps;
  Destruction Result = Destruction::Keeps;
  if (const CXXDestructorDecl *Dtor = RD->getDestructor();
      Dtor && Dtor->isUserProvided()) {
    const FunctionSummary *S = Table.lookup<DeviceFacts>(Dtor);
    if (!S)
      Result = Destruction::Unknown;
    else if (S->get<DeviceFacts>().DefaultDevice == DeviceAtReturn::Restored ||
             S->get<DeviceFacts>().DefaultDevice == DeviceAtReturn::Unknown)
      Result = Destruction::Ends;
  }
  // Members and bases are destroyed after the destructor's body.
  auto Merge = [&Result](Destruction D) { Result = std::max(Result, D); };
  for (const FieldDecl *Field : RD->fields())
    if (!Field->getType()->isReferenceType())
      Merge(destructionEffect(Field->getType()->getAsCXXRecordDecl(), Table));
  for (const CXXBaseSpecifier &Base : RD->bases())
    Merge(destructionEffect(Base.getType()->getAsCXXRecordDecl(), Table));
  Destructions[RD] = Result;
  return Result;
}

AmbientDevice::AmbientDevice(llvm::StringRef LoaderFunctions,
                             llvm::StringRef MetaScopeTypes,
                             llvm::StringRef DeviceScopeTypes,
                             llvm::StringRef MetaScopeFunctions,
                             llvm::StringRef DefaultDeviceSetters)
    : LoaderFunctionsOption(LoaderFunctions.str()),
      MetaScopeTypesOption(MetaScopeTypes.str()),
      DeviceScopeTypesOption(DeviceScopeTypes.str()),
      MetaScopeFunctionsOption(MetaScopeFunctions.str()),
      DefaultDeviceSettersOption(DefaultDeviceSetters.str()),
      Loaders(LoaderFunctionsOption),
      Guards(MetaScopeTypesOption, DeviceScopeTypesOption),
      ScopeFunctions(MetaScopeFunctionsOption),
      Setters(DefaultDeviceSettersOption),
      Facet(std::make_unique<DeviceFacet>(*this)) {}

AmbientDevice::~AmbientDevice() = default;

SummaryFacet *AmbientDevice::facet() { return Facet.get(); }

} // namespace clang::tidy::metaguard
