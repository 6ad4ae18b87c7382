//===--- FunctionSummaries.h - metaguard-tidy ------------------*- C++ -*-===//
//
// Computes FunctionSummary facts bottom-up over the translation unit's call
// graph, on demand: asking for one function's summary summarises what it
// calls first, one strongly connected component at a time (Tarjan), and
// iterates inside a component until its facts stop changing, so recursion
// converges instead of being cut at a depth.
//
// The facts themselves are computed by facets that the checks register (each
// check knows its own options: which calls load, set the default device,
// dispatch...). Each facet fills its own facts of a FunctionSummary, and one
// table is shared by every check in a translation unit, so the call graph,
// USRs and results are computed once.
//
// Functions without a body in this translation unit can be given summaries
// from elsewhere (a facts file, WholeProgram.h) by USR.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_SUMMARIES_FUNCTIONSUMMARIES_H
#define METAGUARD_CHECKS_UTILS_SUMMARIES_FUNCTIONSUMMARIES_H

#include "utils/analysis/CallableStores.h"
#include "utils/summaries/FunctionSummary.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"
#include "clang/AST/DeclCXX.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

#include <functional>
#include <memory>
#include <vector>

namespace clang::tidy::metaguard {

class SummaryTable;

/// The transfer function of one facet: the facts of a function from its own
/// code and the current facts of its callees. The facts themselves are the
/// facet's struct (FunctionSummary.h); facets may read other facets' facts
/// of callees, but no cycle between facets.
class SummaryFacet {
public:
  virtual ~SummaryFacet() = default;
  /// The facts this facet computes.
  virtual const FacetKind &kind() const = 0;
  /// Whether a call to FD (which has a body) is followed into FD.
  virtual bool follows(const FunctionDecl *FD) const = 0;
  /// Fills in this facet's facts of Out (which has none yet) from F's body;
  /// callee facts come from Table.lookup().
  virtual void summarise(const FunctionDecl *F, FunctionSummary &Out,
                         SummaryTable &Table) = 0;
};

/// A facet computing the facts struct Facts.
template <typename Facts> class SummaryFacetFor : public SummaryFacet {
public:
  const FacetKind &kind() const override { return facetKind<Facts>(); }
};

class SummaryTable {
public:
  explicit SummaryTable(ASTContext &Context) : Context(Context) {}

  /// Registers F for its kind of facts (the first registration wins; facets
  /// are owned by the checks, which outlive the table).
  void setFacet(SummaryFacet *F);
  bool hasFacet(const FacetKind &K) const { return Facets[K.id()] != nullptr; }
  template <typename Facts> bool hasFacet() const {
    return hasFacet(facetKind<Facts>());
  }

  /// The summary of FD with facet K computed, or nullptr when there is none:
  /// FD has no body here and no external summary, facet K is not registered,
  /// or K does not follow FD. A function whose summary is being computed
  /// (recursion) gives its current approximation.
  const FunctionSummary *lookup(const FunctionDecl *FD, const FacetKind &K);
  template <typename Facts>
  const FunctionSummary *lookup(const FunctionDecl *FD) {
    return lookup(FD, facetKind<Facts>());
  }

  /// A summary from outside this translation unit, used for functions that
  /// have no body here (matched by USR). A later one for the same USR
  /// replaces an earlier one.
  void addExternal(FunctionSummary S);
  /// A fallback asked for USRs that addExternal did not provide.
  void setExternalLookup(
      std::function<const FunctionSummary *(llvm::StringRef USR)> Fn) {
    ExternalLookup = std::move(Fn);
  }
  /// Where the overrides defined in other translation units come from: the
  /// summaries of the overrides of the method with this USR, at any depth.
  void setExternalOverrides(
      std::function<std::vector<const FunctionSummary *>(llvm::StringRef USR)>
          Fn) {
    ExternalOverrides = std::move(Fn);
  }

  /// Calls Fn for every function of this translation unit whose summary was
  /// computed (for some facet) and says something, with its USR and name
  /// filled in (for export). Only the facets that were asked for are
  /// computed: an exporter asks lookup() for each facet of the functions it
  /// wants first.
  void forEachComputed(
      llvm::function_ref<void(const FunctionDecl *, const FunctionSummary &)>
          Fn);

  /// Where the stores of other translation units come from: the summaries
  /// of the functions they store into the std::function variable, member or
  /// table with this USR.
  void setExternalStores(
      std::function<std::vector<const FunctionSummary *>(llvm::StringRef USR)>
          Fn) {
    ExternalStores = std::move(Fn);
  }

