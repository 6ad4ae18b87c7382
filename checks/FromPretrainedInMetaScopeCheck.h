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
#include "utils/ClangCompat.h"
#include "utils/FunctionSummaries.h"
#include "utils/LoaderCalls.h"
#include "utils/NameList.h"
#include "utils/OwningFactories.h"
#include "utils/ReturnedOptions.h"
#include "utils/ScopeGuards.h"
#include "utils/StmtParents.h"
#include "utils/WholeProgram.h"

#include "clang-tidy/ClangTidyCheck.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <map>
#include <memory>
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
  ~FromPretrainedInMetaScopeCheck() override;
  bool isLanguageVersionSupported(const LangOptions &LangOpts) const override {
    return LangOpts.CPlusPlus;
  }
  compat::Optional<TraversalKind> getCheckTraversalKind() const override {
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
    /// DefaultDevice through a helper that leaves it meta (OriginStmt is the
    /// call): the helper and the setter inside it.
    std::string Helper;
    SourceLocation InnerSetter;
    /// The helper is a constructor whose object's destruction ends the
    /// state: it lasts for the object's life.
    bool UntilDestroyed = false;
  };
  /// A loader call reached through calls, and the function it is in.
  struct InnerLoad {
    SourceLocation At; ///< Invalid when it is in another translation unit.
    std::string LoaderName;
    std::string In;
  };
  /// Which kind of meta state an inner loader call must be exposed to.
  enum class Exposure { Scope, DefaultDevice };
  /// What destroying an object of a class does to the default device, by
  /// how much it says (of a class and its members, the most wins).
  enum class Destruction {
    Keeps,   ///< Nothing (no destructor of the user's touches it).
    Unknown, ///< A destructor is declared but neither visible nor summarised.
    Ends,    ///< Its destructor (or a member's, a base's) resets it.
  };
  /// Whether the object a construction builds ends the default device's
  /// meta state when it is destroyed, given what its constructor does
  /// (ConstructorSetsMeta): a destructor that resets it ends it, and one
  /// whose behaviour is unknown is assumed to when the constructor set meta
  /// (an RAII session: no finding after its life). False for other calls.
  bool endsWhenDestroyed(const Expr *Call, bool ConstructorSetsMeta,
                         SummaryTable &Table);
  struct DeviceEvents;
  /// The setters, helpers and sessions among Calls (a function's calls).
  DeviceEvents deviceEvents(llvm::ArrayRef<const Expr *> Calls,
                            SummaryTable &Table);
  Destruction destructionEffect(const CXXRecordDecl *RD, SummaryTable &Table);

  bool isSetter(const FunctionDecl *FD) const;
  bool isScopeFunction(const FunctionDecl *FD) const;
  /// Functions that implement meta handling themselves (setters, scope
  /// functions, guard classes, loaders): never analysed or entered.
  bool isMachinery(const FunctionDecl *FD) const;
  /// Whether FD, or a function it is written in (FD being a lambda's call
  /// operator or a local class's method), is machinery / a loader.
  bool isInsideMachinery(const FunctionDecl *FD) const;
  bool isInsideLoader(const FunctionDecl *FD) const;
  /// Whether a loader call in F gets a device map: visibly, or from a
  /// helper that builds its options. Its weights are then placed by the map.
  bool hasDeviceMap(const Expr *Call, const FunctionDecl *F,
                    ASTContext &Context);
  /// Whether a call to FD may be followed (into its body or summary).
  bool canEnter(const FunctionDecl *FD) const;
  /// The table shared by the checks for this translation unit, with this
  /// check's facets registered.
  SummaryTable &summaries(ASTContext &Context);
  /// The load that a call to Callee exposes to the caller's meta state of
  /// kind Kind, from Callee's summary; std::nullopt when there is none or it
  /// is deeper than CallDepth.
  std::optional<InnerLoad> exposedLoad(const FunctionDecl *Callee,
                                       Exposure Kind, ASTContext &Context);
  /// The same for a call whose target's summary is S (FreeHop: the target
  /// is plumbing that CallDepth does not count).
  std::optional<InnerLoad> exposedLoad(const FunctionSummary *S, bool FreeHop,
                                       Exposure Kind, ASTContext &Context);
  /// The innermost device scope live at S in F (a guard variable, a guard
  /// held in an engaged std::optional / std::unique_ptr, or a guard passed
  /// to F by reference).
  std::optional<LiveGuard> liveGuardAt(const Stmt *S, const FunctionDecl *F,
                                       ASTContext &Context);

  void analyzeFunction(const FunctionDecl *F, const LambdaExpr *Lambda,
                       ASTContext &Context);
  std::optional<MetaContext> lambdaContext(const LambdaExpr *Lambda,
                                           ASTContext &Context);
  /// A load that runs under a meta scope somewhere inside F (a loader's own
  /// implementation), e.g. from_pretrained<M> building M on meta when M's
  /// constructor loads a pretrained part.
  std::optional<InnerLoad> findMetaLoadWithin(const FunctionDecl *F,
                                              unsigned Depth, unsigned FreeHops,
                                              ASTContext &Context);
  void checkLoaderBuildsOnMeta(const CallExpr *Call, ASTContext &Context);
  void noteInnerLoad(const InnerLoad &Inner, SourceLocation Call);
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

  class DefaultDeviceFacet;
  class LoadsFacet;
  std::unique_ptr<DefaultDeviceFacet> DeviceFacetImpl;
  std::unique_ptr<LoadsFacet> LoadsFacetImpl;
  ReturnedOptionsFacet OptionsFacetImpl;

  // Per translation unit.
  std::shared_ptr<SummaryTable> Summaries;
  CfgCache Cfgs;
  FunctionIndex Functions;
  LiveGuardFinder LiveGuards{Guards, Functions.parents()};
  llvm::DenseSet<const FunctionDecl *> Analyzed;
  llvm::DenseSet<SourceLocation> Reported;
  using WithinKey = std::tuple<const FunctionDecl *, unsigned, unsigned>;
  std::map<WithinKey, std::optional<InnerLoad>> WithinMemo;
  llvm::DenseSet<const FunctionDecl *> WithinInProgress;
  llvm::DenseMap<const CXXRecordDecl *, Destruction> Destructions;
  OwningFactories Owning;

  /// Whole-program mode: SummaryFile / ExportSummaries.
  WholeProgramFacts Facts;
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_FROMPRETRAINEDINMETASCOPECHECK_H
