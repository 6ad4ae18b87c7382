//===--- AmbientDevice.h - metaguard-tidy ----------------------*- C++ -*-===//
//
// Where the meta device is ambient in the user's code, for every check that
// asks whether a statement runs on meta: inside a live meta-device scope (a
// guard variable, a guard held in an engaged std::optional or
// std::unique_ptr, a guard passed in by reference), in a lambda that a scope
// function runs, or where a default-device setter call with a meta device
// reaches — directly, or through helpers, constructors and RAII sessions
// that leave the default device meta (their DeviceFacts, computed by the
// facet this class holds). The innermost scope wins over the default
// device, as at run time.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_DOMAIN_AMBIENTDEVICE_H
#define METAGUARD_CHECKS_UTILS_DOMAIN_AMBIENTDEVICE_H

#include "utils/analysis/CfgReachability.h"
#include "utils/analysis/NameList.h"
#include "utils/analysis/StmtParents.h"
#include "utils/domain/LoaderCalls.h"
#include "utils/domain/OwningFactories.h"
#include "utils/domain/ScopeGuards.h"
#include "utils/summaries/FunctionSummaries.h"

#include "clang/AST/StmtCXX.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace clang::tidy::metaguard {

/// How far AmbientDevice's walks over the AST go. Each bounds a climb that
/// real code ends in a few steps, so that a pathological AST (or a cycle the
/// parent map should not have) cannot make a check hang.
namespace ambient_limits {
/// Parents climbed from a statement to the try block that holds it.
inline constexpr unsigned TryBlockParents = 256;
/// Guards held in holders (std::optional, std::unique_ptr) followed outwards
/// to the one that is engaged.
inline constexpr unsigned NestedGuardHolders = 64;
/// Conversions and temporaries climbed from a lambda to the call it is
/// given to.
inline constexpr unsigned LambdaToCall = 8;
/// Temporaries, casts, `new` and holder constructions looked through to the
/// session a holder is given.
inline constexpr unsigned SessionPlumbing = 8;
} // namespace ambient_limits

class AmbientDevice {
public:
  /// Why the meta device is ambient at a statement.
  enum class Source {
    /// A live guard variable (OriginDecl is its VarDecl).
    ScopeGuard,
    /// The enclosing lambda is run by a MetaScopeFunctions call (OriginStmt
    /// is that call).
    ScopeFunction,
    /// A DefaultDeviceSetters call with a meta device reaches the statement
    /// (OriginStmt is that call).
    DefaultDevice,
  };
  struct Origin {
    Source Kind;
    const Decl *OriginDecl = nullptr;
    const Stmt *OriginStmt = nullptr;
    /// DefaultDevice through a helper that leaves it meta (OriginStmt is the
    /// call): the helper and the setter inside it.
    std::string Helper;
    SourceLocation InnerSetter;
    /// The helper is a constructor whose object's destruction ends the
    /// state: it lasts for the object's life.
    bool UntilDestroyed = false;
    /// A call on the way that ends the state through some of the functions
    /// it may run only, and the one of them that keeps it.
    const Stmt *KeptAt = nullptr;
    std::string KeptBy{};
    /// The meta setting reaches only through an exception, by this handler
    /// (which does not reset the default device).
    const CXXCatchStmt *Handler = nullptr;
    /// The helper is given a meta device for its parameter Parameter by
    /// this argument (a CXXDefaultArgExpr for its default argument).
    const Expr *MetaArgument = nullptr;
    std::string Parameter{};
  };

  /// What a call to a helper (any function it may run) does to the default
  /// device: Meta when some target may leave it meta (At: the setter), else
  /// an end of the state when every target restores it or sets an unknown
  /// device.
  struct HelperEffect {
    bool Meta = false;
    bool Unknown = false;
    std::string Target; ///< The target that decides, for notes.
    SourceRef At;
    /// Meta by the argument the call gives the target's parameter (a
    /// default argument, CXXDefaultArgExpr, when it is left out).
    const Expr *MetaArgument = nullptr;
    std::string Parameter{};
    /// Not meta by itself, but the target sets the device one of the
    /// caller's parameters gives (passed on as it is), with the setter.
    const ParmVarDecl *Forwarded = nullptr;
    SourceRef ForwardedAt{};
  };

