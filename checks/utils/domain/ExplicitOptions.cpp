//===--- ExplicitOptions.cpp - metaguard-tidy ------------------*- C++ -*-===//

#include "utils/domain/ExplicitOptions.h"
#include "utils/ClangCompat.h"
#include "utils/analysis/ExprPlumbing.h"
#include "utils/analysis/FunctionBodies.h"

#include "clang/AST/ExprCXX.h"
#include "clang/Basic/SourceManager.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

namespace clang::tidy::metaguard {

namespace {

const Expr *stripOptions(const Expr *E) {
  return ignoreExprPlumbing(E, ExprPlumbing());
}

bool isListed(llvm::ArrayRef<llvm::StringRef> Members, const NamedDecl *D) {
  return D && D->getIdentifier() && llvm::is_contained(Members, D->getName());
}

/// The initialiser in List that initialises one of Members, if written.
const Expr *memberInList(const InitListExpr *List,
                         llvm::ArrayRef<llvm::StringRef> Members) {
  const InitListExpr *Semantic =
      List->isSemanticForm() ? List : List->getSemanticForm();
  const InitListExpr *Syntactic =
      List->isSemanticForm() && List->getSyntacticForm()
          ? List->getSyntacticForm()
          : List;
  const RecordDecl *RD = Semantic ? Semantic->getType()->getAsRecordDecl()
                                  : List->getType()->getAsRecordDecl();
  if (!RD)
    return nullptr;
  llvm::SmallVector<const FieldDecl *, 8> Fields;
  for (const FieldDecl *FD : RD->fields())
    if (!compat::isUnnamedBitField(FD))
      Fields.push_back(FD);
  // Walk the initialisers as written: designators name their field, the
  // others continue from the previous field.
  unsigned Next = 0;
  for (const Expr *Init : Syntactic->inits()) {
    const FieldDecl *Field = nullptr;
    if (const auto *Designated = dyn_cast<DesignatedInitExpr>(Init)) {
      const DesignatedInitExpr::Designator *First =
          Designated->getDesignator(0);
      if (First && First->isFieldDesignator())
        Field = compat::designatedField(First);
      if (Field)
        Next = Field->getFieldIndex() + 1;
    } else if (Next < Fields.size()) {
      Field = Fields[Next++];
      // Fillers Sema added for members not written.
      if (isa<ImplicitValueInitExpr, CXXDefaultInitExpr>(Init) ||
          Init->getSourceRange().isInvalid())
        Field = nullptr;
      if (const auto *Construct = dyn_cast<CXXConstructExpr>(Init);
          Construct && Construct->getNumArgs() == 0 &&
          Construct->getParenOrBraceRange().isInvalid())
        Field = nullptr;
    }
    if (isListed(Members, Field))
      return Init;
  }
  return nullptr;
}

const Expr *memberInInit(const Expr *Init,
                         llvm::ArrayRef<llvm::StringRef> Members) {
  if (const auto *List = dyn_cast_or_null<InitListExpr>(stripOptions(Init)))
    return memberInList(List, Members);
  return nullptr;
}

/// Whether ME (a member of the options variable) is written by its parent.
bool isWritten(const MemberExpr *ME, const StmtParents &Parents) {
  const Stmt *Node = ME;
  const Expr *Child = ME;
  for (unsigned Steps = 0; Steps < 8; ++Steps) {
    Node = Parents.parent(Node);
    const auto *Parent = dyn_cast_or_null<Expr>(Node);
    if (!Parent)
      return false;
    if (isa<ParenExpr, ImplicitCastExpr, MaterializeTemporaryExpr>(Parent)) {
      Child = Parent;
      continue;
    }
    if (const auto *BO = dyn_cast<BinaryOperator>(Parent))
      return BO->isAssignmentOp() &&
             BO->getLHS()->IgnoreParenImpCasts() == ME->IgnoreParenImpCasts();
    if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(Parent))
      return Op->getNumArgs() > 0 && Op->getArg(0) == Child &&
             (Op->isAssignmentOp() || Op->getOperator() == OO_Subscript);
    if (const auto *Member = dyn_cast<MemberExpr>(Parent)) {
      // opts.device_map.emplace(...): a call of a non-const method.
      if (const auto *Method = dyn_cast<CXXMethodDecl>(Member->getMemberDecl()))
        return !Method->isConst() && !Method->isStatic();
      return false;
    }
    return false;
  }
  return false;
}

const Expr *memberOfLocal(const VarDecl *Var, const Stmt *Call,
                          llvm::ArrayRef<llvm::StringRef> Members,
                          const FunctionDecl *Fn, ASTContext &Context,
                          CfgCache &Cfgs) {
  if (const Expr *Init = memberInInit(Var->getInit(), Members))
    return Init;
  const CfgReachability *Cfg = Cfgs.get(Fn, Fn->getBody(), Context);
  StmtParents Local;
  if (!Cfg)
    Local.indexFunction(Fn);
  const StmtParents &Parents = Cfg ? Cfg->parents() : Local;
  llvm::SmallVector<const Stmt *, 4> Writes;
  forEachEvaluatedStmt(Fn, [&](const Stmt *S) {
    const auto *ME = dyn_cast<MemberExpr>(S);
    if (!ME || !isListed(Members, ME->getMemberDecl()))
      return;
    const auto *Base =
        dyn_cast<DeclRefExpr>(ME->getBase()->IgnoreParenImpCasts());
    if (!Base || Base->getDecl() != Var || !isWritten(ME, Parents))
      return;
    Writes.push_back(ME);
  });
  if (Writes.empty())
    return nullptr;
  if (Cfg) {
    if (Cfg->contains(Call)) {
      if (std::optional<CfgReachability::Reach> Reach =
              Cfg->findReachingGen(Call, Writes, {}))
        return cast<Expr>(Reach->Gen);
      return nullptr;
    }
  }
  // No CFG: fall back to source order.
  const SourceManager &SM = Context.getSourceManager();
  for (const Stmt *Write : Writes)
    if (SM.isBeforeInTranslationUnit(Write->getBeginLoc(), Call->getBeginLoc()))
      return cast<Expr>(Write);
  return nullptr;
}

} // namespace

