//===--- ScopeGuards.cpp - metaguard-tidy ----------------------*- C++ -*-===//

#include "utils/domain/ScopeGuards.h"
#include "utils/ClangCompat.h"
#include "utils/analysis/ExprPlumbing.h"
#include "utils/analysis/FunctionBodies.h"
#include "utils/analysis/NameList.h"
#include "utils/analysis/RecordBases.h"
#include "utils/domain/DeviceExpr.h"
#include "utils/domain/HolderEvents.h"

#include "clang/AST/DeclTemplate.h"
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

/// Whether every constructor of RD leaves Field to its default member
/// initialiser: none names it in a written initialiser, and each one the
/// user provides is visible (an unseen one may initialise it otherwise).
bool constructorsKeepDefault(const CXXRecordDecl *RD, const FieldDecl *Field) {
  for (const CXXConstructorDecl *Ctor : RD->ctors()) {
    if (Ctor->isDeleted() || !Ctor->isUserProvided())
      continue; // An implicit or defaulted one uses the default initialiser.
    const FunctionDecl *Def = nullptr;
    if (!Ctor->hasBody(Def))
      return false;
    for (const CXXCtorInitializer *Init :
         cast<CXXConstructorDecl>(Def)->inits())
      if (Init->isWritten() && Init->getMember() == Field)
        return false;
  }
  return true;
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
        Last = LiveGuard{VD, *Kind, Guards.isGuardHolder(VD), DS};
}

void guardFromVar(const VarDecl *VD, const Stmt *DeclaredBy,
                  const ScopeGuardClassifier &Guards,
                  std::optional<LiveGuard> &Last) {
  if (VD)
    if (std::optional<DeviceKind> Kind = Guards.classify(VD))
      Last = LiveGuard{VD, *Kind, Guards.isGuardHolder(VD), DeclaredBy};
}

/// The device a guard is built with, from the arguments of its
/// construction; Unknown when they are not visible.
DeviceKind deviceOfArguments(llvm::ArrayRef<const Expr *> Args,
                             const ASTContext &Ctx) {
  if (Args.empty() || isa<CXXDefaultArgExpr>(Args.front()))
    return DeviceKind::Unknown;
  return classifyDeviceExpr(Args.front(), Ctx);
}

/// The device of the guard a value that engages a holder builds:
/// std::make_unique<G>(device), new G(device), a std::unique_ptr made from
/// one of those.
DeviceKind deviceOfValue(const Expr *E, const ASTContext &Ctx) {
  for (unsigned Steps = 0; E && Steps < 4; ++Steps) {
    E = ignoreExprPlumbing(E, ExprPlumbing());
    if (const auto *New = dyn_cast_or_null<CXXNewExpr>(E)) {
      const CXXConstructExpr *Construct = New->getConstructExpr();
      return Construct ? deviceOfArguments(
                             llvm::ArrayRef<const Expr *>(
                                 Construct->getArgs(), Construct->getNumArgs()),
                             Ctx)
                       : DeviceKind::Unknown;
    }
    if (const auto *Call = dyn_cast_or_null<CallExpr>(E)) {
      const FunctionDecl *Callee = Call->getDirectCallee();
      if (!Callee || !Callee->getIdentifier() ||
          Callee->getName() != "make_unique")
        return DeviceKind::Unknown;
      return deviceOfArguments(
          llvm::ArrayRef<const Expr *>(Call->getArgs(), Call->getNumArgs()),
          Ctx);
    }
    const auto *Construct = dyn_cast_or_null<CXXConstructExpr>(E);
    if (!Construct)
      return DeviceKind::Unknown;
    // A guard built here (`scope = Guard(torch::kMeta)`): its arguments.
    if (holderKind(Construct->getType()) == HolderKind::None)
      return deviceOfArguments(
          llvm::ArrayRef<const Expr *>(Construct->getArgs(),
                                       Construct->getNumArgs()),
          Ctx);
    if (Construct->getNumArgs() != 1)
      return DeviceKind::Unknown;
    E = Construct->getArg(0);
  }
  return DeviceKind::Unknown;
}

