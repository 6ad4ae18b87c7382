//===--- OffloadedParameterMoveCheck.cpp - metaguard-tidy ------*- C++ -*-===//

#include "OffloadedParameterMoveCheck.h"

#include "clang/ASTMatchers/ASTMatchFinder.h"

using namespace clang::ast_matchers;

namespace clang::tidy::metaguard {

OffloadedParameterMoveCheck::OffloadedParameterMoveCheck(
    llvm::StringRef Name, ClangTidyContext *Context)
    : MetaguardCheck(Name, Context), Report(*this),
      Analysis(Values, Facts, Report) {}

// A function is analysed when something in it may dispatch a model: a
// DispatchFunctions call, a loader call (whose options decide later), or a
// call to a function that returns a dispatched model.
void OffloadedParameterMoveCheck::check(
    const MatchFinder::MatchResult &Result) {
  const CallExpr *Call = UserCodeMatchers::call(Result);
  if (Call && Analysis.mayDispatch(Call, *Result.Context))
    Analysis.analyzeEnclosingFunction(Call, *Result.Context);
}

void OffloadedParameterMoveCheck::endTranslationUnit() {
  Analysis.endTranslationUnit();
  Report.clear();
}

} // namespace clang::tidy::metaguard
