//===--- FromPretrainedInMetaScopeCheck.cpp - metaguard-tidy ---*- C++ -*-===//

#include "FromPretrainedInMetaScopeCheck.h"
#include "utils/DeviceExpr.h"
#include "utils/DeviceFacts.h"
#include "utils/ExplicitOptions.h"
#include "utils/FunctionBodies.h"
#include "utils/LoadFacts.h"
#include "utils/RecordBases.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/ExprCXX.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <algorithm>

using namespace clang::ast_matchers;

namespace clang::tidy::metaguard {

namespace {

constexpr llvm::StringLiteral DefaultMetaScopeFunctions =
    "::metaguard::with_meta_device";
constexpr llvm::StringLiteral DefaultDefaultDeviceSetters =
    "::metaguard::set_default_device;::metaguard::reset_default_device";
/// Loads are followed through calls at any depth by function summaries;
/// CallDepth only caps how many of the user's calls a finding may span.
constexpr unsigned DefaultCallDepth = 64;
/// Inside a loader's own implementation, calls through the standard library
/// and LibTorch (make_shared, module holders, ...) are followed up to this
/// many in a row (libstdc++'s make_shared alone is about ten calls deep).
constexpr unsigned MaxFreeHops = 32;
/// How deep to look inside a loader's own implementation for the place where
/// it builds the model on meta.
constexpr unsigned LoaderBodyDepth = 4;

AST_MATCHER(FunctionDecl, hasLoadsWeightsAnnotationMatcher) {
  return hasLoadsWeightsAnnotation(&Node);
}

AST_MATCHER_P(NamedDecl, nameInList, const NameList *, List) {
  return List->matches(&Node);
}

AST_MATCHER_P(VarDecl, isMetaGuard, const ScopeGuardClassifier *, Guards) {
  std::optional<DeviceKind> Kind = Guards->classify(&Node);
  return Kind && *Kind == DeviceKind::Meta;
}

AST_MATCHER_P(ParmVarDecl, isMetaGuardParameter, const ScopeGuardClassifier *,
              Guards) {
  return Guards->isMetaGuardParameter(&Node);
}

/// How a function is called in messages.
std::string displayName(const FunctionDecl *FD) {
  if (const auto *Method = dyn_cast<CXXMethodDecl>(FD))
    if (Method->getParent()->isLambda())
      return "lambda";
  // Inherited constructors carry the base's name: name the class built.
  if (const auto *Ctor = dyn_cast<CXXConstructorDecl>(FD))
    return qualifiedNameOf(Ctor->getParent()) +
           "::" + Ctor->getParent()->getNameAsString();
  return qualifiedNameOf(FD);
}

/// The rewrite of `metaguard::from_pretrained<M>(dir)` (no LoadOptions) into
/// `metaguard::from_config<M>(metaguard::load_config(dir))`, which builds the
/// same empty model a meta scope gives without trying to load weights. Only a
/// suggestion (a fix-it on a note): the user may instead have meant to move
/// the load out of the scope. Empty when the call is not of that form or is
/// spelled in a macro.
llvm::SmallVector<FixItHint, 3> fromConfigRewrite(const Expr *E,
                                                  const ASTContext &Context) {
  const auto *Call = dyn_cast<CallExpr>(E);
  if (!Call || Call->getNumArgs() == 0)
    return {};
  const FunctionDecl *Callee = Call->getDirectCallee();
  if (!Callee || !Callee->getPrimaryTemplate() ||
      Callee->getQualifiedNameAsString() != "metaguard::from_pretrained")
    return {};
  const auto *Ref = dyn_cast<DeclRefExpr>(Call->getCallee()->IgnoreImplicit());
  if (!Ref || Ref->getNumTemplateArgs() != 1)
    return {};
  for (unsigned I = 1; I < Call->getNumArgs(); ++I)
    if (!isa<CXXDefaultArgExpr>(Call->getArg(I)))
      return {}; // LoadOptions given: from_config has no use for them.
  const Expr *Dir = Call->getArg(0);
  SourceLocation Name = Ref->getNameInfo().getLoc();
  if (Call->getBeginLoc().isMacroID() || Call->getEndLoc().isMacroID() ||
      Name.isMacroID() || Dir->getBeginLoc().isMacroID() ||
      Dir->getEndLoc().isMacroID())
    return {};
  const SourceManager &SM = Context.getSourceManager();
  const LangOptions &LO = Context.getLangOpts();
  // load_config is spelled with the same qualifier as the call, so that a
  // namespace alias keeps working; unqualified calls get the full name.
  std::string Qualifier = "metaguard::";
  if (NestedNameSpecifierLoc QualifierLoc = Ref->getQualifierLoc())
    Qualifier = Lexer::getSourceText(CharSourceRange::getCharRange(
                                         QualifierLoc.getBeginLoc(), Name),
                                     SM, LO)
                    .str();
  SourceLocation AfterDir =
      Lexer::getLocForEndOfToken(Dir->getEndLoc(), 0, SM, LO);
  if (AfterDir.isInvalid())
    return {};
  return {FixItHint::CreateReplacement(CharSourceRange::getTokenRange(Name),
                                       "from_config"),
          FixItHint::CreateInsertion(Dir->getBeginLoc(),
                                     Qualifier + "load_config("),
          FixItHint::CreateInsertion(AfterDir, ")")};
}

/// Calls through std:: and LibTorch internals are plumbing, not user code.
bool isLibraryFunction(const FunctionDecl *FD, const SourceManager &SM) {
  if (SM.isInSystemHeader(FD->getLocation()))
    return true;
  const DeclContext *DC = FD->getDeclContext();
  const NamespaceDecl *Outermost = nullptr;
  for (; DC; DC = DC->getParent())
    if (const auto *NS = dyn_cast<NamespaceDecl>(DC))
      Outermost = NS;
  if (!Outermost || !Outermost->getIdentifier())
    return false;
  llvm::StringRef Name = Outermost->getName();
  return Name == "std" || Name == "torch" || Name == "c10" || Name == "at" ||
         Name == "metaguard";
}

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

/// Calls that are plumbing between user functions and do not count towards
/// CallDepth.
bool isFreeHop(const FunctionDecl *FD, const SourceManager &SM) {
  return isLibraryFunction(FD, SM) || isHolderConstructor(FD) ||
         FD->isImplicit();
}

} // namespace

namespace {

/// What a call to a helper (any function it may run) does to the default
/// device: Meta when some target may leave it meta (At: the setter), else an
/// end of the state when every target restores it or sets an unknown device.
struct HelperEffect {
  bool Meta = false;
  bool Unknown = false;
  std::string Target; ///< The target that decides, for notes.
  SourceRef At;
};

std::optional<HelperEffect> defaultDeviceEffect(const Expr *Call,
                                                SummaryTable &Table,
                                                OwningFactories &Owning) {
  // std::make_unique<Session>() runs the user's constructor inside a system
  // header: that constructor decides.
  if (const CXXConstructExpr *Inner = Owning.construction(Call))
    Call = Inner;
  std::optional<HelperEffect> Result;
  bool EveryTargetEnds = true;
  // Whether the call is done: a target that may leave the default device
  // meta decides; Name is only spelled for the target that decides.
  auto Visit = [&](const FunctionSummary *S, auto Name) {
    const DeviceFacts *D = S ? &S->get<DeviceFacts>() : nullptr;
    if (!D || D->DefaultDevice == DeviceAtReturn::Unchanged) {
      EveryTargetEnds = false;
      return false;
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
  for (const FunctionDecl *Target : Table.callTargets(Call))
    if (Visit(Table.lookup<DeviceFacts>(Target),
              [Target] { return displayName(Target); }))
      return Result;
  for (const FunctionSummary *S : Table.externalTargets(Call))
    if (Visit(S, [S] { return S->Name; }))
      return Result;
  if (!EveryTargetEnds)
    return std::nullopt;
  return Result;
}

} // namespace

/// How a function's own calls change the default device.
struct FromPretrainedInMetaScopeCheck::DeviceEvents {
  /// Setter calls and helpers that may leave it meta.
  llvm::SmallVector<const Stmt *, 4> Gens;
  /// Setter calls and helpers that end it (a reset, another device, or one
  /// not known).
  llvm::SmallVector<const Stmt *, 4> Kills;
  /// Constructions whose object's destruction ends it (RAII sessions).
  llvm::SmallVector<const Expr *, 2> Ended;
  /// The helper behind each gen or kill that is not a setter call.
  llvm::DenseMap<const Stmt *, HelperEffect> Helpers;
  bool UnknownKill = false; ///< A kill sets a device that is not known.
};

FromPretrainedInMetaScopeCheck::DeviceEvents
FromPretrainedInMetaScopeCheck::deviceEvents(llvm::ArrayRef<const Expr *> Calls,
                                             SummaryTable &Table) {
  DeviceEvents Events;
  for (const Expr *Call : Calls) {
    const FunctionDecl *Callee = calledFunction(Call);
    if (!Callee)
      continue;
    if (isSetter(Callee)) {
      // A setter without arguments (reset_default_device) ends the state.
      const auto *CE = dyn_cast<CallExpr>(Call);
      DeviceKind Kind = CE && CE->getNumArgs() > 0
                            ? classifyDeviceExpr(CE->getArg(0))
                            : DeviceKind::NonMeta;
      (Kind == DeviceKind::Meta ? Events.Gens : Events.Kills).push_back(Call);
      Events.UnknownKill |= Kind == DeviceKind::Unknown;
      continue;
    }
    if (isMachinery(Callee))
      continue;
    std::optional<HelperEffect> Effect =
        defaultDeviceEffect(Call, Table, Owning);
    if (endsWhenDestroyed(Call, Effect && Effect->Meta, Table))
      Events.Ended.push_back(Call);
    if (!Effect)
      continue;
    (Effect->Meta ? Events.Gens : Events.Kills).push_back(Call);
    Events.UnknownKill |= Effect->Unknown;
    Events.Helpers[Call] = *Effect;
  }
  return Events;
}

/// DefaultDevice facts: over the function's CFG, how the default device may
/// be when it returns, from its setter calls and the summaries of the user
/// functions it calls.
class FromPretrainedInMetaScopeCheck::DefaultDeviceFacet
    : public SummaryFacetFor<DeviceFacts> {
public:
  explicit DefaultDeviceFacet(FromPretrainedInMetaScopeCheck &Check)
      : Check(Check) {}

  bool follows(const FunctionDecl *FD) const override {
    // Library code never sets metaguard's default device: staying in user
    // code keeps this facet as cheap as the user's own code.
    return !Check.isMachinery(FD) &&
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
      if (Check.Guards.isMetaRaiiClass(Ctor->getParent())) {
        Out.OpensMetaScope = true;
        Out.OpensMetaScopeAt = Table.refOf(Ctor->getParent()->getLocation());
      }
    DeviceEvents Events = Check.deviceEvents(collectCalls(F), Table);
    auto &[Gens, Kills, Ended, Helpers, UnknownKill] = Events;
    if (Gens.empty() && Kills.empty() && Ended.empty())
      return;
    const CfgReachability *Cfg =
        Check.Cfgs.get(F, F->getBody(), Table.context());
    if (!Cfg) {
      Out.DefaultDevice = DeviceAtReturn::Unknown;
      return;
    }
    // Objects that outlive F (returned, on the heap) end nothing here.
    llvm::erase_if(Ended, [Cfg](const Expr *E) { return !Cfg->destroys(E); });
    if (!Gens.empty())
      if (std::optional<CfgReachability::Reach> R = Cfg->findReachingGenAtExit(
              Gens, Kills, /*EntryIsGen=*/false, Ended);
          R && R->Gen) {
        Out.DefaultDevice = DeviceAtReturn::Meta;
        auto Helper = Helpers.find(R->Gen);
        Out.DefaultDeviceAt = Helper != Helpers.end()
                                  ? Helper->second.At
                                  : Table.refOf(R->Gen->getBeginLoc());
        return;
      }
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
  FromPretrainedInMetaScopeCheck &Check;
};

/// Loads facts: whether calling the function loads weights with the caller's
/// ambient device (no scope of its own around the load, no device map), at
/// any depth, and whether the caller's default device reaches that load.
class FromPretrainedInMetaScopeCheck::LoadsFacet
    : public SummaryFacetFor<LoadFacts> {
public:
  explicit LoadsFacet(FromPretrainedInMetaScopeCheck &Check) : Check(Check) {}

  bool follows(const FunctionDecl *FD) const override {
    return !Check.isMachinery(FD);
  }

  void summarise(const FunctionDecl *F, FunctionSummary &Summary,
                 SummaryTable &Table) override {
    LoadFacts &Out = Summary.edit<LoadFacts>();
    ASTContext &Context = Table.context();
    const SourceManager &SM = Context.getSourceManager();
    const std::vector<const Expr *> Calls = collectCalls(F);
    // What sets the default device inside F: a load after it on every path
    // is out of reach of the caller's default device.
    llvm::SmallVector<const Stmt *, 4> Setters;
    for (const Expr *Call : Calls) {
      const FunctionDecl *Callee = calledFunction(Call);
      if (Check.isSetter(Callee)) {
        Setters.push_back(Call);
      } else if (Callee && !Check.isMachinery(Callee) &&
                 defaultDeviceEffect(Call, Table, Check.Owning)) {
        Setters.push_back(Call);
      }
    }
    bool Found = false, FoundToDefault = false;
    for (const Expr *Call : Calls) {
      const FunctionDecl *Callee = calledFunction(Call);
      std::optional<std::string> LoaderName =
          Check.Loaders.loaderCallName(Call);
      const LoadFacts *S = nullptr;
      if (!LoaderName) {
        if (!Callee || Check.isMachinery(Callee))
          continue;
        // Any function the call may run (overrides of a virtual one too,
        // also those only other translation units define).
        for (const FunctionDecl *Target : Table.callTargets(Call)) {
          const FunctionSummary *TS = Check.isMachinery(Target)
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
      // A scope of the function's own decides the device there.
      if (Check.liveGuardAt(Call, F, Context))
        continue;
      if (LoaderName && Check.hasDeviceMap(Call, F, Context))
        continue;
      bool ToDefault = LoaderName || !S->LoadsOnlyAfterSettingDevice;
      if (ToDefault && !Setters.empty()) {
        const CfgReachability *Cfg = Check.Cfgs.get(F, F->getBody(), Context);
        ToDefault = Cfg && Cfg->reachableFromEntry(Call, Setters);
      }
      const unsigned Depth =
          LoaderName
              ? 0
              : S->LoadsDepth + (Callee && isFreeHop(Callee, SM) ? 0 : 1);
      // Keep one load for the notes: one the caller's default device
      // reaches if any, then the shallowest.
      const bool Better =
          !Found || (ToDefault && !FoundToDefault) ||
          (ToDefault == FoundToDefault && Depth < Out.LoadsDepth);
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
    }
    Out.LoadsWeights = Found;
    Out.LoadsOnlyAfterSettingDevice = Found && !FoundToDefault;
  }

private:
  FromPretrainedInMetaScopeCheck &Check;
};

FromPretrainedInMetaScopeCheck::FromPretrainedInMetaScopeCheck(
    llvm::StringRef Name, ClangTidyContext *Context)
    : ClangTidyCheck(Name, Context),
      LoaderFunctionsOption(
          std::string(Options.get("LoaderFunctions", DefaultLoaderFunctions))),
      MetaScopeTypesOption(
          std::string(Options.get("MetaScopeTypes", DefaultMetaScopeTypes))),
      DeviceScopeTypesOption(std::string(
          Options.get("DeviceScopeTypes", DefaultDeviceScopeTypes))),
      MetaScopeFunctionsOption(std::string(
          Options.get("MetaScopeFunctions", DefaultMetaScopeFunctions))),
      DefaultDeviceSettersOption(std::string(
          Options.get("DefaultDeviceSetters", DefaultDefaultDeviceSetters))),
      CallDepth(Options.get("CallDepth", DefaultCallDepth)),
      Loaders(LoaderFunctionsOption),
      Guards(MetaScopeTypesOption, DeviceScopeTypesOption),
      ScopeFunctions(MetaScopeFunctionsOption),
      Setters(DefaultDeviceSettersOption),
      DeviceFacetImpl(std::make_unique<DefaultDeviceFacet>(*this)),
      LoadsFacetImpl(std::make_unique<LoadsFacet>(*this)),
      Facts(Name, Options) {}

FromPretrainedInMetaScopeCheck::~FromPretrainedInMetaScopeCheck() = default;

void FromPretrainedInMetaScopeCheck::storeOptions(
    ClangTidyOptions::OptionMap &Opts) {
  Options.store(Opts, "LoaderFunctions", LoaderFunctionsOption);
  Options.store(Opts, "MetaScopeTypes", MetaScopeTypesOption);
  Options.store(Opts, "DeviceScopeTypes", DeviceScopeTypesOption);
  Options.store(Opts, "MetaScopeFunctions", MetaScopeFunctionsOption);
  Options.store(Opts, "DefaultDeviceSetters", DefaultDeviceSettersOption);
  Options.store(Opts, "CallDepth", CallDepth);
  Facts.storeOptions(Options, Opts);
}

void FromPretrainedInMetaScopeCheck::registerMatchers(MatchFinder *Finder) {
  Facts.registerMatchers(Finder);
  // Every function with a source of meta state is analysed once: a local
  // guard variable, a default-device setter call, or a scope-function call.
  // Only code outside system headers: LibTorch's and the standard library's
  // own code is never where the mistake is written.
  Finder->addMatcher(varDecl(hasLocalStorage(), unless(parmVarDecl()),
                             unless(isExpansionInSystemHeader()),
                             isMetaGuard(&Guards))
                         .bind("guard"),
                     this);
  // A guard passed by reference: the function runs inside its scope.
  Finder->addMatcher(parmVarDecl(unless(isExpansionInSystemHeader()),
                                 isMetaGuardParameter(&Guards))
                         .bind("guard"),
                     this);
  // A call to a function of the user's that may leave the default device
  // meta (decided from its summary in check()), constructors included.
  Finder->addMatcher(
      callExpr(unless(isExpansionInSystemHeader()),
               callee(functionDecl(unless(isExpansionInSystemHeader()),
                                   unless(nameInList(&Setters)))))
          .bind("helper-call"),
      this);
  Finder->addMatcher(cxxConstructExpr(unless(isExpansionInSystemHeader()),
                                      hasDeclaration(cxxConstructorDecl(
                                          unless(isExpansionInSystemHeader()))))
                         .bind("helper-call"),
                     this);
  // std::make_unique<Session>() and kin run the user's constructor from a
  // system header.
  Finder->addMatcher(callExpr(unless(isExpansionInSystemHeader()),
                              callee(functionDecl(hasAnyName(
                                  "::std::make_unique", "::std::make_shared",
                                  "::std::allocate_shared"))))
                         .bind("helper-call"),
                     this);
  Finder->addMatcher(callExpr(unless(isExpansionInSystemHeader()),
                              callee(functionDecl(nameInList(&Setters))))
                         .bind("setter"),
                     this);
  Finder->addMatcher(callExpr(unless(isExpansionInSystemHeader()),
                              callee(functionDecl(nameInList(&ScopeFunctions))))
                         .bind("scope-call"),
                     this);
  // Loaders whose implementation is visible: do they build the model on
  // meta in a way that makes the model's own nested loads run there?
  Finder->addMatcher(
      callExpr(unless(isExpansionInSystemHeader()),
               callee(functionDecl(anyOf(nameInList(&Loaders.names()),
                                         hasLoadsWeightsAnnotationMatcher()))))
          .bind("loader-call"),
      this);
}

void FromPretrainedInMetaScopeCheck::check(
    const MatchFinder::MatchResult &Result) {
  ASTContext &Context = *Result.Context;
  if (const auto *Var = Result.Nodes.getNodeAs<VarDecl>("guard")) {
    EnclosingFunction Fn = Functions.enclosing(Var, Context);
    analyzeFunction(Fn.Function, Fn.Lambda, Context);
    return;
  }
  if (const auto *Call = Result.Nodes.getNodeAs<Expr>("helper-call")) {
    if (!canEnter(calledFunction(Call)))
      return;
    // Any function the call may run: an override of a virtual one too.
    std::optional<HelperEffect> Effect =
        defaultDeviceEffect(Call, summaries(Context), Owning);
    if (!Effect || !Effect->Meta)
      return;
    EnclosingFunction Fn = Functions.enclosing(Call, Context);
    analyzeFunction(Fn.Function, Fn.Lambda, Context);
    return;
  }
  if (const auto *Call = Result.Nodes.getNodeAs<CallExpr>("setter")) {
    if (Call->getNumArgs() == 0 ||
        classifyDeviceExpr(Call->getArg(0)) != DeviceKind::Meta)
      return;
    EnclosingFunction Fn = Functions.enclosing(Call, Context);
    analyzeFunction(Fn.Function, Fn.Lambda, Context);
    return;
  }
  if (const auto *Call = Result.Nodes.getNodeAs<CallExpr>("loader-call")) {
    checkLoaderBuildsOnMeta(Call, Context);
    return;
  }
  if (const auto *Call = Result.Nodes.getNodeAs<CallExpr>("scope-call")) {
    // The lambdas it runs are meta throughout; other callables are followed
    // from the enclosing function.
    for (const Expr *Arg : Call->arguments())
      if (const auto *Lambda = lambdaOfCallable(Arg))
        if (Lambda->IgnoreImplicit() ==
            Arg->IgnoreImplicit()->IgnoreParenImpCasts())
          analyzeFunction(Lambda->getCallOperator(), Lambda, Context);
    EnclosingFunction Fn = Functions.enclosing(Call, Context);
    analyzeFunction(Fn.Function, Fn.Lambda, Context);
  }
}

void FromPretrainedInMetaScopeCheck::onEndOfTranslationUnit() {
  Facts.exportTable(
      [this](ASTContext &Context) -> SummaryTable & {
        return summaries(Context);
      },
      {&facetKind<DeviceFacts>(), &facetKind<LoadFacts>(),
       &facetKind<OptionsFacts>()});
  Cfgs.clear();
  LiveGuards.clear();
  Functions.clear();
  Analyzed.clear();
  Reported.clear();
  Summaries.reset();
  OptionsFacetImpl.clear();
  Guards.clearCache();
  WithinMemo.clear();
  WithinInProgress.clear();
  Destructions.clear();
  Owning.clear();
}

bool FromPretrainedInMetaScopeCheck::isSetter(const FunctionDecl *FD) const {
  return FD && Setters.matches(FD);
}

bool FromPretrainedInMetaScopeCheck::isScopeFunction(
    const FunctionDecl *FD) const {
  return FD && ScopeFunctions.matches(FD);
}

bool FromPretrainedInMetaScopeCheck::isMachinery(const FunctionDecl *FD) const {
  if (!FD)
    return true;
  if (isSetter(FD) || isScopeFunction(FD) || Loaders.isLoader(FD))
    return true;
  if (const auto *Method = dyn_cast<CXXMethodDecl>(FD))
    if (Guards.isGuardClass(Method->getParent()))
      return true;
  return false;
}

/// The functions FD is written in, innermost first: FD itself, and for a
/// lambda's call operator or a local class's method, the functions around
/// them. Lambda call operators are skipped (Fn is not called for them).
template <class Fn>
static bool anyEnclosingFunction(const FunctionDecl *FD, Fn Pred) {
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

bool FromPretrainedInMetaScopeCheck::isInsideMachinery(
    const FunctionDecl *FD) const {
  return anyEnclosingFunction(
      FD, [this](const FunctionDecl *F) { return isMachinery(F); });
}

bool FromPretrainedInMetaScopeCheck::isInsideLoader(
    const FunctionDecl *FD) const {
  return anyEnclosingFunction(
      FD, [this](const FunctionDecl *F) { return Loaders.isLoader(F); });
}

bool FromPretrainedInMetaScopeCheck::canEnter(const FunctionDecl *FD) const {
  return FD && !isMachinery(FD);
}

bool FromPretrainedInMetaScopeCheck::endsWhenDestroyed(const Expr *Call,
                                                       bool ConstructorSetsMeta,
                                                       SummaryTable &Table) {
  // A construction here, or one a smart pointer's factory makes (the
  // pointer runs the destructor where its own life ends).
  const CXXRecordDecl *Built = OwningFactories::builtRecord(Call);
  if (const auto *Construct = dyn_cast<CXXConstructExpr>(Call))
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

FromPretrainedInMetaScopeCheck::Destruction
FromPretrainedInMetaScopeCheck::destructionEffect(const CXXRecordDecl *RD,
                                                  SummaryTable &Table) {
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
    else if (S->get<DeviceFacts>().DefaultDevice ==
                 DeviceAtReturn::Restored ||
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

SummaryTable &FromPretrainedInMetaScopeCheck::summaries(ASTContext &Context) {
  return Facts.table(Summaries, Context,
                     {DeviceFacetImpl.get(), LoadsFacetImpl.get(),
                      &OptionsFacetImpl});
}

bool FromPretrainedInMetaScopeCheck::hasDeviceMap(const Expr *Call,
                                                  const FunctionDecl *F,
                                                  ASTContext &Context) {
  return findExplicitOptionMember(Call, {DeviceMapMember}, F, Context, Cfgs) ||
         deviceMapFromHelpers(Call, summaries(Context)) != DeviceMapKind::None;
}

std::optional<FromPretrainedInMetaScopeCheck::InnerLoad>
FromPretrainedInMetaScopeCheck::exposedLoad(const FunctionDecl *Callee,
                                            Exposure Kind,
                                            ASTContext &Context) {
  if (CallDepth == 0 || !canEnter(Callee))
    return std::nullopt;
  return exposedLoad(summaries(Context).lookup<LoadFacts>(Callee),
                     isFreeHop(Callee, Context.getSourceManager()), Kind,
                     Context);
}

std::optional<FromPretrainedInMetaScopeCheck::InnerLoad>
FromPretrainedInMetaScopeCheck::exposedLoad(const FunctionSummary *Summary,
                                            bool FreeHop, Exposure Kind,
                                            ASTContext &Context) {
  const LoadFacts *S = Summary ? &Summary->get<LoadFacts>() : nullptr;
  if (CallDepth == 0 || !S || !S->LoadsWeights)
    return std::nullopt;
  if (Kind == Exposure::DefaultDevice && S->LoadsOnlyAfterSettingDevice)
    return std::nullopt;
  if (S->LoadsDepth + (FreeHop ? 0 : 1) > CallDepth)
    return std::nullopt;
  return InnerLoad{summaries(Context).locationOf(S->LoadsAt), S->Loader,
                   S->LoadsIn};
}

std::optional<LiveGuard> FromPretrainedInMetaScopeCheck::liveGuardAt(
    const Stmt *S, const FunctionDecl *F, ASTContext &Context) {
  const Stmt *Body = F->getBody();
  const Stmt *At = S;
  // A guard held in a std::optional or std::unique_ptr counts where it is
  // engaged on some path; where it is not, the scope outside it decides.
  for (unsigned Steps = 0; At && Steps < 64; ++Steps) {
    std::optional<LiveGuard> Guard = LiveGuards.innermost(At, Body);
    if (!Guard)
      break;
    if (!Guard->Holder)
      return Guard;
    const CfgReachability *Cfg = Cfgs.get(F, Body, Context);
    if (Cfg && guardHolderEngagedAt(*Guard, S, F, *Cfg))
      return Guard;
    At = Guard->DeclaredBy;
  }
  // A guard passed in by reference is live for the whole call.
  for (const ParmVarDecl *Param : F->parameters())
    if (Guards.isMetaGuardParameter(Param))
      return LiveGuard{Param, DeviceKind::Meta};
  return std::nullopt;
}

std::optional<FromPretrainedInMetaScopeCheck::MetaContext>
FromPretrainedInMetaScopeCheck::lambdaContext(const LambdaExpr *Lambda,
                                              ASTContext &Context) {
  // Climb from the lambda through conversions to the call it is an
  // argument of.
  Functions.enclosing(Lambda, Context); // Indexes the code around it.
  const Stmt *Node = Lambda;
  for (unsigned Steps = 0; Steps < 8; ++Steps) {
    Node = Functions.parents().parent(Node);
    if (!Node)
      return std::nullopt;
    if (const auto *Call = dyn_cast<CallExpr>(Node)) {
      if (isScopeFunction(Call->getDirectCallee()) ||
          (!Call->getDirectCallee() &&
           ScopeFunctions.matchesUnresolved(unresolvedCalleeName(Call))))
        return MetaContext{MetaSource::ScopeFunction, nullptr, Call, {}, {}};
      return std::nullopt;
    }
    if (!isa<ImplicitCastExpr, MaterializeTemporaryExpr, CXXBindTemporaryExpr,
             CXXConstructExpr, ParenExpr>(Node))
      return std::nullopt;
  }
  return std::nullopt;
}

void FromPretrainedInMetaScopeCheck::analyzeFunction(const FunctionDecl *F,
                                                     const LambdaExpr *Lambda,
                                                     ASTContext &Context) {
  if (!F || !F->getBody() || !Analyzed.insert(F).second)
    return;
  // The code of loaders, setters and scopes is the meta machinery itself,
  // including the lambdas written inside it (whose closure classes live in
  // it): no parent map needed to see that.
  if (isInsideMachinery(F))
    return;
  if (!Lambda && isMachinery(F))
    return;

  const Stmt *Body = F->getBody();
  std::optional<MetaContext> Top;
  if (Lambda)
    Top = lambdaContext(Lambda, Context);

  SummaryTable &Table = summaries(Context);
  std::vector<const Expr *> Calls = collectCalls(F);
  DeviceEvents Events = deviceEvents(Calls, Table);
  auto &[MetaSetters, OtherSetters, Ended, MetaHelpers, UnknownKill] = Events;
  const CfgReachability *Cfg = nullptr;
  if (!MetaSetters.empty())
    Cfg = Cfgs.get(F, Body, Context);

  for (const Expr *Call : Calls) {
    const FunctionDecl *Callee = calledFunction(Call);
    if (Callee && (isSetter(Callee) ||
                   (isMachinery(Callee) && !Loaders.isLoader(Callee)))) {
      // A scope function running a named function or a stored lambda: that
      // callable runs on meta.
      if (isScopeFunction(Callee) && CallDepth > 0) {
        const auto *CE = cast<CallExpr>(Call);
        for (const Expr *Arg : CE->arguments()) {
          const FunctionDecl *Target = functionOfCallable(Arg);
          const LambdaExpr *L = lambdaOfCallable(Arg);
          if (L && L->IgnoreImplicit() ==
                       Arg->IgnoreImplicit()->IgnoreParenImpCasts())
            continue; // Analysed as a function of its own.
          if (std::optional<InnerLoad> Inner =
                  exposedLoad(Target, Exposure::Scope, Context)) {
            MetaContext Ctx{MetaSource::ScopeFunction, nullptr, CE, {}, {}};
            report(CE, displayName(Target), &Ctx, Inner, Context);
          }
        }
      }
      continue;
    }

    // Where is the meta device coming from, if anywhere?
    std::optional<MetaContext> Ctx;
    if (std::optional<LiveGuard> Guard = liveGuardAt(Call, F, Context)) {
      if (Guard->Kind != DeviceKind::Meta)
        continue; // The innermost scope wins, and it is not meta.
      Ctx = MetaContext{MetaSource::ScopeGuard, Guard->Var, nullptr, {}, {}};
    } else if (Top) {
      Ctx = Top;
    } else if (Cfg) {
      if (std::optional<CfgReachability::Reach> Reach =
              Cfg->findReachingGen(Call, MetaSetters, OtherSetters,
                                   /*EntryIsGen=*/false, Ended);
          Reach && Reach->Gen) {
        Ctx =
            MetaContext{MetaSource::DefaultDevice, nullptr, Reach->Gen, {}, {}};
        if (auto It = MetaHelpers.find(Reach->Gen); It != MetaHelpers.end()) {
          Ctx->Helper = It->second.Target;
          Ctx->InnerSetter = Table.locationOf(It->second.At);
          Ctx->UntilDestroyed = llvm::is_contained(Ended, Reach->Gen);
        }
      }
    }
    if (!Ctx)
      continue;

    if (std::optional<std::string> Loader = Loaders.loaderCallName(Call)) {
      if (hasDeviceMap(Call, F, Context))
        continue;
      report(Call, Callee ? displayName(Callee) : *Loader, &*Ctx, std::nullopt,
             Context);
      continue;
    }
    Exposure Kind = Ctx->Source == MetaSource::DefaultDevice
                        ? Exposure::DefaultDevice
                        : Exposure::Scope;
    // Every function the call may run (overrides of a virtual one too,
    // also those only other translation units define).
    bool Found = false;
    for (const FunctionDecl *Target : Table.callTargets(Call))
      if (std::optional<InnerLoad> Inner = exposedLoad(Target, Kind, Context)) {
        report(Call, displayName(Target), &*Ctx, Inner, Context);
        Found = true;
        break;
      }
    if (!Found)
      for (const FunctionSummary *S : Table.externalTargets(Call))
        if (std::optional<InnerLoad> Inner =
                exposedLoad(S, /*FreeHop=*/false, Kind, Context)) {
          report(Call, S->Name, &*Ctx, Inner, Context);
          break;
        }
  }
}

std::optional<FromPretrainedInMetaScopeCheck::InnerLoad>
FromPretrainedInMetaScopeCheck::findMetaLoadWithin(const FunctionDecl *F,
                                                   unsigned Depth,
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
    if (std::optional<LiveGuard> Guard = liveGuardAt(Call, Def, Context)) {
      if (Guard->Kind != DeviceKind::Meta)
        continue;
      if (std::optional<std::string> Name = Loaders.loaderCallName(Call)) {
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
    if (Callee && isScopeFunction(Callee)) {
      for (const Expr *Arg : cast<CallExpr>(Call)->arguments()) {
        Found = exposedLoad(functionOfCallable(Arg), Exposure::Scope, Context);
        if (Found)
          break;
      }
      if (Found)
        break;
      continue;
    }
    if (!canEnter(Callee) || !definitionWithBody(Callee))
      continue;
    if (isFreeHop(Callee, SM)) {
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

void FromPretrainedInMetaScopeCheck::checkLoaderBuildsOnMeta(
    const CallExpr *Call, ASTContext &Context) {
  const FunctionDecl *Loader = Call->getDirectCallee();
  if (!Loader || !definitionWithBody(Loader))
    return;
  // A loader's own implementation is analysed from its callers only.
  EnclosingFunction Outer = Functions.enclosing(Call, Context);
  if (Outer.Function && isInsideLoader(Outer.Function))
    return;
  std::optional<InnerLoad> Inner =
      findMetaLoadWithin(Loader, LoaderBodyDepth, 0, Context);
  if (!Inner)
    return;
  const SourceManager &SM = Context.getSourceManager();
  SourceLocation Loc = SM.getFileLoc(Call->getBeginLoc());
  if (Loc.isInvalid() || !Reported.insert(Loc).second)
    return;
  std::string Model = "the model";
  if (const TemplateArgumentList *Args =
          Loader->getTemplateSpecializationArgs())
    if (Args->size() > 0 && Args->get(0).getKind() == TemplateArgument::Type)
      Model =
          "'" +
          Args->get(0).getAsType().getAsString(Context.getPrintingPolicy()) +
          "'";
  diag(Loc, "'%0' builds %1 on the meta device, and building it loads "
            "pretrained weights (through '%2'), which would be left on the "
            "meta device without data; build that part from its config in "
            "the constructor (Model(config)) and load the whole model with "
            "one call, or pass an explicit device map to the inner load")
      << displayName(Loader) << Model << Inner->LoaderName
      << Call->getSourceRange();
  noteInnerLoad(*Inner, Loc);
}

void FromPretrainedInMetaScopeCheck::noteInnerLoad(const InnerLoad &Inner,
                                                   SourceLocation Call) {
  // A load in another translation unit (an external summary) has no
  // location here: the note names the function instead.
  if (Inner.At.isValid())
    diag(Inner.At, "'%0' loads the weights here, in '%1'", DiagnosticIDs::Note)
        << Inner.LoaderName << Inner.In;
  else
    diag(Call, "'%0' loads the weights in '%1'", DiagnosticIDs::Note)
        << Inner.LoaderName << Inner.In;
}

void FromPretrainedInMetaScopeCheck::report(
    const Expr *Call, llvm::StringRef What, const MetaContext *Ctx,
    const std::optional<InnerLoad> &Inner, ASTContext &Context) {
  const SourceManager &SM = Context.getSourceManager();
  SourceLocation Loc = SM.getFileLoc(Call->getBeginLoc());
  if (Loc.isInvalid() || !Reported.insert(Loc).second)
    return;
  const bool Default = Ctx->Source == MetaSource::DefaultDevice;
  if (!Inner) {
    diag(Loc, "'%0' loads pretrained weights while %select{a meta-device "
              "scope is active|the default device is meta}1, so the loaded "
              "tensors would be left on the meta device without data; build "
              "the empty model with from_config/Model(config) there instead, "
              "%select{move the load out of the scope|reset the default "
              "device before the load}1, or pass an explicit device map")
        << What << Default << Call->getSourceRange();
  } else {
    diag(Loc, "'%0' loads pretrained weights (through '%1') while "
              "%select{a meta-device scope is active|the default device is "
              "meta}2, so the loaded tensors would be left on the meta device "
              "without data; build the empty model with "
              "from_config/Model(config) there instead, %select{move the call "
              "out of the scope|reset the default device before the call}2, "
              "or pass an explicit device map to the inner load")
        << What << Inner->LoaderName << Default << Call->getSourceRange();
  }
  switch (Ctx->Source) {
  case MetaSource::ScopeGuard: {
    const auto *Var = cast<VarDecl>(Ctx->OriginDecl);
    diag(SM.getFileLoc(Var->getLocation()),
         "meta-device scope '%0' is %select{active from here to the end of "
         "its block|passed in here, so it is active for the whole function}1",
         DiagnosticIDs::Note)
        << Var->getName() << isa<ParmVarDecl>(Var);
    break;
  }
  case MetaSource::ScopeFunction: {
    const auto *ScopeCall = cast<CallExpr>(Ctx->OriginStmt);
    const FunctionDecl *Fn = ScopeCall->getDirectCallee();
    diag(SM.getFileLoc(ScopeCall->getBeginLoc()),
         "'%0' runs %select{this lambda|'%2'}1 on the meta device",
         DiagnosticIDs::Note)
        << (Fn ? displayName(Fn) : unresolvedCalleeName(ScopeCall).str())
        << (Inner && ScopeCall == Call) << What;
    break;
  }
  case MetaSource::DefaultDevice:
    if (Ctx->Helper.empty()) {
      diag(SM.getFileLoc(Ctx->OriginStmt->getBeginLoc()),
           "the default device is set to meta here", DiagnosticIDs::Note);
      break;
    }
    diag(SM.getFileLoc(Ctx->OriginStmt->getBeginLoc()),
         "'%0' returns with the default device set to meta%select{|, until "
         "the object it builds is destroyed}1",
         DiagnosticIDs::Note)
        << Ctx->Helper << Ctx->UntilDestroyed;
    if (Ctx->InnerSetter.isValid())
      diag(Ctx->InnerSetter, "the default device is set to meta here",
           DiagnosticIDs::Note);
    break;
  }
  if (Inner)
    noteInnerLoad(*Inner, Loc);
  else if (llvm::SmallVector<FixItHint, 3> Fixes =
               fromConfigRewrite(Call, Context);
           !Fixes.empty())
    diag(Loc,
         "if an empty model is what you want here, build it from its config",
         DiagnosticIDs::Note)
        << Fixes;
}

} // namespace clang::tidy::metaguard
