//===--- FromPretrainedInMetaScopeCheck.h - metaguard-tidy -----*- C++ -*-===//
//
// metaguard-from-pretrained-in-meta-scope: flags a call that loads pretrained
// weights while the ambient device is meta (a live meta-device scope, a
// lambda run by with_meta_device, or a default device set to meta), directly
// or through functions it calls.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_FROMPRETRAINEDINMETASCOPECHECK_H
#define METAGUARD_CHECKS_FROMPRETRAINEDINMETASCOPECHECK_H

#include "utils/CfgReachability.h"
#include "utils/LoaderCalls.h"
#include "utils/NameList.h"
#include "utils/ScopeGuards.h"
#include "utils/StmtParents.h"
#include "utils/WholeProgram.h"

#include "clang-tidy/ClangTidyCheck.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <map>
#include <optional>
#include <string>
#include <tuple>

namespace clang::tidy::metaguard {

/// Flags loader calls (LoaderFunctions, or functions annotated
/// metaguard::loads_weights) that run while the meta device is ambient.
///
/// For the user-facing documentation see
/// docs/checks/metaguard-from-pretrained-in-meta-scope.md.
class FromPretrainedInMetaScopeCheck : public ClangTidyCheck {
public:
  FromPretrainedInMetaScopeCheck(llvm::StringRef Name,
                                 ClangTidyContext *Context);
  bool isLanguageVersionSupported(const LangOptions &LangOpts) const override {
    return LangOpts.CPlusPlus;
  }
  std::optional<TraversalKind> getCheckTraversalKind() const override {
    return TK_AsIs;
  }
  void storeOptions(ClangTidyOptions::OptionMap &Opts) override;
  void registerMatchers(ast_matchers::MatchFinder *Finder) override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;
  void onEndOfTranslationUnit() override;

private:
  /// Why the meta device is ambient at a call.
  enum class MetaSource {
    /// A live guard variable (Origin is its VarDecl).
    ScopeGuard,
    /// The enclosing lambda is run by a MetaScopeFunctions call (Origin is
    /// that call).
    ScopeFunction,
    /// A DefaultDeviceSetters call with a meta device reaches the call
    /// (Origin is that call).
    DefaultDevice,
  };
  struct MetaContext {
    MetaSource Source;
    const Decl *OriginDecl = nullptr;
    const Stmt *OriginStmt = nullptr;
  };
  /// A loader call reached through calls, and the function it is in.
  struct InnerLoad {
    const Expr *Call = nullptr;
    std::string LoaderName;
    const FunctionDecl *In = nullptr;
  };
  /// Which kind of meta state an inner loader call must be exposed to.
  enum class Exposure { Scope, DefaultDevice };

  bool isSetter(const FunctionDecl *FD) const;
  bool isScopeFunction(const FunctionDecl *FD) const;
  /// Functions that implement meta handling themselves (setters, scope
  /// functions, guard classes, loaders): never analysed or entered.
  bool isMachinery(const FunctionDecl *FD) const;
  /// Whether FD, or a function it is written in (FD being a lambda's call
  /// operator or a local class's method), is machinery / a loader.
  bool isInsideMachinery(const FunctionDecl *FD) const;
  bool isInsideLoader(const FunctionDecl *FD) const;
  /// The depth a search entering FD from a call site starts with.
  unsigned entryDepth(const FunctionDecl *FD, ASTContext &Context) const;
  /// Whether a call to FD may be followed into FD's body.
  bool canEnter(const FunctionDecl *FD) const;

  void analyzeFunction(const FunctionDecl *F, const LambdaExpr *Lambda,
                       ASTContext &Context);
  std::optional<MetaContext> lambdaContext(const LambdaExpr *Lambda,
                                           ASTContext &Context);
  std::optional<InnerLoad> findExposedLoad(const FunctionDecl *F,
                                           unsigned Depth, Exposure Kind,
                                           unsigned FreeHops,
                                           ASTContext &Context);
  /// A load that runs under a meta scope somewhere inside F (a loader's own
  /// implementation), e.g. from_pretrained<M> building M on meta when M's
  /// constructor loads a pretrained part.
  std::optional<InnerLoad> findMetaLoadWithin(const FunctionDecl *F,
                                              unsigned Depth, unsigned FreeHops,
                                              ASTContext &Context);
  void checkLoaderBuildsOnMeta(const CallExpr *Call, ASTContext &Context);
  void report(const Expr *Call, llvm::StringRef What, const MetaContext *Ctx,
              const std::optional<InnerLoad> &Inner, ASTContext &Context);

  // Options.
  const std::string LoaderFunctionsOption;
  const std::string MetaScopeTypesOption;
  const std::string DeviceScopeTypesOption;
  const std::string MetaScopeFunctionsOption;
  const std::string DefaultDeviceSettersOption;
  const unsigned CallDepth;

  LoaderMatcher Loaders;
  ScopeGuardClassifier Guards;
  NameList ScopeFunctions;
  NameList Setters;

  // Per translation unit.
  CfgCache Cfgs;
  FunctionIndex Functions;
  LiveGuardFinder LiveGuards{Guards, Functions.parents()};
  llvm::DenseSet<const FunctionDecl *> Analyzed;
  llvm::DenseSet<SourceLocation> Reported;
  using ExposureKey = std::tuple<const FunctionDecl *, unsigned, unsigned>;
  std::map<ExposureKey, std::optional<InnerLoad>> ExposureMemo;
  llvm::DenseSet<const FunctionDecl *> InProgress;
  std::map<ExposureKey, std::optional<InnerLoad>> WithinMemo;
  llvm::DenseSet<const FunctionDecl *> WithinInProgress;

  /// Whole-program mode: SummaryFile / ExportSummaries.
  WholeProgramFacts Facts;
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_FROMPRETRAINEDINMETASCOPECHECK_H