  /// A setting of the default device to what a parameter of the function
  /// making it gives: a setter call, or a helper call (At: its setter).
  struct ParameterSetting {
    const Stmt *Setting;
    const ParmVarDecl *Param;
    SourceRef At;
  };

  /// How a function's own calls change the default device.
  struct DeviceEvents {
    /// Setter calls and helpers that may leave it meta.
    llvm::SmallVector<const Stmt *, 4> Gens;
    /// Setter calls and helpers that end it (a reset, another device, or
    /// one not known).
    llvm::SmallVector<const Stmt *, 4> Kills;
    /// Constructions whose object's destruction ends it (RAII sessions).
    llvm::SmallVector<const Expr *, 2> Ended;
    /// Sessions a local holder took over (std::optional, std::unique_ptr,
    /// a raw pointer): the holder's end and emptying end them instead.
    llvm::SmallVector<const Expr *, 1> Held;
    /// The helper behind each gen or kill that is not a setter call.
    llvm::DenseMap<const Stmt *, HelperEffect> Helpers;
    /// Calls that end it through some targets only: the target that keeps
    /// it (which is why the call is neither a gen nor a kill).
    llvm::SmallVector<std::pair<const Stmt *, std::string>, 1> KeptBy;
    bool UnknownKill = false; ///< A kill sets a device that is not known.
    /// Kills that set what a parameter gives.
    llvm::SmallVector<ParameterSetting, 1> FromParameters;
  };

  /// One function's view: where the meta device is ambient at its calls.
  class InFunction {
  public:
    /// The calls of the function, in source order.
    const std::vector<const Expr *> &calls() const { return Calls; }
    /// Where the meta device comes from at Call, or nullopt when it is not
    /// ambient there (no source reaches it, or the innermost scope live
    /// there is not a meta one).
    std::optional<Origin> at(const Expr *Call);
    /// Where a meta default device comes from at Call, whatever scope is
    /// live there: what a thread started at Call inherits (scopes are the
    /// calling thread's own; the default device is the process's).
    std::optional<Origin> defaultDeviceAt(const Expr *Call);

  private:
    friend class AmbientDevice;
    InFunction(AmbientDevice &Ambient, const FunctionDecl *F,
               std::optional<Origin> Top, SummaryTable &Table,
               ASTContext &Context);
    AmbientDevice &Ambient;
    const FunctionDecl *F;
    std::optional<Origin> Top;
    SummaryTable &Table;
    ASTContext &Context;
    std::vector<const Expr *> Calls;
    DeviceEvents Events;
    const CfgReachability *Cfg = nullptr;
  };

  /// From the check's options (each a ';'-separated list of names).
  AmbientDevice(llvm::StringRef LoaderFunctions, llvm::StringRef MetaScopeTypes,
                llvm::StringRef DeviceScopeTypes,
                llvm::StringRef MetaScopeFunctions,
                llvm::StringRef DefaultDeviceSetters);
  ~AmbientDevice();

  const LoaderMatcher &loaders() const { return Loaders; }
  const ScopeGuardClassifier &guards() const { return Guards; }
  const NameList &setters() const { return Setters; }
  const NameList &scopeFunctions() const { return ScopeFunctions; }

  bool isSetter(const FunctionDecl *FD) const;
  bool isScopeFunction(const FunctionDecl *FD) const;
  /// Functions that implement meta handling themselves (setters, scope
  /// functions, guard classes, loaders): never analysed or entered.
  bool isMachinery(const FunctionDecl *FD) const;
  /// Whether FD, or a function it is written in (FD being a lambda's call
  /// operator or a local class's method), is machinery / a loader.
  bool isInsideMachinery(const FunctionDecl *FD) const;
  bool isInsideLoader(const FunctionDecl *FD) const;
  /// Whether a call to FD may be followed (into its body or summary).
  bool canEnter(const FunctionDecl *FD) const { return FD && !isMachinery(FD); }