/// The device of the guard Engager (an initialiser, an emplace, a reset, an
/// assignment, a push into a container) puts into its holder.
DeviceKind deviceEngagedBy(const Stmt *Engager, const ASTContext &Ctx) {
  if (const auto *Member = dyn_cast<CXXMemberCallExpr>(Engager)) {
    llvm::ArrayRef<const Expr *> Args(Member->getArgs(), Member->getNumArgs());
    llvm::StringRef Name = Member->getMethodDecl()->getName();
    if (Name == "reset" || compat::startsWith(Name, "push"))
      return Args.empty() ? DeviceKind::Unknown
                          : deviceOfValue(Args.front(), Ctx);
    // A container's emplace(position, args...).
    const auto *Spec = dyn_cast<ClassTemplateSpecializationDecl>(
        Member->getMethodDecl()->getParent());
    if (Name == "emplace" && Spec && isStdContainer(Spec) && !Args.empty())
      Args = Args.drop_front();
    // A container of std::unique_ptr<G>: emplace_back(std::make_unique...).
    if (Args.size() == 1 && !Args.front()->getType()->getAsCXXRecordDecl())
      return deviceOfArguments(Args, Ctx);
    if (Args.size() == 1)
      if (DeviceKind Kind = deviceOfValue(Args.front(), Ctx);
          Kind != DeviceKind::Unknown)
        return Kind;
    return deviceOfArguments(Args, Ctx);
  }
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(Engager))
    return Op->getNumArgs() == 2 ? deviceOfValue(Op->getArg(1), Ctx)
                                 : DeviceKind::Unknown;
  // A holder's initialiser: std::optional<G>(std::in_place, device), or a
  // std::unique_ptr from std::make_unique / new.
  ExprPlumbing UpToConstruction;
  UpToConstruction.Copies = ExprPlumbing::CopyMoves::Keep;
  const auto *Init = dyn_cast<Expr>(Engager);
  const auto *Construct = dyn_cast_or_null<CXXConstructExpr>(
      ignoreExprPlumbing(Init, UpToConstruction));
  if (!Construct)
    return deviceOfValue(Init, Ctx);
  llvm::ArrayRef<const Expr *> Args(Construct->getArgs(),
                                    Construct->getNumArgs());
  if (!Args.empty())
    if (const CXXRecordDecl *RD = Args.front()->getType()->getAsCXXRecordDecl();
        RD && RD->getIdentifier() && RD->getName() == "in_place_t")
      return deviceOfArguments(Args.drop_front(), Ctx);
  return Args.size() == 1 ? deviceOfValue(Args.front(), Ctx)
                          : DeviceKind::Unknown;
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
  } else if (const CXXRecordDecl *Held = heldGuardClass(T)) {
    // A DeviceScope's device is the one it is engaged with, at each
    // statement (guardHolderEngagedAt).
    std::optional<DeviceKind> Kind = classifyRecord(Held);
    if (Kind && *Kind != DeviceKind::Meta)
      return DeviceKind::Unknown;
    return Kind;
  }
  if (std::optional<DeviceKind> Kind = classifyRecord(RD);
      !Kind || *Kind == DeviceKind::Meta)
    return Kind;
  // A class derived from a DeviceScopeTypes class picks its own device.
  if (!DeviceTypes.matches(RD))
    return DeviceKind::Unknown;
  const CXXConstructExpr *Construct = guardConstruction(VD->getInit());
  if (!Construct || Construct->getNumArgs() == 0)
    return DeviceKind::Unknown;
  return classifyDeviceExpr(Construct->getArg(0), VD->getASTContext());
}

std::optional<DeviceKind>
ScopeGuardClassifier::classifyRecord(const CXXRecordDecl *RD) const {
  if (recordMatches(RD, MetaTypes) || isMetaRaiiClass(RD))
    return DeviceKind::Meta;
  if (recordMatches(RD, DeviceTypes))
    return DeviceKind::Unknown;
  return std::nullopt;
}

const CXXRecordDecl *ScopeGuardClassifier::heldGuardClass(QualType T) const {
  const auto *Spec = dyn_cast_or_null<ClassTemplateSpecializationDecl>(
      T->getAsCXXRecordDecl());
  if (!Spec)
    return nullptr;
  const bool Container = isStdContainer(Spec);
  if (!Container &&
      !(isStdNamed(Spec, "optional") || isStdNamed(Spec, "unique_ptr")))
    return nullptr;
  const TemplateArgumentList &Args = Spec->getTemplateArgs();
  if (Args.size() == 0 || Args[0].getKind() != TemplateArgument::Type)
    return nullptr;
  // A container of guards, or of std::unique_ptr<G>.
  if (Container)
    if (const CXXRecordDecl *Inner = heldGuardClass(Args[0].getAsType()))
      return Inner;
  const CXXRecordDecl *Held = Args[0].getAsType()->getAsCXXRecordDecl();
  return Held && classifyRecord(Held) ? Held : nullptr;
}

bool ScopeGuardClassifier::isGuardHolder(const VarDecl *VD) const {
  return VD && !VD->getType()->isReferenceType() &&
         heldGuardClass(VD->getType());
}

bool ScopeGuardClassifier::isGuardClass(const CXXRecordDecl *RD) const {
  return recordMatches(RD, MetaTypes) || recordMatches(RD, DeviceTypes);
}

bool ScopeGuardClassifier::isMetaByDefault(const CXXRecordDecl *RD,
                                           const FieldDecl *Field) const {
  // `DeviceScope scope{torch::kMeta};` or `= DeviceScope("meta")`: every
  // object opens the scope its constructor does not override.
  const CXXRecordDecl *FieldClass = Field->getType()->getAsCXXRecordDecl();
  if (!FieldClass || !recordMatches(FieldClass, DeviceTypes))
    return false;
  const CXXConstructExpr *Construct =
      guardConstruction(Field->getInClassInitializer());
  return Construct && Construct->getNumArgs() > 0 &&
         classifyDeviceExpr(Construct->getArg(0), Field->getASTContext()) ==
             DeviceKind::Meta &&
         constructorsKeepDefault(RD, Field);
}

