//===--- EmptyModelReporter.cpp - metaguard-tidy ---------------*- C++ -*-===//

#include "EmptyModelReporter.h"
#include "utils/domain/AmbientDeviceNotes.h"

#include "clang/AST/ASTContext.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/Twine.h"

namespace clang::tidy::metaguard {

using emptymodel::Gen;
using emptymodel::Use;
using emptymodel::UseKind;

namespace {

/// Every warning ends alike, whatever the use: why, and what to do.
constexpr llvm::StringLiteral NoWeights =
    " before it has weights: it was built on the meta device, and nothing "
    "gives it weights on a path to here; load them first (load_weights, "
    "torch::load, load_checkpoint_and_dispatch, dispatch_model, or to_empty "
    "and initialisation)";

/// The same for a model given memory but no values.
constexpr llvm::StringLiteral NoValues =
    " before its values are initialised: to_empty gave it memory, not "
    "weights, and nothing initialises or loads it on a path to here; "
    "initialise it (reset_parameters, apply with an init function, "
    "torch::nn::init over its parameters()) or load its weights (load_weights, "
    "load_state_dict, torch::load) first";

AmbientDevice::Source sourceOf(EmptyScope Scope) {
  switch (Scope) {
  case EmptyScope::Guard:
    return AmbientDevice::Source::ScopeGuard;
  case EmptyScope::ScopeFunction:
    return AmbientDevice::Source::ScopeFunction;
  case EmptyScope::DefaultDevice:
    return AmbientDevice::Source::DefaultDevice;
  }
  return AmbientDevice::Source::ScopeGuard;
}

} // namespace

bool EmptyModelReporter::firstAt(SourceLocation Loc) {
  return Loc.isValid() && Reported.insert(Loc).second;
}

void EmptyModelReporter::emptyModelUsed(const Use &U, const Gen &G,
                                        const std::optional<LoadFirst> &Fix,
                                        const SummaryTable &Table) {
  const SourceLocation Loc = Table.fileLocOf(U.S);
  if (!firstAt(Loc))
    return;
  warnAtUse(U, "empty model", NoWeights, Loc);
  noteUse(U, Table);
  noteBuilt(G, Table);
  if (Fix && Fixed.insert(G.S).second)
    noteLoadFirst(*Fix, Loc, Table.context());
}

void EmptyModelReporter::uninitialisedModelUsed(const Use &U, const Gen &G,
                                                const Gen *Before,
                                                const SummaryTable &Table) {
  const SourceLocation Loc = Table.fileLocOf(U.S);
  if (!firstAt(Loc))
    return;
  warnAtUse(U, "model", NoValues, Loc);
  noteUse(U, Table);
  noteMemory(G, Table);
  if (Before)
    noteBuilt(*Before, Table);
}

void EmptyModelReporter::warnAtUse(const Use &U, llvm::StringRef Noun,
                                   llvm::StringRef Why, SourceLocation Loc) {
  const std::string Model = (Noun + " '" + U.Ref.displayName() + "'").str();
  if (U.Kind == UseKind::Call)
    Check.diag(Loc, (llvm::Twine("'%0' uses %1 (with '%2')") + Why).str())
        << U.Function << Model << (U.Via ? U.Via->What : "")
        << U.S->getSourceRange();
  else
    Check.diag(Loc, (llvm::Twine("%select{running the forward pass of|moving|"
                                 "calling '%2' on|'%2' reads a parameter of|"
                                 "printing a parameter of|'step' of an "
                                 "optimizer updates the parameters of}0 %1") +
                     Why)
                        .str())
        << static_cast<unsigned>(U.Kind) << Model << U.Function
        << U.S->getSourceRange();
}

void EmptyModelReporter::noteMemory(const Gen &G, const SummaryTable &Table) {
  const SourceLocation At = Table.fileLocOf(G.How.At);
  if (!G.How.Inner) {
    Check.diag(At,
               "'%0' is given memory here by '%1', which leaves its values "
               "uninitialised",
               DiagnosticIDs::Note)
        << G.Ref.displayName() << G.How.Through;
    return;
  }
  const BuiltOrigin &O = *G.How.Inner;
  Check.diag(At,
             "'%0' %select{gives '%1' memory|returns a model it gives memory|"
             "gives member model '%2' memory}3 without initialising it",
             DiagnosticIDs::Note)
      << G.How.Through << G.Ref.displayName() << G.How.Member
      << (G.How.Member.empty() ? (G.How.IfEmptyBefore ? 0 : 1) : 2);
  SourceLocation Memory = Table.locationOf(O.MemoryAt);
  if (Memory.isValid())
    Check.diag(Memory, "it is given memory here, in '%0'", DiagnosticIDs::Note)
        << O.MemoryIn;
  if (O.ScopeAt.valid())
    noteInnerOrigin(O, Table);
}

void EmptyModelReporter::noteUse(const Use &U, const SummaryTable &Table) {
  if (U.Kind == UseKind::OptimizerStep && U.Optimizer)
    Check.diag(U.Optimizer->getLocation(),
               "the optimizer '%0' is built here over the parameters of '%1'",
               DiagnosticIDs::Note)
        << U.Optimizer->getName() << U.Ref.displayName();
  if (!U.Via)
    return;
  // A use in another translation unit (an external summary) may have no
  // location here: the note then names the function at the call.
  SourceLocation At = Table.locationOf(U.Via->At);
  Check.diag(At.isValid() ? At : Table.fileLocOf(U.S),
             "it is used %select{here|}0 (with '%1') in '%2'",
             DiagnosticIDs::Note)
      << At.isInvalid() << U.Via->What << U.Via->In;
}

void EmptyModelReporter::noteBuilt(const Gen &G, const SummaryTable &Table) {
  const SourceLocation At = Table.fileLocOf(G.How.At);
  const SourceManager &SM = Table.context().getSourceManager();
  const auto *AtExpr = dyn_cast<Expr>(G.How.At);
  if (G.How.Through.empty()) {
    Check.diag(At,
               "'%0' is built here while the meta device is ambient, so it "
               "has no weights",
               DiagnosticIDs::Note)
        << G.Ref.displayName();
    if (G.How.Ambient && AtExpr)
      noteAmbientOrigin(Check, *G.How.Ambient, AtExpr, "",
                        /*ThroughCall=*/false, SM);
    return;
  }
  const bool Member = !G.How.Member.empty();
  if (G.How.Inner) {
    Check.diag(At,
               "'%0' %select{returns a model|leaves member model '%2'}1 "
               "built empty on the meta device",
               DiagnosticIDs::Note)
        << G.How.Through << Member << G.How.Member;
    noteInnerOrigin(*G.How.Inner, Table);
    return;
  }
  Check.diag(At,
             "'%0' %select{returns a model it builds|leaves member model '%2' "
             "built}1 with the device its caller makes ambient, which is meta "
             "here",
             DiagnosticIDs::Note)
      << G.How.Through << Member << G.How.Member;
  if (G.How.Ambient && AtExpr)
    noteAmbientOrigin(Check, *G.How.Ambient, AtExpr, G.How.Through,
                      /*ThroughCall=*/true, SM);
}

void EmptyModelReporter::noteInnerOrigin(const BuiltOrigin &O,
                                         const SummaryTable &Table) {
  SourceLocation Built = Table.locationOf(O.BuiltAt);
  if (Built.isValid())
    Check.diag(Built, "it is built here, in '%0'", DiagnosticIDs::Note)
        << O.BuiltIn;
  noteAmbientOriginAt(Check, sourceOf(O.Scope), Table.locationOf(O.ScopeAt),
                      O.ScopeName);
}

void EmptyModelReporter::noteLoadFirst(const LoadFirst &Fix, SourceLocation Loc,
                                       const ASTContext &Context) {
  const SourceManager &SM = Context.getSourceManager();
  const LangOptions &LO = Context.getLangOpts();
  SourceLocation Before = Fix.Before->getBeginLoc();
  if (Before.isMacroID() || Fix.Dir->getBeginLoc().isMacroID())
    return;
  // The new statement goes on a line of its own, indented as the use's.
  std::pair<FileID, unsigned> Where = SM.getDecomposedLoc(Before);
  bool Invalid = false;
  llvm::StringRef Buffer = SM.getBufferData(Where.first, &Invalid);
  if (Invalid)
    return;
  size_t LineStart = Buffer.rfind('\n', Where.second ? Where.second - 1 : 0);
  LineStart = LineStart == llvm::StringRef::npos || Where.second == 0
                  ? 0
                  : LineStart + 1;
  llvm::StringRef Indent = Buffer.slice(LineStart, Where.second);
  if (Indent.find_first_not_of(" \t") != llvm::StringRef::npos)
    return;
  llvm::StringRef Dir = Lexer::getSourceText(
      CharSourceRange::getTokenRange(Fix.Dir->getSourceRange()), SM, LO);
  if (Dir.empty())
    return;
  Check.diag(Loc, "load its weights before using it", DiagnosticIDs::Note)
      << FixItHint::CreateInsertion(Before, (llvm::Twine(Fix.Qualifier) +
                                             "load_weights(" + Fix.Model +
                                             ", " + Dir + ");\n" + Indent)
                                                .str());
}

} // namespace clang::tidy::metaguard