const Expr *findExplicitOptionMember(const Expr *Call,
                                     llvm::ArrayRef<llvm::StringRef> Members,
                                     const FunctionDecl *Fn,
                                     ASTContext &Context, CfgCache &Cfgs) {
  llvm::SmallVector<const Expr *, 4> Args;
  if (const auto *CE = dyn_cast<CallExpr>(Call))
    Args.append(CE->arg_begin(), CE->arg_end());
  else if (const auto *Construct = dyn_cast<CXXConstructExpr>(Call))
    Args.append(Construct->arg_begin(), Construct->arg_end());
  for (const Expr *Arg : Args)
    if (const Expr *Found =
            findExplicitOptionMemberOf(Arg, Call, Members, Fn, Context, Cfgs))
      return Found;
  return nullptr;
}

const Expr *findExplicitOptionMemberOf(const Expr *Options, const Stmt *At,
                                       llvm::ArrayRef<llvm::StringRef> Members,
                                       const FunctionDecl *Fn,
                                       ASTContext &Context, CfgCache &Cfgs) {
  if (!Options || isa<CXXDefaultArgExpr>(Options))
    return nullptr;
  const Expr *E = stripOptions(Options);
  if (const auto *List = dyn_cast_or_null<InitListExpr>(E))
    return memberInList(List, Members);
  const auto *Ref = dyn_cast_or_null<DeclRefExpr>(E);
  if (!Ref)
    return nullptr;
  const auto *Var = dyn_cast<VarDecl>(Ref->getDecl());
  if (!Var || isa<ParmVarDecl>(Var) || !Var->hasLocalStorage() || !Fn)
    return nullptr;
  return memberOfLocal(Var, At, Members, Fn, Context, Cfgs);
}

const Expr *explicitOptionValue(const Expr *Found, const FunctionDecl *Fn,
                                ASTContext &Context, CfgCache &Cfgs) {
  if (!Found)
    return nullptr;
  const auto *ME = dyn_cast<MemberExpr>(Found->IgnoreParenImpCasts());
  if (!ME)
    return Found; // An initialiser.
  const CfgReachability *Cfg =
      Fn ? Cfgs.get(Fn, Fn->getBody(), Context) : nullptr;
  if (!Cfg)
    return nullptr;
  const Stmt *Node = ME;
  for (unsigned Steps = 0; Steps < 8; ++Steps) {
    Node = Cfg->parents().parent(Node);
    if (!Node)
      return nullptr;
    if (isa<ParenExpr, ImplicitCastExpr, MaterializeTemporaryExpr>(Node))
      continue;
    if (const auto *BO = dyn_cast<BinaryOperator>(Node))
      return BO->getOpcode() == BO_Assign ? BO->getRHS() : nullptr;
    if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(Node))
      return Op->getOperator() == OO_Equal && Op->getNumArgs() == 2
                 ? Op->getArg(1)
                 : nullptr;
    return nullptr;
  }
  return nullptr;
}

} // namespace clang::tidy::metaguard