bool ScopeGuardClassifier::isMetaRaiiClass(const CXXRecordDecl *RD) const {
  if (!RD || !RD->hasDefinition())
    return false;
  RD = RD->getDefinition();
  auto [It, Inserted] = RaiiClasses.try_emplace(RD, false);
  if (!Inserted)
    return It->second; // Known, or being decided (a cycle holds no guard).
  if (isGuardClass(RD))
    return false; // The guard classes themselves are classified by name.
  bool Holds = false;
  for (const FieldDecl *Field : RD->fields()) {
    QualType T = Field->getType();
    if (T->isReferenceType() || T->isPointerType())
      continue; // Refers to a guard someone else holds.
    const CXXRecordDecl *FieldClass = T->getAsCXXRecordDecl();
    if (FieldClass &&
        (recordMatches(FieldClass, MetaTypes) || isMetaRaiiClass(FieldClass) ||
         isMetaByDefault(RD, Field))) {
      Holds = true;
      break;
    }
  }
  if (!Holds)
    for (const CXXBaseSpecifier &Base : RD->bases())
      if (isMetaRaiiClass(Base.getType()->getAsCXXRecordDecl())) {
        Holds = true;
        break;
      }
  RaiiClasses[RD] = Holds;
  return Holds;
}

bool ScopeGuardClassifier::isMetaGuardParameter(const ParmVarDecl *P) const {
  QualType T = P->getType();
  if (!T->isReferenceType() && !T->isPointerType())
    return false; // A by-value guard would be a scope of its own: not copyable.
  const CXXRecordDecl *RD = T->getPointeeType()->getAsCXXRecordDecl();
  if (!RD)
    return false;
  std::optional<DeviceKind> Kind = classifyRecord(RD);
  return Kind && *Kind == DeviceKind::Meta;
}

std::optional<DeviceKind> guardHolderEngagedAt(const LiveGuard &G,
                                               const Stmt *S,
                                               const FunctionDecl *F,
                                               const CfgReachability &Cfg) {
  llvm::SmallVector<const Stmt *, 4> Engage, Disengage;
  if (engagedByInit(G.Var))
    Engage.push_back(G.Var->getInit());
  // The events every holder shares (HolderEvents): `= {}` empties it.
  forEachEvaluatedStmt(F, [&](const Stmt *X) {
    if (std::optional<HolderEvent> Event = holderEvent(X);
        Event && Event->Holder == G.Var)
      (Event->What == HolderEvent::Engages ? Engage : Disengage).push_back(X);
  });
  if (Engage.empty())
    return std::nullopt;
  // A guard of a meta class is meta whatever engages it; a DeviceScope
  // has the device it is built with. Meta on some path wins (as for the
  // default device); otherwise the kind of the guard that reaches S.
  llvm::SmallVector<const Stmt *, 4> Meta, Other;
  for (const Stmt *E : Engage)
    (G.Kind == DeviceKind::Meta ||
             deviceEngagedBy(E, G.Var->getASTContext()) == DeviceKind::Meta
         ? Meta
         : Other)
        .push_back(E);
  auto Reaches = [&](llvm::ArrayRef<const Stmt *> Gens,
                     llvm::ArrayRef<const Stmt *> Others) -> const Stmt * {
    if (Gens.empty())
      return nullptr;
    llvm::SmallVector<const Stmt *, 8> Kills(Disengage.begin(),
                                             Disengage.end());
    Kills.append(Others.begin(), Others.end());
    std::optional<CfgReachability::Reach> Reach =
        Cfg.findReachingGen(S, Gens, Kills);
    return Reach ? Reach->Gen : nullptr;
  };
  if (Reaches(Meta, Other))
    return DeviceKind::Meta;
  if (const Stmt *Gen = Reaches(Other, Meta))
    return deviceEngagedBy(Gen, G.Var->getASTContext());
  return std::nullopt;
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
          guardFromVar(If->getConditionVariable(),
                       If->getConditionVariableDeclStmt(), Guards, Found);
      }
    } else if (const auto *Switch = dyn_cast<SwitchStmt>(Parent)) {
      if (Child != Switch->getInit()) {
        guardsDeclaredBy(Switch->getInit(), Guards, Found);
        if (Child != Switch->getConditionVariableDeclStmt())
          guardFromVar(Switch->getConditionVariable(),
                       Switch->getConditionVariableDeclStmt(), Guards, Found);
      }
    } else if (const auto *For = dyn_cast<ForStmt>(Parent)) {
      if (Child != For->getInit())
        guardsDeclaredBy(For->getInit(), Guards, Found);
    } else if (const auto *Range = dyn_cast<CXXForRangeStmt>(Parent)) {
      if (Child != Range->getInit())
        guardsDeclaredBy(Range->getInit(), Guards, Found);
    } else if (const auto *While = dyn_cast<WhileStmt>(Parent)) {
      if (Child == While->getBody())
        guardFromVar(While->getConditionVariable(),
                     While->getConditionVariableDeclStmt(), Guards, Found);
    }
    if (Found)
      return Found;
    Child = Parent;
  }
  return std::nullopt;
}

} // namespace clang::tidy::metaguard