  /// The functions a call may run: its callee (calledFunction), for a
  /// virtual call (not qualified, not of a final method or class) every
  /// override of the callee declared outside system headers in this
  /// translation unit, and for a call through a std::function member or an
  /// element of a table of them every function this translation unit stores
  /// there (CallableStores). Empty when the callee is not known.
  llvm::SmallVector<const FunctionDecl *, 2> callTargets(const Expr *Call);

  /// For a virtual call (as callTargets decides), the summaries of the
  /// overrides that other translation units define and this one does not
  /// declare, from the SummaryFile: such an override counts as one declared
  /// here. For a call through a std::function slot, the summaries of the
  /// functions other translation units store there and this one does not.
  /// Empty for other calls.
  std::vector<const FunctionSummary *> externalTargets(const Expr *Call);

  /// The USR of D ("" when Clang cannot make one).
  static std::string usrOf(const Decl *D);
  /// Where L is, as a file path, line and column (of its file location).
  SourceRef refOf(SourceLocation L) const;
  /// Where S begins in its file (out of any macro it was expanded from): the
  /// place a diagnostic about S points at.
  SourceLocation fileLocOf(const Stmt *S) const;
  /// The location of R in this translation unit, or an invalid location when
  /// its file is not part of it.
  SourceLocation locationOf(const SourceRef &R) const;

  ASTContext &context() const { return Context; }
  /// What the translation unit stores into std::function variables, members
  /// and tables: the targets of calls through them, and of thread bodies
  /// given as one (invokedCallable).
  CallableStores &callableStores() { return Stores; }

  /// The functions this table was asked about that have no body here (their
  /// summaries come from other translation units, if at all), and the
  /// methods called virtually (their overrides may live in other
  /// translation units): canonical declarations. What a facts file lists as
  /// the TU's uses, so that the TU is checked again when their summaries
  /// change, however the call was reached (a constructor run by
  /// std::make_shared in a system header counts).
  const llvm::DenseSet<const FunctionDecl *> &usedElsewhere() const {
    return UsedElsewhere;
  }
  /// The std::function variables, members and tables that calls of this
  /// translation unit go through (other translation units may store into
  /// them): listed as uses too.
  const llvm::DenseSet<const ValueDecl *> &slotsUsed() const {
    return SlotsUsed;
  }

private:
  struct Entry {
    FunctionSummary Summary;
    std::vector<const FunctionDecl *> Callees;
    bool CalleesKnown = false;
    unsigned Done = 0;       ///< Bit per facet: final.
    unsigned InProgress = 0; ///< Bit per facet: on a Tarjan stack.
  };
  struct TarjanState {
    const FacetKind *K = nullptr;
    llvm::DenseMap<const FunctionDecl *, std::pair<unsigned, unsigned>>
        IndexLow;
    std::vector<const FunctionDecl *> Stack;
    unsigned Counter = 0;
  };

  Entry &entry(const FunctionDecl *Def);
  const std::vector<const FunctionDecl *> &callees(const FunctionDecl *Def);
  void visit(const FunctionDecl *Def, TarjanState &State, unsigned Depth);
  void solve(llvm::ArrayRef<const FunctionDecl *> Component,
             const FacetKind &K);
  const FunctionSummary *external(const FunctionDecl *FD);

  void indexOverrides();
  /// The method a call dispatches on, when it is virtual (not qualified, not
  /// of a final method or class); nullptr otherwise.
  const CXXMethodDecl *virtualCallee(const Expr *Call) const;
  /// The std::function variable, member or table a call goes through;
  /// nullptr for other calls.
  static const ValueDecl *storedSlot(const Expr *Call);

  ASTContext &Context;
  SummaryFacet *Facets[FacetKind::MaxFacets] = {};
  bool OverridesIndexed = false;
  CallableStores Stores{Context};
  /// Method -> the methods that override it directly.
  llvm::DenseMap<const CXXMethodDecl *,
                 llvm::SmallVector<const CXXMethodDecl *, 2>>
      Overrides;
  llvm::DenseMap<const FunctionDecl *, std::unique_ptr<Entry>> Entries;
  llvm::StringMap<FunctionSummary> Externals;
  llvm::DenseSet<const FunctionDecl *> UsedElsewhere;
  llvm::DenseSet<const ValueDecl *> SlotsUsed;
  std::function<const FunctionSummary *(llvm::StringRef)> ExternalLookup;
  std::function<std::vector<const FunctionSummary *>(llvm::StringRef)>
      ExternalOverrides;
  std::function<std::vector<const FunctionSummary *>(llvm::StringRef)>
      ExternalStores;
};

/// The table of Context's translation unit, shared by every check that asks
/// for it while it is alive: the first caller creates it, and it is freed
/// when the last holder lets it go (each check drops it at the end of the
/// translation unit).
std::shared_ptr<SummaryTable> sharedSummaryTable(ASTContext &Context);

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_SUMMARIES_FUNCTIONSUMMARIES_H
