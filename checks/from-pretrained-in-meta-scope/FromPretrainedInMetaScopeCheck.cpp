//===--- FromPretrainedInMetaScopeCheck.cpp - metaguard-tidy ---*- C++ -*-===//

#include "FromPretrainedInMetaScopeCheck.h"
#include "utils/domain/DeviceFacts.h"
#include "utils/domain/LoadFacts.h"

#include "clang/ASTMatchers/ASTMatchFinder.h"

using namespace clang::ast_matchers;

namespace clang::tidy::metaguard {

FromPretrainedInMetaScopeCheck::FromPretrainedInMetaScopeCheck(
    llvm::StringRef Name, ClangTidyContext *Context)
    : MetaguardCheck(Name, Context),
      Ambient(Values.LoaderFunctions, Values.MetaScopeTypes,
              Values.DeviceScopeTypes, Values.MetaScopeFunctions,
              Values.DefaultDeviceSetters),
      Reporter(*this), Finder(Ambient, Reporter, Values.CallDepth,
                              [this](ASTContext &Context) -> SummaryTable & {
                                return summaries(Context);
                              }) {}

FromPretrainedInMetaScopeCheck::~FromPretrainedInMetaScopeCheck() = default;

// Every function with a source of meta state is analysed once, and loaders
// whose implementation is visible are looked into: both start from the
// user's calls and variables.
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

void FromPretrainedInMetaScopeCheck::endTranslationUnit() {
  Facts.exportTable(
      [this](ASTContext &Context) -> SummaryTable & {
        return summaries(Context);
      },
      {&facetKind<DeviceFacts>(), &facetKind<LoadFacts>(),
       &facetKind<OptionsFacts>()});
  Ambient.clear();
  Finder.clear();
  Reporter.clear();
  OptionsFacetImpl.clear();
}

SummaryTable &FromPretrainedInMetaScopeCheck::summaries(ASTContext &Context) {
  return Facts.table(Summaries, Context,
                     {Ambient.facet(), Finder.facet(), &OptionsFacetImpl});
}

} // namespace clang::tidy::metaguard
