//===--- OffloadedParameterMoveCheck.cpp - metaguard-tidy ------*- C++ -*-===//

#include "OffloadedParameterMoveCheck.h"
#include "utils/domain/LoaderCalls.h"
#include "utils/domain/TensorWrites.h"

#include "clang/ASTMatchers/ASTMatchFinder.h"

using namespace clang::ast_matchers;

namespace clang::tidy::metaguard {

namespace {

constexpr llvm::StringLiteral DefaultDispatchFunctions =
    "::metaguard::dispatch_model";
constexpr llvm::StringLiteral DefaultHookRemovers =
    "::metaguard::remove_hook_from_module";
constexpr llvm::StringLiteral DefaultNeedsHooks =
    "::metaguard::save_pretrained;::metaguard::load_offloaded_parameter;"
    "::metaguard::verify_dispatch";

/// An option: its name, its default, and the field that holds its value.
struct OptionSpec {
  llvm::StringLiteral Name;
  llvm::StringLiteral Default;
  std::string OffloadedParameterOptions::*Value;
};

/// Every option of the check, read by the constructor and written back by
/// storeOptions from this one list.
constexpr OptionSpec OptionSpecs[] = {
    {"DispatchFunctions", DefaultDispatchFunctions,
     &OffloadedParameterOptions::DispatchFunctions},
    {"LoaderFunctions", DefaultLoaderFunctions,
     &OffloadedParameterOptions::LoaderFunctions},
    {"HookRemovers", DefaultHookRemovers,
     &OffloadedParameterOptions::HookRemovers},
    {"NeedsHooks", DefaultNeedsHooks, &OffloadedParameterOptions::NeedsHooks},
    {"ParameterMutators", DefaultParameterMutators,
     &OffloadedParameterOptions::ParameterMutators},
    {"IgnoredInPlaceMethods", DefaultIgnoredInPlaceMethods,
     &OffloadedParameterOptions::IgnoredInPlaceMethods},
};

OffloadedParameterOptions readOptions(ClangTidyCheck::OptionsView &Options) {
  OffloadedParameterOptions Values;
  for (const OptionSpec &Spec : OptionSpecs)
    Values.*Spec.Value = std::string(Options.get(Spec.Name, Spec.Default));
  return Values;
}

} // namespace

OffloadedParameterMoveCheck::OffloadedParameterMoveCheck(
    llvm::StringRef Name, ClangTidyContext *Context)
    : ClangTidyCheck(Name, Context), Values(readOptions(Options)),
      Facts(Name, Options), Report(*this), Analysis(Values, Facts, Report) {}

void OffloadedParameterMoveCheck::storeOptions(
    ClangTidyOptions::OptionMap &Opts) {
  for (const OptionSpec &Spec : OptionSpecs)
    Options.store(Opts, Spec.Name, Values.*Spec.Value);
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
