//===--- OffloadedParameterMoveCheck.cpp - metaguard-tidy ------*- C++ -*-===//

#include "OffloadedParameterMoveCheck.h"
#include "utils/domain/LoaderCalls.h"
#include "utils/domain/TensorWrites.h"

#include "clang/ASTMatchers/ASTMatchFinder.h"

using namespace clang::ast_matchers;

namespace clang::tidy::metaguard {

OffloadedParameterMoveCheck::OffloadedParameterMoveCheck(
    llvm::StringRef Name, ClangTidyContext *Context)
    : ClangTidyCheck(Name, Context), Values(readCheckOptions<check_bit::OffloadedParameterMoveCheck>(Options)),
      Facts(Name, Options), Report(*this), Analysis(Values, Facts, Report) {}

void OffloadedParameterMoveCheck::storeOptions(
    ClangTidyOptions::OptionMap &Opts) {
  storeCheckOptions(Values, Options, Opts);
  Facts.storeOptions(Options, Opts);
}

void OffloadedParameterMoveCheck::registerMatchers(MatchFinder *Finder) {
  Facts.registerMatchers(Finder);
  // A function is analysed when something in it may dispatch a model: a
  // DispatchFunctions call, a loader call (whose options decide later), or a
  // call to a function that returns a dispatched model. The user's calls
  // are matched once for every metaguard check.
  UserCode = UserCodeMatchers::subscribe(Finder, this);
}

void OffloadedParameterMoveCheck::check(
    const MatchFinder::MatchResult &Result) {
  const CallExpr *Call = UserCodeMatchers::call(Result);
  if (Call && Analysis.mayDispatch(Call, *Result.Context))
    Analysis.analyzeEnclosingFunction(Call, *Result.Context);
}

void OffloadedParameterMoveCheck::onEndOfTranslationUnit() {
  Analysis.endTranslationUnit();
  Report.clear();
}

} // namespace clang::tidy::metaguard
