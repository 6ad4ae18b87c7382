//===--- OffloadedParameterReporter.cpp - metaguard-tidy -------*- C++ -*-===//

#include "OffloadedParameterReporter.h"
#include "utils/analysis/NameList.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/DeclCXX.h"
#include "clang/Basic/SourceManager.h"
#include "llvm/ADT/Twine.h"

namespace clang::tidy::metaguard {

using offload::Dispatch;
using offload::ModelEvent;
using offload::Mutation;
using offload::MutationKind;

namespace {

// The warnings of one kind of mistake end alike, whether the code makes it
// itself or through a helper: the shared endings are written once here.

/// After "moving <model> ...": what is lost, and how to move it instead.
constexpr llvm::StringLiteral MoveLoses =
    "leaves its offloaded parameters behind their hooks as meta tensors whose "
    "weights can no longer be found; change where it runs through the device "
    "map instead: reload it with a new device_map, or call dispatch_model "
    "with a new map";

/// After "... a parameter of <model>": what is lost, and the alternatives.
constexpr llvm::StringLiteral ParameterWriteLoses =
    "behind its offloading hook: the hook loads the offloaded weights into "
    "the tensor it registered, so the parameter is cut off from them or the "
    "change is silently lost; to read or change a copy, use "
    "load_offloaded_parameter, and to move parameters, reload the model or "
    "call dispatch_model with a new device map";

/// Between "... the parameters of <model>" and what is lost when every
/// parameter is written.
constexpr llvm::StringLiteral BetweenForwards =
    " behind their offloading hooks: offloaded parameters are meta tensors "
    "between forwards, so ";

/// After "... hooks of <model> ... needs them": what is lost, and how to
/// avoid it.
constexpr llvm::StringLiteral HooksLost =
    "its offloaded parameters are meta tensors with no way back to their "
    "weights, and dispatching it again cannot find them either: reload the "
    "model with its device map, or read what you need with "
    "load_offloaded_parameter before removing the hooks";

/// A warning's text: its own beginning, then the shared ending(s).
std::string message(llvm::StringRef Head, llvm::StringRef Tail,
                    llvm::StringRef End = "") {
  return (llvm::Twine(Head) + Tail + End).str();
}

/// "dispatched model 'm'" or "'m.encoder' of dispatched model 'm'".
std::string describe(const ModuleRef &Ref) {
  std::string Model = "dispatched model '" + Ref.Root->getNameAsString() + "'";
  if (Ref.isRoot())
    return Model;
  return "'" + Ref.displayName() + "' of " + Model;
}

} // namespace

bool OffloadedParameterReporter::claim(SourceLocation Loc) {
  return Loc.isValid() && Reported.insert(Loc).second;
}

bool OffloadedParameterReporter::reportMove(const ModelEvent &Move,
                                            const Dispatch &D,
                                            const SummaryTable &Table,
                                            const CXXMethodDecl *DispatchedIn) {
  SourceLocation Loc = Table.fileLocOf(Move.S);
  if (!claim(Loc))
    return false;
  if (Move.Via) {
    Check.diag(Loc, message("'%0' moves %1 (with '%2'), which ", MoveLoses))
        << Move.Function << describe(Move.Ref) << Move.Via->What
        << Move.S->getSourceRange();
    noteVia(*Move.Via, HelperEffect::Moves, Table);
  } else {
    Check.diag(Loc, message("moving %0 with 'to' ", MoveLoses))
        << describe(Move.Ref) << Move.S->getSourceRange();
  }
  noteDispatch(D, Table);
  noteLaterMethod(DispatchedIn);
  return true;
}

bool OffloadedParameterReporter::reportMutation(
    const Mutation &M, const Dispatch &D, const SummaryTable &Table,
    const CXXMethodDecl *DispatchedIn) {
  if (!claim(Table.fileLocOf(M.S)))
    return false;
  warnMutation(M, Table);
  noteDispatch(D, Table);
  noteLaterMethod(DispatchedIn);
  return true;
}

void OffloadedParameterReporter::warnMutation(const Mutation &M,
                                              const SummaryTable &Table) {
  SourceLocation Loc = Table.fileLocOf(M.S);
  if (M.Via) {
    Check.diag(Loc, message("'%0' changes a parameter of %1 in place (with "
                            "'%2'), ",
                            ParameterWriteLoses))
        << M.Function << describe(M.Owner) << M.Via->What
        << M.S->getSourceRange();
    noteVia(*M.Via, HelperEffect::ChangesParameter, Table);
  } else if (M.Kind == MutationKind::Optimizer) {
    Check.diag(Loc, message("'step' of an optimizer over the parameters of "
                            "%0 updates them in place",
                            BetweenForwards,
                            "every update of them is lost; train a model "
                            "loaded without offloading (reload it, or call "
                            "dispatch_model with an in-memory map first)"))
        << describe(M.Owner) << M.S->getSourceRange();
    noteOptimizer(M);
  } else if (M.Kind == MutationKind::Load) {
    Check.diag(Loc, message("'%0' writes a checkpoint into the parameters of "
                            "%1",
                            BetweenForwards,
                            "their new values are lost; load the weights "
                            "before dispatching, or reload the model from "
                            "the checkpoint with its device map"))
        << M.Function << describe(M.Owner) << M.S->getSourceRange();
  } else {
    Check.diag(Loc, message("%select{'%1' on|assigning to|re-registering}0 a "
                            "parameter of %2 goes ",
                            ParameterWriteLoses))
        << static_cast<int>(M.Kind) << M.Function << describe(M.Owner)
        << M.S->getSourceRange();
  }
}

bool OffloadedParameterReporter::reportHooksNeeded(const ModelEvent &Need,
                                                   const ModelEvent &Removal,
                                                   const Dispatch &D,
                                                   const SummaryTable &Table) {
  SourceLocation Loc = Table.fileLocOf(Need.S);
  if (!claim(Loc))
    return false;
  Check.diag(Loc, message("'%0' needs the offloading hooks of '%1', but they "
                          "were removed on a path to here and the model was "
                          "not dispatched again; ",
                          HooksLost))
      << Need.Function << Need.Ref.displayName() << Need.S->getSourceRange();
  if (Need.Via)
    noteNeedVia(*Need.Via, Table);
  Check.diag(Table.fileLocOf(Removal.S), "'%0' removes the hooks of '%1' here",
             DiagnosticIDs::Note)
      << Removal.Function << Removal.Ref.displayName();
  if (Removal.Via)
    noteVia(*Removal.Via, HelperEffect::RemovesHooks, Table);
  noteDispatch(D, Table);
  return true;
}

bool OffloadedParameterReporter::reportHooksNeededAfterRemoval(
    const ModelEvent &Misuse, const Dispatch &D, const SummaryTable &Table) {
  SourceLocation Loc = Table.fileLocOf(Misuse.S);
  if (!claim(Loc) || !Misuse.Via)
    return false;
  Check.diag(Loc, message("'%0' removes the offloading hooks of %1 and then "
                          "needs them (with '%2'); ",
                          HooksLost))
      << Misuse.Function << describe(Misuse.Ref) << Misuse.Via->NeedsWhat
      << Misuse.S->getSourceRange();
  noteNeedVia(*Misuse.Via, Table);
  noteDispatch(D, Table);
  return true;
}

void OffloadedParameterReporter::noteOptimizer(const Mutation &M) {
  Check.diag(M.Optimizer->getLocation(),
             "the optimizer '%0' is built here from the parameters of '%1'",
             DiagnosticIDs::Note)
      << M.Optimizer->getName() << M.Owner.displayName();
}

void OffloadedParameterReporter::noteLaterMethod(
    const CXXMethodDecl *DispatchedIn) {
  if (!DispatchedIn)
    return;
  const SourceManager &SM = DispatchedIn->getASTContext().getSourceManager();
  Check.diag(SM.getFileLoc(DispatchedIn->getLocation()),
             "the object keeps the model dispatched after '%0' returns, and "
             "this method does not check has_offloaded_parameters first",
             DiagnosticIDs::Note)
      << qualifiedNameOf(DispatchedIn);
}

void OffloadedParameterReporter::noteVia(const ArgumentEffects &Via,
                                         HelperEffect What,
                                         const SummaryTable &Table) {
  SourceLocation Loc = Table.locationOf(Via.At);
  if (Loc.isInvalid())
    return; // In another translation unit: the warning names the callee.
  Check.diag(Loc,
             "%select{it is moved|its parameter is changed|its hooks are "
             "removed}0 here with '%1', in '%2'",
             DiagnosticIDs::Note)
      << static_cast<int>(What) << Via.What << Via.In;
}

void OffloadedParameterReporter::noteNeedVia(const ArgumentEffects &Via,
                                             const SummaryTable &Table) {
  SourceLocation Loc = Table.locationOf(Via.NeedsAt);
  if (Loc.isInvalid())
    return; // In another translation unit: the warning names the callee.
  Check.diag(Loc, "its hooks are needed here by '%0', in '%1'",
             DiagnosticIDs::Note)
      << Via.NeedsWhat << Via.NeedsIn;
}

void OffloadedParameterReporter::noteDispatch(const Dispatch &D,
                                              const SummaryTable &Table) {
  SourceLocation Loc = Table.fileLocOf(D.S);
  switch (D.Source) {
  case DispatchKind::Call:
    Check.diag(Loc, "'%0' is dispatched here by '%1'", DiagnosticIDs::Note)
        << D.Ref.displayName() << D.Function;
    break;
  case DispatchKind::Loader:
    Check.diag(Loc,
               "'%0' is loaded by '%1' with an explicit device map here, "
               "which dispatches it",
               DiagnosticIDs::Note)
        << D.Ref.displayName() << D.Function;
    break;
  case DispatchKind::Factory:
    Check.diag(Loc, "'%0' comes from '%1', which returns a dispatched model",
               DiagnosticIDs::Note)
        << D.Ref.displayName() << D.Function;
    if (D.Inner)
      noteInnerDispatch(*D.Inner, D.Function, Table, 0);
    else
      noteExternalChain(D.ExternalChain, D.Function, Table, 0);
    break;
  }
}

void OffloadedParameterReporter::noteInnerDispatch(const Dispatch &D,
                                                   llvm::StringRef Factory,
                                                   const SummaryTable &Table,
                                                   unsigned Depth) {
  noteDispatchStep(Table.fileLocOf(D.S), D.Source, Factory, D.Function);
  if (D.Source != DispatchKind::Factory || Depth >= offload::MaxFactoryDepth)
    return;
  if (D.Inner)
    noteInnerDispatch(*D.Inner, D.Function, Table, Depth + 1);
  else
    noteExternalChain(D.ExternalChain, D.Function, Table, Depth + 1);
}

void OffloadedParameterReporter::noteExternalChain(
    llvm::ArrayRef<DispatchStep> Chain, llvm::StringRef Factory,
    const SummaryTable &Table, unsigned Depth) {
  // The same notes as for a factory whose body is visible, one per step,
  // each in the function the previous step calls.
  for (const DispatchStep &Step : Chain) {
    SourceLocation Loc = Table.locationOf(Step.At);
    if (Loc.isInvalid() || Depth > offload::MaxFactoryDepth)
      return;
    noteDispatchStep(Loc, Step.How, Factory, Step.With);
    if (Step.How != DispatchKind::Factory)
      return;
    Factory = Step.With;
    ++Depth;
  }
}

void OffloadedParameterReporter::noteDispatchStep(SourceLocation Loc,
                                                  DispatchKind How,
                                                  llvm::StringRef Factory,
                                                  llvm::StringRef With) {
  switch (How) {
  case DispatchKind::Call:
    Check.diag(Loc, "'%0' dispatches it here with '%1'", DiagnosticIDs::Note)
        << Factory << With;
    break;
  case DispatchKind::Loader:
    Check.diag(Loc,
               "'%0' loads it with '%1' and an explicit device map here, "
               "which dispatches it",
               DiagnosticIDs::Note)
        << Factory << With;
    break;
  case DispatchKind::Factory:
    Check.diag(Loc, "'%0' gets it from '%1' here", DiagnosticIDs::Note)
        << Factory << With;
    break;
  }
}

} // namespace clang::tidy::metaguard
