//===--- EmptyModelUsedCheck.cpp - metaguard-tidy --------------*- C++ -*-===//

#include "EmptyModelUsedCheck.h"
#include "utils/domain/DeviceFacts.h"
#include "utils/domain/EmptyModelFacts.h"
#include "utils/domain/LoaderCalls.h"
#include "utils/domain/MemberModels.h"
#include "utils/domain/ModelProducers.h"

#include "clang/ASTMatchers/ASTMatchFinder.h"

using namespace clang::ast_matchers;

namespace clang::tidy::metaguard {

namespace {

constexpr llvm::StringLiteral DefaultWeightGivers =
    "::metaguard::load_weights;::metaguard::load_checkpoint_and_dispatch;"
    "::metaguard::attach_offload_hooks;::metaguard::dispatch_model;"
    "::metaguard::to_empty";
constexpr llvm::StringLiteral DefaultNeedsWeights =
    "::metaguard::save_pretrained";

/// An option: its name, its default, and the field that holds its value.
struct OptionSpec {
  llvm::StringLiteral Name;
  llvm::StringLiteral Default;
  std::string EmptyModelOptions::*Value;
};

/// Every option of the check, read by the constructor and written back by
/// storeOptions from this one list. Those that say where the meta device is
/// ambient are metaguard-from-pretrained-in-meta-scope's, by name.
constexpr OptionSpec OptionSpecs[] = {
    {"LoaderFunctions", DefaultLoaderFunctions,
     &EmptyModelOptions::LoaderFunctions},
    {"MetaScopeTypes", DefaultMetaScopeTypes,
     &EmptyModelOptions::MetaScopeTypes},
    {"DeviceScopeTypes", DefaultDeviceScopeTypes,
     &EmptyModelOptions::DeviceScopeTypes},
    {"MetaScopeFunctions", DefaultMetaScopeFunctions,
     &EmptyModelOptions::MetaScopeFunctions},
    {"DefaultDeviceSetters", DefaultDefaultDeviceSetters,
     &EmptyModelOptions::DefaultDeviceSetters},
    {"WeightGivers", DefaultWeightGivers, &EmptyModelOptions::WeightGivers},
    {"NeedsWeights", DefaultNeedsWeights, &EmptyModelOptions::NeedsWeights},
};

EmptyModelOptions readOptions(ClangTidyCheck::OptionsView &Options) {
  EmptyModelOptions Values;
  for (const OptionSpec &Spec : OptionSpecs)
    Values.*Spec.Value = std::string(Options.get(Spec.Name, Spec.Default));
  return Values;
}

/// A function whose call may hand back an empty model by its summary: one
/// that returns a model, or a constructor or method of a class that keeps
/// models.
AST_MATCHER(FunctionDecl, mayGiveModel) {
  if (returnsModel(&Node))
    return true;
  const auto *Method = dyn_cast<CXXMethodDecl>(&Node);
  return Method && !Method->isStatic() && hasMemberModels(Method->getParent());
}

} // namespace

EmptyModelUsedCheck::EmptyModelUsedCheck(llvm::StringRef Name,
                                         ClangTidyContext *Context)
    : ClangTidyCheck(Name, Context), Values(readOptions(Options)),
      Ambient(Values.LoaderFunctions, Values.MetaScopeTypes,
              Values.DeviceScopeTypes, Values.MetaScopeFunctions,
              Values.DefaultDeviceSetters),
      Reporter(*this), Finder(Ambient, Values, Reporter,
                              [this](ASTContext &Context) -> SummaryTable & {
                                return summaries(Context);
                              }),
      Facts(Name, Options) {}

void EmptyModelUsedCheck::storeOptions(ClangTidyOptions::OptionMap &Opts) {
  for (const OptionSpec &Spec : OptionSpecs)
    Options.store(Opts, Spec.Name, Values.*Spec.Value);
  Facts.storeOptions(Options, Opts);
}

void EmptyModelUsedCheck::registerMatchers(MatchFinder *Matches) {
  Facts.registerMatchers(Matches);
  // A model is built empty where the meta device is ambient...
  Ambient.registerSourceMatchers(Matches, this);
  // ...or by a function of the user's whose summary says it builds one.
  Matches->addMatcher(
      callExpr(unless(isExpansionInSystemHeader()),
               callee(functionDecl(unless(isExpansionInSystemHeader()),
                                   mayGiveModel())))
          .bind("model-call"),
      this);
  Matches->addMatcher(cxxConstructExpr(unless(isExpansionInSystemHeader()),
                                       hasDeclaration(cxxConstructorDecl(
                                           unless(isExpansionInSystemHeader()),
                                           mayGiveModel())))
                          .bind("model-call"),
                      this);
  Matches->addMatcher(
      callExpr(unless(isExpansionInSystemHeader()),
               callee(functionDecl(
                   hasAnyName("::std::make_unique", "::std::make_shared"))))
          .bind("model-call"),
      this);
}

void EmptyModelUsedCheck::check(const MatchFinder::MatchResult &Result) {
  ASTContext &Context = *Result.Context;
  if (const auto *Call = Result.Nodes.getNodeAs<Expr>("model-call")) {
    if (Finder.givesEmptyModel(Call, Context)) {
      EnclosingFunction Fn = Ambient.functions().enclosing(Call, Context);
      Finder.analyzeFunction(Fn.Function, Fn.Lambda, Context);
    }
    return;
  }
  for (const EnclosingFunction &Fn :
       Ambient.functionsWithSource(Result, summaries(Context)))
    Finder.analyzeFunction(Fn.Function, Fn.Lambda, Context);
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
