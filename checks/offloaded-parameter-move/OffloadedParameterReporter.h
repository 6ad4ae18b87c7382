//===--- OffloadedParameterReporter.h - metaguard-tidy ---------*- C++ -*-===//
//
// The diagnostics of metaguard-offloaded-parameter-move: one warning per
// mistake the finder establishes, with its notes (the dispatch and the
// factories it came through, the place inside a helper, the hook removal,
// the method that dispatched a member model). Every message text is here.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_OFFLOADED_PARAMETER_MOVE_OFFLOADEDPARAMETERREPORTER_H
#define METAGUARD_CHECKS_OFFLOADED_PARAMETER_MOVE_OFFLOADEDPARAMETERREPORTER_H

#include "OffloadedParameterEvents.h"

#include "clang-tidy/ClangTidyCheck.h"
#include "llvm/ADT/DenseSet.h"

namespace clang::tidy::metaguard {

/// Emits the check's diagnostics through the check's diag(). Summary
/// locations (the place inside a helper, a factory of another file) are
/// resolved through the summary table each report is given.
class OffloadedParameterReporter {
public:
  explicit OffloadedParameterReporter(ClangTidyCheck &Check) : Check(Check) {}

  // Each report returns whether it was made: a site is reported once,
  // whichever of its template instantiations or macro expansions comes first.

  /// Moving a dispatched model. DispatchedIn: the other method of the class
  /// that dispatched the member model moved here, if any.
  bool reportMove(const offload::ModelEvent &Move, const offload::Dispatch &D,
                  const SummaryTable &Table,
                  const CXXMethodDecl *DispatchedIn = nullptr);
  /// Writing, replacing or moving a parameter of a dispatched model.
  bool reportMutation(const offload::Mutation &M, const offload::Dispatch &D,
                      const SummaryTable &Table,
                      const CXXMethodDecl *DispatchedIn = nullptr);
  /// Needing the hooks of a model after Removal stripped them.
  bool reportHooksNeeded(const offload::ModelEvent &Need,
                         const offload::ModelEvent &Removal,
                         const offload::Dispatch &D, const SummaryTable &Table);
  /// A helper that removes the hooks of a dispatched model and then needs
  /// them (Misuse.Via says where).
  bool reportHooksNeededAfterRemoval(const offload::ModelEvent &Misuse,
                                     const offload::Dispatch &D,
                                     const SummaryTable &Table);

  /// Forgets the sites reported in the translation unit.
  void clear() { Reported.clear(); }

private:
  /// What a helper does at the place a note points at.
  enum class HelperEffect { Moves, ChangesParameter, RemovesHooks };

  /// Whether nothing was reported at Loc yet; records it.
  bool claim(SourceLocation Loc);
  /// The warning about M, without its notes.
  void warnMutation(const offload::Mutation &M, const SummaryTable &Table);
  void noteVia(const ArgumentEffects &Via, HelperEffect What,
               const SummaryTable &Table);
  /// Where a helper uses the hooks (ArgumentEffects::NeedsAt).
  void noteNeedVia(const ArgumentEffects &Via, const SummaryTable &Table);
  void noteOptimizer(const offload::Mutation &M);
  void noteLaterMethod(const CXXMethodDecl *DispatchedIn);
  void noteDispatch(const offload::Dispatch &D, const SummaryTable &Table);
  void noteInnerDispatch(const offload::Dispatch &D, llvm::StringRef Factory,
                         const SummaryTable &Table, unsigned Depth);
  void noteExternalChain(llvm::ArrayRef<DispatchStep> Chain,
                         llvm::StringRef Factory, const SummaryTable &Table,
                         unsigned Depth);
  void noteDispatchStep(SourceLocation Loc, DispatchKind How,
                        llvm::StringRef Factory, llvm::StringRef With);

  ClangTidyCheck &Check;
  llvm::DenseSet<SourceLocation> Reported;
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_OFFLOADED_PARAMETER_MOVE_OFFLOADEDPARAMETERREPORTER_H
