//===--- CallableStores.cpp - metaguard-tidy -------------------*- C++ -*-===//

#include "utils/analysis/CallableStores.h"
#include "utils/analysis/FunctionBodies.h"
#include "utils/analysis/LocalVariables.h"

#include "clang/AST/DeclCXX.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/SourceManager.h"

namespace clang::tidy::metaguard {

namespace {

/// How many local variables a slot is looked for through (an iterator, the
/// element a range-for binds, the range it walks).
constexpr unsigned MaxSteps = 4;

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

bool isMethodNamed(const CXXMethodDecl *Method,
                   std::initializer_list<llvm::StringRef> Names) {
  if (!Method || !Method->getIdentifier())
    return false;
  return llvm::is_contained(Names, Method->getName());
}

/// E without parentheses, implicit nodes and the copy of an iterator or
/// element (`auto it = t.find(k)` before C++17's guaranteed elision).
const Expr *strip(const Expr *E) {
  for (unsigned Steps = 0; E && Steps < MaxSteps; ++Steps) {
    E = E->IgnoreImplicit()->IgnoreParenImpCasts();
    const auto *Copy = dyn_cast<CXXConstructExpr>(E);
    if (!Copy || Copy->getNumArgs() != 1 ||
        !Copy->getConstructor()->isCopyOrMoveConstructor())
      return E;
    E = Copy->getArg(0);
  }
  return E;
}

/// The member or variable E names (`loader_`, `this->loader_`, `table`);
/// not a member of the standard library's classes (a pair's `second` is a
/// part of the element it belongs to, see tableOfValue).
const ValueDecl *storageOf(const Expr *E) {
  E = strip(E);
  if (const auto *Member = dyn_cast_or_null<MemberExpr>(E)) {
    const auto *Field = dyn_cast<FieldDecl>(Member->getMemberDecl());
    return Field && !Field->getParent()->isInStdNamespace() ? Field : nullptr;
  }
  if (const auto *Ref = dyn_cast_or_null<DeclRefExpr>(E))
    if (const auto *Var = dyn_cast<VarDecl>(Ref->getDecl());
        Var && !isa<ParmVarDecl>(Var))
      return Var;
  return nullptr;
}

/// The initialiser of the local variable E names, when it stands for
/// something else (an iterator, an element, a reference to a table).
const Expr *localInitialiser(const Expr *E) {
  const auto *Ref = dyn_cast_or_null<DeclRefExpr>(strip(E));
  const auto *Var = Ref ? dyn_cast<VarDecl>(Ref->getDecl()) : nullptr;
  if (!Var || isa<ParmVarDecl>(Var) || !Var->hasLocalStorage())
    return nullptr;
  return Var->getInit();
}

/// The table of std::function E denotes: the table itself, or a local
/// reference to it (the range of a range-for).
const ValueDecl *tableOf(const Expr *E, unsigned Steps = 0) {
  const ValueDecl *D = storageOf(E);
  if (!D || Steps > MaxSteps)
    return nullptr;
  if (isTableOfFunctions(D->getType()) && !D->getType()->isReferenceType())
    return D;
  if (D->getType()->isReferenceType())
    if (const Expr *Init = localInitialiser(E))
      return tableOf(Init, Steps + 1);
  return nullptr;
}

/// The table an iterator E points into: `t.find(k)`, `t.begin()`, or a
/// local initialised with one (the hidden iterator of a range-for).
const ValueDecl *tableOfIterator(const Expr *E, unsigned Steps = 0) {
  E = strip(E);
  if (!E || Steps > MaxSteps)
    return nullptr;
  if (const auto *Call = dyn_cast<CXXMemberCallExpr>(E))
    return isMethodNamed(Call->getMethodDecl(), {"find", "begin", "cbegin",
                                                 "lower_bound", "upper_bound"})
               ? tableOf(Call->getImplicitObjectArgument())
               : nullptr;
  return tableOfIterator(localInitialiser(E), Steps + 1);
}

/// The table E is an element (a key-value pair) of: `*it`, or a local
/// initialised with one (the variable of a range-for).
const ValueDecl *tableOfElement(const Expr *E, unsigned Steps = 0) {
  E = strip(E);
  if (!E || Steps > MaxSteps)
    return nullptr;
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(E))
    return Op->getOperator() == OO_Star && Op->getNumArgs() == 1
               ? tableOfIterator(Op->getArg(0), Steps + 1)
               : nullptr;
  return tableOfElement(localInitialiser(E), Steps + 1);
}

/// The table whose element's value E is: `x.second` or `it->second` of an
/// element or iterator, and the second name of a structured binding of an
/// element (`for (auto &[name, make] : t)`).
const ValueDecl *tableOfValue(const Expr *E) {
  if (const auto *Member = dyn_cast<MemberExpr>(E)) {
    const auto *Field = dyn_cast<FieldDecl>(Member->getMemberDecl());
    if (!Field || !Field->getIdentifier() || Field->getName() != "second")
      return nullptr;
    const Expr *Base = strip(Member->getBase());
    if (!Member->isArrow())
      return tableOfElement(Base);
    const auto *Arrow = dyn_cast_or_null<CXXOperatorCallExpr>(Base);
    return Arrow && Arrow->getOperator() == OO_Arrow
               ? tableOfIterator(Arrow->getArg(0))
               : nullptr;
  }
  const auto *Ref = dyn_cast<DeclRefExpr>(E);
  const auto *Binding = Ref ? dyn_cast<BindingDecl>(Ref->getDecl()) : nullptr;
  const auto *Whole =
      Binding
          ? dyn_cast_or_null<DecompositionDecl>(Binding->getDecomposedDecl())
          : nullptr;
  if (!Whole || Whole->bindings().size() != 2 ||
      Whole->bindings()[1] != Binding || !Whole->getInit())
    return nullptr;
  return tableOfElement(Whole->getInit());
}

/// The callables a stored value puts into a slot: the function, lambda or
/// std::function built from one the value is, or else every function and
/// lambda it mentions (not inside a lambda's body): a braced list of pairs,
/// a factory's argument.
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

template <class Fn> void forEachStoredCallable(const Expr *Value, Fn Add) {
  if (const FunctionDecl *Exact = functionOfCallableObject(Value))
    Add(Exact);
  else
    forEachCallableIn(Value, Add);
}

bool holdsCallables(QualType T) {
  return isStdFunctionType(T) || isTableOfFunctions(T);
}

class Indexer : public RecursiveASTVisitor<Indexer> {
public:
  Indexer(const SourceManager &SM,
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

  // `slot = value;`, `table[k] = value;`, `it->second = value;`
  bool VisitCXXOperatorCallExpr(CXXOperatorCallExpr *Op) {
    if (Op->getOperator() == OO_Equal && Op->getNumArgs() == 2 &&
        isStdFunctionType(Op->getArg(0)->getType()))
      store(callableSlotOf(Op->getArg(0)), Op->getArg(1));
    return true;
  }

  // table.emplace(k, value), try_emplace, insert({k, value}),
  // insert_or_assign(k, value), emplace_hint.
  bool VisitCXXMemberCallExpr(CXXMemberCallExpr *Call) {
    const ValueDecl *Table = tableOf(Call->getImplicitObjectArgument());
    if (Table && isMethodNamed(Call->getMethodDecl(),
                               {"emplace", "try_emplace", "insert",
                                "insert_or_assign", "emplace_hint"}))
      for (const Expr *Arg : Call->arguments())
        store(Table, Arg);
    return true;
  }

  // A member initialiser, a default member initialiser.
  bool VisitCXXConstructorDecl(CXXConstructorDecl *Ctor) {
    for (const CXXCtorInitializer *Init : Ctor->inits())
      if (const FieldDecl *Field = Init->getMember();
          Field && Init->isWritten() && holdsCallables(Field->getType()))
        store(Field, Init->getInit());
    return true;
  }
  bool VisitFieldDecl(FieldDecl *Field) {
    if (Field->hasInClassInitializer() && holdsCallables(Field->getType()))
      store(Field, Field->getInClassInitializer());
    return true;
  }
  // A variable's own initialiser (a registry written as a braced list).
  bool VisitVarDecl(VarDecl *Var) {
    if (!isa<ParmVarDecl>(Var) && Var->getInit() &&
        !Var->getType()->isReferenceType() && holdsCallables(Var->getType()))
      store(Var, Var->getInit());
    return true;
  }

private:
  void store(const ValueDecl *Slot, const Expr *Value) {
    if (!Slot || !Value)
      return;
    auto &Into = Stored[Slot];
    forEachStoredCallable(Value,
                          [&](const FunctionDecl *FD) { Into.insert(FD); });
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

const ValueDecl *callableSlotOf(const Expr *E) {
  E = strip(E);
  if (const auto *Deref = dyn_cast_or_null<UnaryOperator>(E);
      Deref && Deref->getOpcode() == UO_Deref)
    E = strip(Deref->getSubExpr());
  if (!E)
    return nullptr;
  if (const ValueDecl *D = storageOf(E)) {
    QualType T = D->getType();
    if (isStdFunctionType(T) && !T->isReferenceType())
      return D;
    if (T->isFunctionPointerType() && isa<VarDecl>(D))
      return D;
  }
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(E);
      Op && Op->getOperator() == OO_Subscript && Op->getNumArgs() == 2)
    return tableOf(Op->getArg(0));
  if (const auto *Call = dyn_cast<CXXMemberCallExpr>(E))
    return isMethodNamed(Call->getMethodDecl(), {"at"})
               ? tableOf(Call->getImplicitObjectArgument())
               : nullptr;
  return tableOfValue(E);
}

void CallableStores::index() {
  Indexed = true;
  Indexer(Context.getSourceManager(), Stored)
      .TraverseDecl(Context.getTranslationUnitDecl());
}

llvm::ArrayRef<const FunctionDecl *> CallableStores::targets(const Expr *E) {
  if (!E || !isStdFunctionType(E->getType()))
    return {};
  const ValueDecl *Slot = callableSlotOf(E);
  if (!Slot)
    return {};
  if (!Indexed)
    index();
  auto It = Stored.find(Slot);
  if (It == Stored.end())
    return {};
  return It->second.getArrayRef();
}

llvm::ArrayRef<const FunctionDecl *>
CallableStores::callTargets(const Expr *Call) {
  const auto *Op = dyn_cast_or_null<CXXOperatorCallExpr>(Call);
  if (!Op || Op->getOperator() != OO_Call || Op->getNumArgs() == 0)
    return {};
  return targets(Op->getArg(0));
}

void CallableStores::forEachStore(
    llvm::function_ref<void(const ValueDecl *,
                            llvm::ArrayRef<const FunctionDecl *>)>
        Fn) {
  if (!Indexed)
    index();
  for (const auto &[Slot, Functions] : Stored)
    if (!Functions.empty())
      Fn(Slot, Functions.getArrayRef());
}

const FunctionDecl *CallableStores::soleTarget(const Expr *E) {
  const auto *Var = dyn_cast_or_null<VarDecl>(callableSlotOf(E));
  if (!Var || !keepsItsInitialiser(Var))
    return nullptr;
  const Expr *Init = Var->getAnyInitializer();
  return Init ? functionOfCallableObject(Init) : nullptr;
}

} // namespace clang::tidy::metaguard
