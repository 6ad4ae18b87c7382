//===--- FunctionSummaries.cpp - metaguard-tidy ----------------*- C++ -*-===//

#include "utils/summaries/FunctionSummaries.h"
#include "utils/ClangCompat.h"
#include "utils/analysis/FunctionBodies.h"
#include "utils/analysis/NameList.h"
#include "utils/domain/LoaderCalls.h"

#include "clang/AST/ASTLambda.h"
#include "clang/AST/Attr.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/Basic/FileManager.h"
#include "clang/Basic/SourceManager.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Error.h"

#include <map>
#include <mutex>

namespace clang::tidy::metaguard {

namespace {

/// Beyond this many nested calls the search for callees stops (a callee seen
/// that deep is left unfollowed): a guard for the stack, not a depth limit
/// any real program reaches.
constexpr unsigned MaxVisitDepth = 512;
/// Rounds of a component's fixpoint iteration. The facts only grow (a load,
/// a move, a meta default found on one more path), so this bound is only
/// reached on pathological input; the last round's facts are kept.
constexpr unsigned MaxRounds = 16;

unsigned bit(const FacetKind &K) { return 1u << K.id(); }

/// Whether the facts of kind K in A and B are the same, absent facts being
/// the facet's defaults (which say nothing, so only an empty side matches).
bool sameFacts(const FunctionSummary &A, const FunctionSummary &B,
               const FacetKind &K) {
  const FacetFacts *FA = A.facts(K), *FB = B.facts(K);
  if (FA && FB)
    return FA->same(*FB);
  return (!FA || FA->empty()) && (!FB || FB->empty());
}

} // namespace

void SummaryTable::setFacet(SummaryFacet *F) {
  SummaryFacet *&Slot = Facets[F->kind().id()];
  if (!Slot)
    Slot = F;
}

std::string SummaryTable::usrOf(const Decl *D) {
  llvm::SmallString<128> Buf;
  if (!D || index::generateUSRForDecl(D, Buf))
    return {};
  return std::string(Buf);
}

SourceRef SummaryTable::refOf(SourceLocation L) const {
  SourceRef R;
  const SourceManager &SM = Context.getSourceManager();
  L = SM.getFileLoc(L);
  if (L.isInvalid())
    return R;
  std::pair<FileID, unsigned> Decomposed = SM.getDecomposedLoc(L);
  auto File = SM.getFileEntryRefForID(Decomposed.first);
  if (!File)
    return R;
  R.File = File->getName().str();
  R.Line = SM.getLineNumber(Decomposed.first, Decomposed.second);
  R.Column = SM.getColumnNumber(Decomposed.first, Decomposed.second);
  return R;
}

SourceLocation SummaryTable::fileLocOf(const Stmt *S) const {
  return Context.getSourceManager().getFileLoc(S->getBeginLoc());
}

SourceLocation SummaryTable::locationOf(const SourceRef &R) const {
  if (!R.valid())
    return {};
  SourceManager &SM = Context.getSourceManager();
  llvm::Expected<FileEntryRef> File =
      SM.getFileManager().getFileRef(R.File, /*OpenFile=*/false,
                                     /*CacheFailure=*/true);
  if (!File) {
    llvm::consumeError(File.takeError());
    return {};
  }
  // A file this translation unit did not read (a summary from another TU,
  // in whole-program mode) gets a FileID of its own, so that notes can
  // point into it.
  FileID ID = SM.translateFile(*File);
  if (ID.isInvalid())
    ID = SM.getOrCreateFileID(*File, SrcMgr::C_User);
  if (ID.isInvalid())
    return {};
  return SM.translateLineCol(ID, R.Line, R.Column ? R.Column : 1);
}

SummaryTable::Entry &SummaryTable::entry(const FunctionDecl *Def) {
  std::unique_ptr<Entry> &Slot = Entries[Def];
  // The USR and name are filled when the summary leaves the table
  // (forEachComputed): most summaries never do, and USRs cost a string each.
  if (!Slot)
    Slot = std::make_unique<Entry>();
  return *Slot;
}

const std::vector<const FunctionDecl *> &
SummaryTable::callees(const FunctionDecl *Def) {
  Entry &E = entry(Def);
  if (!E.CalleesKnown) {
    E.CalleesKnown = true;
    llvm::DenseSet<const FunctionDecl *> Seen;
    for (const Expr *Call : collectCalls(Def))
      for (const FunctionDecl *Target : callTargets(Call))
        if (const FunctionDecl *Callee = definitionWithBody(Target))
          if (Seen.insert(Callee).second)
            E.Callees.push_back(Callee);
  }
  return E.Callees;
}

void SummaryTable::indexOverrides() {
  OverridesIndexed = true;
  const SourceManager &SM = Context.getSourceManager();
  // The user's declarations only: a namespace or class opened in a system
  // header is skipped whole (LibTorch's classes are not the user's targets).
  llvm::SmallVector<const DeclContext *, 64> Work{
      Context.getTranslationUnitDecl()};
  while (!Work.empty()) {
    const DeclContext *DC = Work.pop_back_val();
    for (const Decl *D : DC->decls()) {
      if (SM.isInSystemHeader(D->getLocation()))
        continue;
      if (const auto *Method = dyn_cast<CXXMethodDecl>(D)) {
        for (const CXXMethodDecl *Base : Method->overridden_methods())
          Overrides[Base->getCanonicalDecl()].push_back(Method);
        continue;
      }
      if (const auto *Template = dyn_cast<ClassTemplateDecl>(D)) {
        for (const ClassTemplateSpecializationDecl *Spec :
             Template->specializations())
          Work.push_back(Spec);
        continue;
      }
      if (isa<NamespaceDecl, CXXRecordDecl, LinkageSpecDecl>(D))
        Work.push_back(cast<DeclContext>(D));
    }
  }
}

const CXXMethodDecl *SummaryTable::virtualCallee(const Expr *Call) const {
  const auto *Method = dyn_cast_or_null<CXXMethodDecl>(calledFunction(Call));
  const auto *Member = dyn_cast<CXXMemberCallExpr>(Call);
  if (!Method || !Member || !Method->isVirtual() ||
      Method->hasAttr<FinalAttr>() || Method->getParent()->hasAttr<FinalAttr>())
    return nullptr;
  // `obj.Base::f()` names the function it calls.
  if (const auto *ME =
          dyn_cast<MemberExpr>(Member->getCallee()->IgnoreParens());
      ME && ME->hasQualifier())
    return nullptr;
  return Method;
}

const ValueDecl *SummaryTable::storedSlot(const Expr *Call) {
  return callableSlotOfCall(Call);
}

llvm::SmallVector<const FunctionDecl *, 2>
SummaryTable::callTargets(const Expr *Call) {
  llvm::SmallVector<const FunctionDecl *, 2> Targets;
  const FunctionDecl *Callee = calledFunction(Call);
  if (!Callee)
    return Targets;
  Targets.push_back(Callee);
  if (const ValueDecl *Slot = storedSlot(Call))
    for (const ValueDecl *Source : Stores.sourcesOf(Slot))
      SlotsUsed.insert(Source);
  for (const FunctionDecl *Target : Stores.callTargets(Call))
    if (!llvm::is_contained(Targets, Target))
      Targets.push_back(Target);
  const CXXMethodDecl *Method = virtualCallee(Call);
  if (!Method)
    return Targets;
  UsedElsewhere.insert(Method->getCanonicalDecl());
  if (!OverridesIndexed)
    indexOverrides();
  llvm::SmallVector<const CXXMethodDecl *, 4> Work{Method->getCanonicalDecl()};
  llvm::DenseSet<const CXXMethodDecl *> Seen{Method->getCanonicalDecl()};
  while (!Work.empty()) {
    auto It = Overrides.find(Work.pop_back_val());
    if (It == Overrides.end())
      continue;
    for (const CXXMethodDecl *Override : It->second)
      if (Seen.insert(Override->getCanonicalDecl()).second) {
        Targets.push_back(Override);
        Work.push_back(Override->getCanonicalDecl());
      }
  }
  return Targets;
}

std::vector<const FunctionSummary *>
SummaryTable::externalTargets(const Expr *Call) {
  std::vector<const FunctionSummary *> Result;
  std::vector<const FunctionSummary *> Found;
  if (const CXXMethodDecl *Method = virtualCallee(Call);
      Method && ExternalOverrides)
    Found = ExternalOverrides(usrOf(Method->getCanonicalDecl()));
  else if (const ValueDecl *Slot = storedSlot(Call); Slot && ExternalStores)
    // A table parameter or an iterator member: the tables behind it.
    for (const ValueDecl *Source : Stores.sourcesOf(Slot))
      for (const FunctionSummary *S : ExternalStores(usrOf(Source)))
        if (!llvm::is_contained(Found, S))
          Found.push_back(S);
  if (Found.empty())
    return Result;
  // An override or stored function declared here is a target already
  // (callTargets).
  llvm::StringSet<> Here;
  for (const FunctionDecl *Target : callTargets(Call))
    Here.insert(usrOf(Target->getCanonicalDecl()));
  for (const FunctionSummary *S : Found)
    if (!Here.contains(S->USR))
      Result.push_back(S);
  return Result;
}

const FunctionSummary *SummaryTable::external(const FunctionDecl *FD) {
  if (Externals.empty() && !ExternalLookup)
    return nullptr;
  std::string USR = usrOf(FD);
  if (USR.empty())
    return nullptr;
  if (auto It = Externals.find(USR); It != Externals.end())
    return &It->second;
  return ExternalLookup ? ExternalLookup(USR) : nullptr;
}

void SummaryTable::addExternal(FunctionSummary S) {
  std::string USR = S.USR;
  Externals[USR] = std::move(S);
}

const FunctionSummary *SummaryTable::lookup(const FunctionDecl *FD,
                                            const FacetKind &K) {
  SummaryFacet *F = Facets[K.id()];
  if (!FD || !F)
    return nullptr;
  const FunctionDecl *Def = definitionWithBody(FD);
  if (!Def) {
    UsedElsewhere.insert(FD->getCanonicalDecl());
    return external(FD);
  }
  if (!F->follows(Def))
    return nullptr;
  Entry &E = entry(Def);
  if ((E.Done & bit(K)) || (E.InProgress & bit(K)))
    return &E.Summary;
  TarjanState State;
  State.K = &K;
  visit(Def, State, 0);
  return &E.Summary;
}

void SummaryTable::visit(const FunctionDecl *Def, TarjanState &State,
                         unsigned Depth) {
  const unsigned Index = State.Counter++;
  State.IndexLow[Def] = {Index, Index};
  State.Stack.push_back(Def);
  const FacetKind &K = *State.K;
  entry(Def).InProgress |= bit(K);
  SummaryFacet *F = Facets[K.id()];

  unsigned Low = Index;
  // callees() may grow Entries: copy the list before recursing.
  std::vector<const FunctionDecl *> Next = callees(Def);
  for (const FunctionDecl *Callee : Next) {
    if (!F->follows(Callee))
      continue;
    Entry &CE = entry(Callee);
    if (CE.Done & bit(K))
      continue;
    auto It = State.IndexLow.find(Callee);
    if (It == State.IndexLow.end()) {
      if (CE.InProgress & bit(K))
        continue; // On the stack of an outer search: its approximation.
      if (Depth >= MaxVisitDepth)
        continue;
      visit(Callee, State, Depth + 1);
      Low = std::min(Low, State.IndexLow[Callee].second);
    } else if (CE.InProgress & bit(K)) {
      Low = std::min(Low, It->second.first);
    }
  }
  State.IndexLow[Def].second = Low;
  if (Low != Index)
    return;
  // Def is the root of a component: everything above it on the stack.
  std::vector<const FunctionDecl *> Component;
  while (true) {
    const FunctionDecl *Member = State.Stack.back();
    State.Stack.pop_back();
    Component.push_back(Member);
    if (Member == Def)
      break;
  }
  solve(Component, K);
}

void SummaryTable::solve(llvm::ArrayRef<const FunctionDecl *> Component,
                         const FacetKind &K) {
  SummaryFacet *F = Facets[K.id()];
  // Members were pushed callers-last: summarise callees first.
  for (unsigned Round = 0; Round < MaxRounds; ++Round) {
    bool Changed = false;
    for (const FunctionDecl *Member : Component) {
      Entry &E = entry(Member);
      FunctionSummary Next = E.Summary;
      Next.clearFacts(K);
      F->summarise(Member, Next, *this);
      // summarise() may have created entries: look the member up again.
      Entry &After = entry(Member);
      if (!sameFacts(Next, After.Summary, K)) {
        Changed = true;
        After.Summary = std::move(Next);
      }
    }
    // A component of one function that does not call itself is final
    // after one round.
    if (!Changed || (Component.size() == 1 &&
                     !llvm::is_contained(callees(Component[0]), Component[0])))
      break;
  }
  for (const FunctionDecl *Member : Component) {
    Entry &E = entry(Member);
    E.InProgress &= ~bit(K);
    E.Done |= bit(K);
  }
}

void SummaryTable::forEachComputed(
    llvm::function_ref<void(const FunctionDecl *, const FunctionSummary &)>
        Fn) {
  for (const auto &[FD, E] : Entries) {
    if (!E->Done || E->Summary.empty())
      continue;
    if (E->Summary.USR.empty()) {
      E->Summary.USR = usrOf(FD);
      // A lambda stored into a table another file calls through is named
      // in messages as in its own file.
      E->Summary.Name =
          isLambdaCallOperator(FD) ? displayName(FD) : qualifiedNameOf(FD);
    }
    Fn(FD, E->Summary);
  }
}

std::shared_ptr<SummaryTable> sharedSummaryTable(ASTContext &Context) {
  // clangd analyses several files at once: one table per ASTContext, found
  // under a lock; a table no check holds any more has expired.
  static std::mutex Lock;
  static std::map<const ASTContext *, std::weak_ptr<SummaryTable>> Tables;
  std::lock_guard<std::mutex> Guard(Lock);
  for (auto It = Tables.begin(); It != Tables.end();)
    It = It->second.expired() ? Tables.erase(It) : std::next(It);
  std::weak_ptr<SummaryTable> &Slot = Tables[&Context];
  if (std::shared_ptr<SummaryTable> Existing = Slot.lock())
    return Existing;
  auto Table = std::make_shared<SummaryTable>(Context);
  Slot = Table;
  return Table;
}

} // namespace clang::tidy::metaguard
