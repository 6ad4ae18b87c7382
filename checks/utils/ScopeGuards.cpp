//===--- ScopeGuards.cpp - metaguard-tidy ----------------------*- C++ -*-===//

#include "ScopeGuards.h"
#include "ExprPlumbing.h"
#include "RecordBases.h"

#include "clang/AST/ExprCXX.h"
#include "clang/AST/StmtCXX.h"

namespace clang::tidy::metaguard {

namespace {

/// Whether RD, or a base, is listed in Names (a class template
/// specialisation also by its template's name).
bool recordMatches(const CXXRecordDecl *RD, const NameList &Names) {
  return recordOrBase(RD, [&](const CXXRecordDecl *R) {
    if (Names.matches(R))
      return true;
    const auto *Spec = dyn_cast<ClassTemplateSpecializationDecl>(R);
    return Spec && Names.matches(Spec->getSpecializedTemplate());
  });
}

/// The construction of a guard variable's initialiser, if visible.
const CXXConstructExpr *guardConstruction(const Expr *Init) {
  ExprPlumbing UpToConstruction;
  UpToConstruction.Copies = ExprPlumbing::CopyMoves::Keep;
  return dyn_cast_or_null<CXXConstructExpr>(
      ignoreExprPlumbing(Init, UpToConstruction));
}

/// Looks through labels and attributes around a statement in a block.
const Stmt *unwrapLabels(const Stmt *S) {
  while (S) {
    if (const auto *Label = dyn_cast<LabelStmt>(S))
      S = Label->getSubStmt();
    else if (const auto *Attributed = dyn_cast<AttributedStmt>(S))
      S = Attributed->getSubStmt();
    else if (const auto *Case = dyn_cast<SwitchCase>(S))
      S = Case->getSubStmt();
    else
      break;
  }
  return S;
}

/// The last guard declared by S (a declaration statement), if any.
void guardsDeclaredBy(const Stmt *S, const ScopeGuardClassifier &Guards,
                      std::optional<LiveGuard> &Last) {
  const auto *DS = dyn_cast_or_null<DeclStmt>(unwrapLabels(S));
  if (!DS)
    return;
  for (const Decl *D : DS->decls())
    if (const auto *VD = dyn_cast<VarDecl>(D))
      if (std::optional<DeviceKind> Kind = Guards.classify(VD))
        Last = LiveGuard{VD, *Kind};
}

void guardFromVar(const VarDecl *VD, const ScopeGuardClassifier &Guards,
                  std::optional<LiveGuard> &Last) {
  if (VD)
    if (std::optional<DeviceKind> Kind = Guards.classify(VD))
      Last = LiveGuard{VD, *Kind};
}

} // namespace

std::optional<DeviceKind>
ScopeGuardClassifier::classify(const VarDecl *VD) const {
  if (!VD || isa<ParmVarDecl>(VD) || !VD->hasLocalStorage())
    return std::nullopt;
  QualType T = VD->getType().getNonReferenceType();
  const CXXRecordDecl *RD = T->getAsCXXRecordDecl();
  if (!RD)
    return std::nullopt;
  if (VD->getType()->isReferenceType()) {
    // Only a reference that extends a temporary's lifetime keeps a guard.
    const Expr *Init = VD->getInit();
    if (const auto *Full = dyn_cast_or_null<FullExpr>(Init))
      Init = Full->getSubExpr();
    if (!Init || !isa<MaterializeTemporaryExpr>(Init->IgnoreParens()))
      return std::nullopt;
  }
  if (recordMatches(RD, MetaTypes))
    return DeviceKind::Meta;
  if (!recordMatches(RD, DeviceTypes))
    return std::nullopt;
  // A class derived from a DeviceScopeTypes class picks its own device.
  if (!DeviceTypes.matches(RD))
    return DeviceKind::Unknown;
  const CXXConstructExpr *Construct = guardConstruction(VD->getInit());
  if (!Construct || Construct->getNumArgs() == 0)
    return DeviceKind::Unknown;
  return classifyDeviceExpr(Construct->getArg(0));
}

bool ScopeGuardClassifier::isGuardClass(const CXXRecordDecl *RD) const {
  return recordMatches(RD, MetaTypes) || recordMatches(RD, DeviceTypes);
}

const LiveGuardFinder::BlockGuards &
LiveGuardFinder::blockGuards(const CompoundStmt *Block) {
  std::unique_ptr<BlockGuards> &Slot = Blocks[Block];
  if (Slot)
    return *Slot;
  Slot = std::make_unique<BlockGuards>();
  std::optional<LiveGuard> Last;
  unsigned Index = 0;
  for (const Stmt *Item : Block->body()) {
    Slot->IndexOf.try_emplace(Item, Index++);
    Slot->Before.push_back(Last);
    guardsDeclaredBy(Item, Guards, Last);
  }
  return *Slot;
}

std::optional<LiveGuard> LiveGuardFinder::innermost(const Stmt *S,
                                                    const Stmt *Body) {
  Parents.index(Body);
  const Stmt *Child = S;
  for (unsigned Steps = 0; Child && Steps < 4096; ++Steps) {
    if (Child == Body)
      return std::nullopt;
    const Stmt *Parent = Parents.parent(Child);
    // A lambda's body is a function of its own.
    if (!Parent || isa<LambdaExpr>(Parent))
      return std::nullopt;
    std::optional<LiveGuard> Found;
    if (const auto *Block = dyn_cast<CompoundStmt>(Parent)) {
      const BlockGuards &BG = blockGuards(Block);
      auto It = BG.IndexOf.find(Child);
      if (It != BG.IndexOf.end())
        Found = BG.Before[It->second];
    } else if (const auto *If = dyn_cast<IfStmt>(Parent)) {
      if (Child != If->getInit()) {
        guardsDeclaredBy(If->getInit(), Guards, Found);
        if (Child != If->getConditionVariableDeclStmt())
          guardFromVar(If->getConditionVariable(), Guards, Found);
      }
    } else if (const auto *Switch = dyn_cast<SwitchStmt>(Parent)) {
      if (Child != Switch->getInit()) {
        guardsDeclaredBy(Switch->getInit(), Guards, Found);
        if (Child != Switch->getConditionVariableDeclStmt())
          guardFromVar(Switch->getConditionVariable(), Guards, Found);
      }
    } else if (const auto *For = dyn_cast<ForStmt>(Parent)) {
      if (Child != For->getInit())
        guardsDeclaredBy(For->getInit(), Guards, Found);
    } else if (const auto *Range = dyn_cast<CXXForRangeStmt>(Parent)) {
      if (Child != Range->getInit())
        guardsDeclaredBy(Range->getInit(), Guards, Found);
    } else if (const auto *While = dyn_cast<WhileStmt>(Parent)) {
      if (Child == While->getBody())
        guardFromVar(While->getConditionVariable(), Guards, Found);
    }
    if (Found)
      return Found;
    Child = Parent;
  }
  return std::nullopt;
}

} // namespace clang::tidy::metaguard
