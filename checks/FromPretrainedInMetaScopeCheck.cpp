//===--- FromPretrainedInMetaScopeCheck.cpp - metaguard-tidy ---*- C++ -*-===//

#include "FromPretrainedInMetaScopeCheck.h"
#include "utils/analysis/FunctionBodies.h"
#include "utils/domain/DeviceExpr.h"
#include "utils/domain/DeviceFacts.h"
#include "utils/domain/LoadFacts.h"

#include "clang/ASTMatchers/ASTMatchFinder.h"

using namespace clang::ast_matchers;

namespace clang::tidy::metaguard {

namespace {

/// Loads are followed through calls at any depth by function summaries;
/// CallDepth only caps how many of the user's calls a finding may span.
constexpr unsigned DefaultCallDepth = 64;

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

} // namespace

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
      Ambient(LoaderFunctionsOption, MetaScopeTypesOption,
              DeviceScopeTypesOption, MetaScopeFunctionsOption,
              DefaultDeviceSettersOption),
      Reporter(*this), Finder(Ambient, Reporter, CallDepth,
                              [this](ASTContext &Context) -> SummaryTable & {
                                return summaries(Context);
                              }),
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

void FromPretrainedInMetaScopeCheck::registerMatchers(MatchFinder *Matches) {
  Facts.registerMatchers(Matches);
  // Every function with a source of meta state is analysed once: a local
  // guard variable, a default-device setter call, or a scope-function call.
  // Only code outside system headers: LibTorch's and the standard library's
  // own code is never where the mistake is written.
  Matches->addMatcher(varDecl(hasLocalStorage(), unless(parmVarDecl()),
                              unless(isExpansionInSystemHeader()),
                              isMetaGuard(&Ambient.guards()))
                          .bind("guard"),
                      this);
  // A guard passed by reference: the function runs inside its scope.
  Matches->addMatcher(parmVarDecl(unless(isExpansionInSystemHeader()),
                                  isMetaGuardParameter(&Ambient.guards()))
                          .bind("guard"),
                      this);
  // A call to a function of the user's that may leave the default device
  // meta (decided from its summary in check()), constructors included.
  Matches->addMatcher(
      callExpr(unless(isExpansionInSystemHeader()),
               callee(functionDecl(unless(isExpansionInSystemHeader()),
                                   unless(nameInList(&Ambient.setters())))))
          .bind("helper-call"),
      this);
  Matches->addMatcher(cxxConstructExpr(unless(isExpansionInSystemHeader()),
                                       hasDeclaration(cxxConstructorDecl(unless(
                                           isExpansionInSystemHeader()))))
                          .bind("helper-call"),
                      this);
  // std::make_unique<Session>() and kin run the user's constructor from a
  // system header.
  Matches->addMatcher(callExpr(unless(isExpansionInSystemHeader()),
                               callee(functionDecl(hasAnyName(
                                   "::std::make_unique", "::std::make_shared",
                                   "::std::allocate_shared"))))
                          .bind("helper-call"),
                      this);
  Matches->addMatcher(
      callExpr(unless(isExpansionInSystemHeader()),
               callee(functionDecl(nameInList(&Ambient.setters()))))
          .bind("setter"),
      this);
  Matches->addMatcher(
      callExpr(unless(isExpansionInSystemHeader()),
               callee(functionDecl(nameInList(&Ambient.scopeFunctions()))))
          .bind("scope-call"),
      this);
  // Loaders whose implementation is visible: do they build the model on
  // meta in a way that makes the model's own nested loads run there?
  Matches->addMatcher(
      callExpr(unless(isExpansionInSystemHeader()),
               callee(functionDecl(anyOf(nameInList(&Ambient.loaders().names()),
                                         hasLoadsWeightsAnnotationMatcher()))))
          .bind("loader-call"),
      this);
}

void FromPretrainedInMetaScopeCheck::check(
    const MatchFinder::MatchResult &Result) {
  ASTContext &Context = *Result.Context;
  if (const auto *Var = Result.Nodes.getNodeAs<VarDecl>("guard")) {
    EnclosingFunction Fn = Ambient.functions().enclosing(Var, Context);
    Finder.analyzeFunction(Fn.Function, Fn.Lambda, Context);
    return;
  }
  if (const auto *Call = Result.Nodes.getNodeAs<Expr>("helper-call")) {
    if (!Ambient.canEnter(calledFunction(Call)))
      return;
    // Any function the call may run: an override of a virtual one too.
    std::optional<AmbientDevice::HelperEffect> Effect =
        Ambient.helperEffect(Call, summaries(Context));
    if (!Effect || !Effect->Meta)
      return;
    EnclosingFunction Fn = Ambient.functions().enclosing(Call, Context);
    Finder.analyzeFunction(Fn.Function, Fn.Lambda, Context);
    return;
  }
  if (const auto *Call = Result.Nodes.getNodeAs<CallExpr>("setter")) {
    if (Call->getNumArgs() == 0 ||
        classifyDeviceExpr(Call->getArg(0)) != DeviceKind::Meta)
      return;
    EnclosingFunction Fn = Ambient.functions().enclosing(Call, Context);
    Finder.analyzeFunction(Fn.Function, Fn.Lambda, Context);
    return;
  }
  if (const auto *Call = Result.Nodes.getNodeAs<CallExpr>("loader-call")) {
    Finder.checkLoaderBuildsOnMeta(Call, Context);
    return;
  }
  if (const auto *Call = Result.Nodes.getNodeAs<CallExpr>("scope-call")) {
    // The lambdas it runs are meta throughout; other callables are followed
    // from the enclosing function.
    for (const Expr *Arg : Call->arguments())
      if (const auto *Lambda = lambdaOfCallable(Arg))
        if (Lambda->IgnoreImplicit() ==
            Arg->IgnoreImplicit()->IgnoreParenImpCasts())
          Finder.analyzeFunction(Lambda->getCallOperator(), Lambda, Context);
    EnclosingFunction Fn = Ambient.functions().enclosing(Call, Context);
    Finder.analyzeFunction(Fn.Function, Fn.Lambda, Context);
  }
}

void FromPretrainedInMetaScopeCheck::onEndOfTranslationUnit() {
  Facts.exportTable(
      [this](ASTContext &Context) -> SummaryTable & {
        return summaries(Context);
      },
      {&facetKind<DeviceFacts>(), &facetKind<LoadFacts>(),
       &facetKind<OptionsFacts>()});
  Ambient.clear();
  Finder.clear();
  Reporter.clear();
  Summaries.reset();
  OptionsFacetImpl.clear();
}

SummaryTable &FromPretrainedInMetaScopeCheck::summaries(ASTContext &Context) {
  return Facts.table(Summaries, Context,
                     {Ambient.facet(), Finder.facet(), &OptionsFacetImpl});
}

} // namespace clang::tidy::metaguard
