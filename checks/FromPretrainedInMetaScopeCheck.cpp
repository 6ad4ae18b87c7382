//===--- FromPretrainedInMetaScopeCheck.cpp - metaguard-tidy ---*- C++ -*-===//

#include "FromPretrainedInMetaScopeCheck.h"
#include "utils/domain/DeviceFacts.h"
#include "utils/domain/LoadFacts.h"

#include "clang/ASTMatchers/ASTMatchFinder.h"

using namespace clang::ast_matchers;

namespace clang::tidy::metaguard {

namespace {

/// Loads are followed through calls at any depth by function summaries;
/// CallDepth only caps how many of the user's calls a finding may span.
constexpr unsigned DefaultCallDepth = 64;

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
  // Every function with a source of meta state is analysed once, and
  // loaders whose implementation is visible are looked into: both start
  // from the user's calls and variables, matched once for every metaguard
  // check.
  UserCode = UserCodeMatchers::subscribe(Matches, this);
}

void FromPretrainedInMetaScopeCheck::check(
    const MatchFinder::MatchResult &Result) {
  ASTContext &Context = *Result.Context;
  for (const EnclosingFunction &Fn :
       Ambient.functionsWithSource(Result, summaries(Context)))
    Finder.analyzeFunction(Fn.Function, Fn.Lambda, Context);
  // A loader whose implementation is visible: does it build the model on
  // meta in a way that makes the model's own nested loads run there?
  if (const CallExpr *Call = UserCodeMatchers::call(Result);
      Call && Ambient.loaders().isLoader(UserCodeMatchers::callee(Result)))
    Finder.checkLoaderBuildsOnMeta(Call, Context);
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
