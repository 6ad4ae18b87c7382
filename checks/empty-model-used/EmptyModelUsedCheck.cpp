//===--- EmptyModelUsedCheck.cpp - metaguard-tidy --------------*- C++ -*-===//

#include "EmptyModelUsedCheck.h"
#include "utils/domain/DeviceFacts.h"
#include "utils/domain/EmptyModelFacts.h"

#include "clang/ASTMatchers/ASTMatchFinder.h"

using namespace clang::ast_matchers;

namespace clang::tidy::metaguard {

EmptyModelUsedCheck::EmptyModelUsedCheck(llvm::StringRef Name,
                                         ClangTidyContext *Context)
    : MetaguardCheck(Name, Context),
      Ambient(Values.LoaderFunctions, Values.MetaScopeTypes,
              Values.DeviceScopeTypes, Values.MetaScopeFunctions,
              Values.DefaultDeviceSetters),
      Reporter(*this), Finder(Ambient, Values, Reporter,
                              [this](ASTContext &Context) -> SummaryTable & {
                                return summaries(Context);
                              }) {}

// A model is built empty where the meta device is ambient, or by a function
// of the user's whose summary says so: both are among the user's calls and
// variables.
void EmptyModelUsedCheck::check(const MatchFinder::MatchResult &Result) {
  ASTContext &Context = *Result.Context;
  for (const EnclosingFunction &Fn :
       Ambient.functionsWithSource(Result, summaries(Context)))
    Finder.analyzeFunction(Fn.Function, Fn.Lambda, Context);
  if (const Expr *Call = AmbientDevice::matchedCall(Result);
      Call && Finder.givesEmptyModel(Call, Context)) {
    EnclosingFunction Fn = Ambient.functions().enclosing(Call, Context);
    Finder.analyzeFunction(Fn.Function, Fn.Lambda, Context);
  }
}

void EmptyModelUsedCheck::endTranslationUnit() {
  Facts.exportTable(
      [this](ASTContext &Context) -> SummaryTable & {
        return summaries(Context);
      },
      {&facetKind<DeviceFacts>(), &facetKind<EmptyModelFacts>()});
  Ambient.clear();
  Finder.clear();
  Reporter.clear();
}

SummaryTable &EmptyModelUsedCheck::summaries(ASTContext &Context) {
  return Facts.table(Summaries, Context, {Ambient.facet(), Finder.facet()});
}

} // namespace clang::tidy::metaguard
