//===--- StoredCallables.cpp - metaguard-tidy ------------------*- C++ -*-===//

#include "utils/analysis/StoredCallables.h"
#include "utils/analysis/FunctionBodies.h"

#include "clang/AST/DeclCXX.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/SourceManager.h"

namespace clang::tidy::metaguard {

namespace {

bool isStdTemplateNamed(const CXXRecordDecl *RD,
                        std::initializer_list<llvm::StringRef> Names) {
  const auto *Spec = dyn_cast_or_null<ClassTemplateSpecializationDecl>(RD);
  if (!Spec || !Spec->isInStdNamespace())
    return false;
  const IdentifierInfo *Id = Spec->getSpecializedTemplate()->getIdentifier();
  if (!Id)
    return false;
  for (llvm::StringRef Name : Names)
    if (Id->getName() == Name)
      return true;
  return false;
}

/// Whether T is a std::map / std::unordered_map whose values are
/// std::function.
bool isTableOfFunctions(QualType T) {
  const auto *Spec = dyn_cast_or_null<ClassTemplateSpecializationDecl>(
      T.getNonReferenceType()->getAsCXXRecordDecl());
  if (!isStdTemplateNamed(Spec, {"map", "unordered_map"}) ||
      Spec->getTemplateArgs().size() < 2 ||
      Spec->getTemplateArgs()[1].getKind() != TemplateArgument::Type)
    return false;
  return isStdFunctionType(Spec->getTemplateArgs()[1].getAsType());
}

/// The member or variable E names (`loader_`, `this->loader_`, `table`).
const ValueDecl *storageOf(const Expr *E) {
  if (!E)
    return nullptr;
  E = E->IgnoreParenImpCasts();
  if (const auto *Member = dyn_cast<MemberExpr>(E))
    return dyn_cast<FieldDecl>(Member->getMemberDecl());
  if (const auto *Ref = dyn_cast<DeclRefExpr>(E))
    if (const auto *Var = dyn_cast<VarDecl>(Ref->getDecl());
        Var && !isa<ParmVarDecl>(Var))
      return Var;
  return nullptr;
}

/// The std::function member, or the table whose element E is
/// (`table[k]`, `table.at(k)`), that E denotes.
const ValueDecl *slotOf(const Expr *E) {
  if (!E)
    return nullptr;
  E = E->IgnoreParenImpCasts();
  if (const ValueDecl *D = storageOf(E))
    return isStdFunctionType(D->getType()) ? D : nullptr;
  const Expr *Table = nullptr;
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(E);
      Op && Op->getOperator() == OO_Subscript && Op->getNumArgs() == 2)
    Table = Op->getArg(0);
  else if (const auto *Call = dyn_cast<CXXMemberCallExpr>(E);
           Call && Call->getMethodDecl() &&
           Call->getMethodDecl()->getIdentifier() &&
           Call->getMethodDecl()->getName() == "at")
    Table = Call->getImplicitObjectArgument();
  const ValueDecl *D = storageOf(Table);
  return D && isTableOfFunctions(D->getType()) ? D : nullptr;
}

/// Calls Fn with every function or lambda that E mentions (not inside a
/// lambda's body): what storing E may put into a std::function.
template <class Fn> void forEachCallableIn(const Stmt *S, Fn Add) {
  if (!S)
    return;
  if (const auto *Lambda = dyn_cast<LambdaExpr>(S)) {
    Add(Lambda->getCallOperator());
    return;
  }
  if (const auto *Ref = dyn_cast<DeclRefExpr>(S))
    if (const auto *FD = dyn_cast<FunctionDecl>(Ref->getDecl()))
      if (!isa<CXXMethodDecl>(FD) || cast<CXXMethodDecl>(FD)->isStatic())
        Add(FD);
  for (const Stmt *Child : S->children())
    forEachCallableIn(Child, Add);
}

class Indexer : public RecursiveASTVisitor<Indexer> {
public:
  Indexer(
      const SourceManager &SM,
      llvm::DenseMap<const ValueDecl *,
                     llvm::SmallSetVector<const FunctionDecl *, 4>> &Stored)
      : SM(SM), Stored(Stored) {}