  /// The facet that computes DeviceFacts, for the summary table.
  SummaryFacet *facet();

  /// Whether a variable of the user's code is where the meta device becomes
  /// ambient: a local meta guard (or a holder a meta guard engages), or a
  /// guard passed by reference to a function, which then runs inside its
  /// scope.
  bool isSourceGuard(const VarDecl *Var) const;
  /// For a match of UserCodeMatchers (the user's calls, constructions and
  /// variables, outside system headers): the functions in which the meta
  /// device is then ambient somewhere (the lambdas a scope function runs,
  /// then the function around a source guard, a meta default-device setter
  /// call, a call of a helper or a constructor of the user's that may leave
  /// it meta, a scope function's call), each once per match; empty when the
  /// match makes nothing meta. LibTorch's and the standard library's own
  /// code is never where the mistake is written.
  llvm::SmallVector<EnclosingFunction, 2>
  functionsWithSource(const ast_matchers::MatchFinder::MatchResult &Result,
                      SummaryTable &Table);
  /// For a match of UserCodeMatchers: the call of a function or constructor
  /// of the user's it matched (std::make_unique and kin included), or
  /// nullptr.
  static const Expr *
  matchedCall(const ast_matchers::MatchFinder::MatchResult &Result);

  /// KeptBy, when given, is set to the target that keeps the default
  /// device as it is when other targets of the call end its meta state (a
  /// virtual call whose overrides do not all reset it).
  /// Caller, when given, is the function making the call: a data member its
  /// constructor initialises from a parameter passes that parameter on.
  std::optional<HelperEffect>
  helperEffect(const Expr *Call, SummaryTable &Table,
               std::string *KeptBy = nullptr,
               const FunctionDecl *Caller = nullptr);
  /// The setters, helpers and sessions among Calls (the calls of F).
  DeviceEvents deviceEvents(const FunctionDecl *F,
                            llvm::ArrayRef<const Expr *> Calls,
                            SummaryTable &Table);
  /// The innermost device scope live at S in F (a guard variable, a guard
  /// held in an engaged std::optional / std::unique_ptr, or a guard passed
  /// to F by reference).
  std::optional<LiveGuard> liveGuardAt(const Stmt *S, const FunctionDecl *F,
                                       ASTContext &Context);
  /// Lambda (F's body, when F is its call operator) when a scope function
  /// runs it: meta throughout.
  std::optional<Origin> lambdaOrigin(const LambdaExpr *Lambda,
                                     ASTContext &Context);
  InFunction inFunction(const FunctionDecl *F, const LambdaExpr *Lambda,
                        SummaryTable &Table, ASTContext &Context);

  CfgCache &cfgs() { return Cfgs; }
  FunctionIndex &functions() { return Functions; }
  OwningFactories &owning() { return Owning; }
  /// At the end of a translation unit.
  void clear();

private:
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
  Destruction destructionEffect(const CXXRecordDecl *RD, SummaryTable &Table);
  /// For sessions that Events ends on destruction and that F puts into a
  /// local holder: the holder's emptying statements (reset(), `=
  /// std::nullopt`, `= {}`, `= nullptr`, `delete`) and its own end end them
  /// instead of the end of the temporary it took them from.
  void addHeldSessionEnds(const FunctionDecl *F, DeviceEvents &Events);

  class DeviceFacet;

  const std::string LoaderFunctionsOption;
  const std::string MetaScopeTypesOption;
  const std::string DeviceScopeTypesOption;
  const std::string MetaScopeFunctionsOption;
  const std::string DefaultDeviceSettersOption;
  LoaderMatcher Loaders;
  ScopeGuardClassifier Guards;
  NameList ScopeFunctions;
  NameList Setters;
  std::unique_ptr<DeviceFacet> Facet;

  // Per translation unit.
  CfgCache Cfgs;
  FunctionIndex Functions;
  LiveGuardFinder LiveGuards{Guards, Functions.parents()};
  llvm::DenseMap<const CXXRecordDecl *, Destruction> Destructions;
  OwningFactories Owning;
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_DOMAIN_AMBIENTDEVICE_H
