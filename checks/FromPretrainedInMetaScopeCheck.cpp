//===--- FromPretrainedInMetaScopeCheck.cpp - metaguard-tidy ---*- C++ -*-===//

#include "FromPretrainedInMetaScopeCheck.h"
#include "utils/domain/DeviceFacts.h"
#include "utils/domain/LoadFacts.h"

#include "clang/ASTMatchers/ASTMatchFinder.h"

using namespace clang::ast_matchers;

namespace clang::tidy::metaguard {

FromPretrainedInMetaScopeCheck::FromPretrainedInMetaScopeCheck(
    llvm::StringRef Name, ClangTidyContext *Context)
    : ClangTidyCheck(Name, Context),
      Values(readCheckOptions<check_bit::FromPretrainedInMetaScopeCheck>(
          Options)),
      Ambient(Values.LoaderFunctions, Values.MetaScopeTypes,
              Values.DeviceScopeTypes, Values.MetaScopeFunctions,
              Values.DefaultDeviceSetters),
      Reporter(*this), Finder(Ambient, Reporter, Values.CallDepth,
                              [this](ASTContext &Context) -> SummaryTable & {
                                return summaries(Context);
                              }),
      Facts(Name, Options) {}

FromPretrainedInMetaScopeCheck::~FromPretrainedInMetaScopeCheck() = default;

void FromPretrainedInMetaScopeCheck::storeOptions(
    ClangTidyOptions::OptionMap &Opts) {
  storeCheckOptions(Values, Options, Opts);
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