  bool shouldVisitTemplateInstantiations() const { return true; }
  bool shouldVisitLambdaBodies() const { return true; }

  bool TraverseDecl(Decl *D) {
    if (D && !isa<TranslationUnitDecl>(D) &&
        SM.isInSystemHeader(SM.getExpansionLoc(D->getLocation())))
      return true;
    return RecursiveASTVisitor::TraverseDecl(D);
  }

  // `slot = value;`, `table[k] = value;`
  bool VisitCXXOperatorCallExpr(CXXOperatorCallExpr *Op) {
    if (Op->getOperator() == OO_Equal && Op->getNumArgs() == 2)
      store(slotOf(Op->getArg(0)), Op->getArg(1));
    return true;
  }

  // table.emplace(k, value), try_emplace, insert({k, value}),
  // insert_or_assign(k, value), emplace_hint.
  bool VisitCXXMemberCallExpr(CXXMemberCallExpr *Call) {
    const CXXMethodDecl *Method = Call->getMethodDecl();
    const ValueDecl *Table = storageOf(Call->getImplicitObjectArgument());
    if (!Method || !Method->getIdentifier() || !Table ||
        !isTableOfFunctions(Table->getType()))
      return true;
    llvm::StringRef Name = Method->getName();
    if (Name == "emplace" || Name == "try_emplace" || Name == "insert" ||
        Name == "insert_or_assign" || Name == "emplace_hint")
      for (const Expr *Arg : Call->arguments())
        store(Table, Arg);
    return true;
  }

  // A member initialiser, a default member initialiser.
  bool VisitCXXConstructorDecl(CXXConstructorDecl *Ctor) {
    for (const CXXCtorInitializer *Init : Ctor->inits())
      if (const FieldDecl *Field = Init->getMember();
          Field && Init->isWritten() &&
          (isStdFunctionType(Field->getType()) ||
           isTableOfFunctions(Field->getType())))
        store(Field, Init->getInit());
    return true;
  }
  bool VisitFieldDecl(FieldDecl *Field) {
    if (Field->hasInClassInitializer() &&
        (isStdFunctionType(Field->getType()) ||
         isTableOfFunctions(Field->getType())))
      store(Field, Field->getInClassInitializer());
    return true;
  }
  // A table's own initialiser (a registry written as a braced list).
  bool VisitVarDecl(VarDecl *Var) {
    if (!isa<ParmVarDecl>(Var) && Var->getInit() &&
        (isTableOfFunctions(Var->getType()) ||
         isStdFunctionType(Var->getType())))
      store(Var, Var->getInit());
    return true;
  }

private:
  void store(const ValueDecl *Slot, const Expr *Value) {
    if (!Slot || !Value)
      return;
    auto &Into = Stored[Slot];
    forEachCallableIn(Value, [&](const FunctionDecl *FD) { Into.insert(FD); });
  }

  const SourceManager &SM;
  llvm::DenseMap<const ValueDecl *,
                 llvm::SmallSetVector<const FunctionDecl *, 4>> &Stored;
};

} // namespace

bool isStdFunctionType(QualType T) {
  return isStdTemplateNamed(T.getNonReferenceType()->getAsCXXRecordDecl(),
                            {"function"});
}

void StoredCallables::index(ASTContext &Context) {
  Indexed = true;
  Indexer(Context.getSourceManager(), Stored)
      .TraverseDecl(Context.getTranslationUnitDecl());
}

llvm::ArrayRef<const FunctionDecl *>
StoredCallables::targets(const Expr *Call, ASTContext &Context) {
  const auto *Op = dyn_cast_or_null<CXXOperatorCallExpr>(Call);
  if (!Op || Op->getOperator() != OO_Call || Op->getNumArgs() == 0 ||
      !isStdFunctionType(Op->getArg(0)->getType()))
    return {};
  const ValueDecl *Slot = slotOf(Op->getArg(0));
  if (!Slot)
    return {};
  if (!Indexed)
    index(Context);
  auto It = Stored.find(Slot);
  if (It == Stored.end())
    return {};
  return It->second.getArrayRef();
}

} // namespace clang::tidy::metaguard
