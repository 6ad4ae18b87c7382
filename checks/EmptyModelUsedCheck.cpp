//===--- EmptyModelUsedCheck.cpp - metaguard-tidy --------------*- C++ -*-===//

#include "EmptyModelUsedCheck.h"
#include "utils/domain/DeviceFacts.h"
#include "utils/domain/EmptyModelFacts.h"
#include "utils/domain/LoaderCalls.h"

#include "clang/ASTMatchers/ASTMatchFinder.h"

using namespace clang::ast_matchers;

namespace clang::tidy::metaguard {

EmptyModelUsedCheck::EmptyModelUsedCheck(llvm::StringRef Name,
                                         ClangTidyContext *Context)
    : ClangTidyCheck(Name, Context), Values(readCheckOptions<check_bit::EmptyModelUsedCheck>(Options)),
      Ambient(Values.LoaderFunctions, Values.MetaScopeTypes,
              Values.DeviceScopeTypes, Values.MetaScopeFunctions,
              Values.DefaultDeviceSetters),
      Reporter(*this), Finder(Ambient, Values, Reporter,
                              [this](ASTContext &Context) -> SummaryTable & {
                                return summaries(Context);
                              }),
      Facts(Name, Options) {}

void EmptyModelUsedCheck::storeOptions(ClangTidyOptions::OptionMap &Opts) {
  storeCheckOptions(Values, Options, Opts);
  Facts.storeOptions(Options, Opts);
}

void EmptyModelUsedCheck::registerMatchers(MatchFinder *Matches) {
  Facts.registerMatchers(Matches);
  // A model is built empty where the meta device is ambient, or by a
  // function of the user's whose summary says so: both are among the user's
  // calls and variables, matched once for every metaguard check.
  UserCode = UserCodeMatchers::subscribe(Matches, this);
}

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

void EmptyModelUsedCheck::onEndOfTranslationUnit() {
  Facts.exportTable(
      [this](ASTContext &Context) -> SummaryTable & {
        return summaries(Context);
      },
      {&facetKind<DeviceFacts>(), &facetKind<EmptyModelFacts>()});
  Ambient.clear();
  Finder.clear();
  Reporter.clear();
  Summaries.reset();
}

SummaryTable &EmptyModelUsedCheck::summaries(ASTContext &Context) {
  return Facts.table(Summaries, Context, {Ambient.facet(), Finder.facet()});
}

} // namespace clang::tidy::metaguard
