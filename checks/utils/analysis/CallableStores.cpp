//===--- CallableStores.cpp - metaguard-tidy -------------------*- C++ -*-===//

#include "utils/analysis/CallableStores.h"
#include "utils/analysis/ExprPlumbing.h"
#include "utils/analysis/FunctionBodies.h"
#include "utils/analysis/LocalVariables.h"
#include "utils/analysis/NameList.h"

#include "clang/AST/DeclCXX.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/SourceManager.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

namespace clang::tidy::metaguard {

namespace {

/// How many local variables a slot is looked for through (an iterator, the
/// element a range-for binds, the range it walks).
constexpr unsigned MaxSteps = 4;

/// Whether T is a std::map / std::unordered_map whose values are
/// std::function.
bool isTableOfFunctions(QualType T) {
  const auto *Spec = dyn_cast_or_null<ClassTemplateSpecializationDecl>(
      T.getNonReferenceType()->getAsCXXRecordDecl());
  if (!(isStdNamed(Spec, "map") || isStdNamed(Spec, "unordered_map")) ||
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

/// Whether FD returns a reference to a table of std::function (a registry
/// reached through a helper: `Registry &registry()`).
bool returnsTable(const FunctionDecl *FD) {
  QualType T = FD->getReturnType();
  return T->isLValueReferenceType() && isTableOfFunctions(T);
}

/// Whether FD is the standard library's (a table's own `operator=`, or
/// std::as_const, returns the table it is given).
bool isStdFunction(const FunctionDecl *FD) {
  if (FD->isInStdNamespace())
    return true;
  const auto *Method = dyn_cast<CXXMethodDecl>(FD);
  return Method && Method->getParent()->isInStdNamespace();
}

/// Whether S, a part of the body of a function, returns Var.
bool returnsVariable(const Stmt *S, const VarDecl *Var) {
  if (!S || isa<LambdaExpr>(S))
    return false;
  if (const auto *Return = dyn_cast<ReturnStmt>(S)) {
    const auto *Ref = dyn_cast_or_null<DeclRefExpr>(
        Return->getRetValue() ? Return->getRetValue()->IgnoreParenImpCasts()
                              : nullptr);
    return Ref && Ref->getDecl() == Var;
  }
  for (const Stmt *Child : S->children())
    if (returnsVariable(Child, Var))
      return true;
  return false;
}

/// The slot of a table variable: the variable, or for the static local a
/// helper returns (`static Registry r; return r;`), the helper, the name
/// other translation units reach the table by.
const ValueDecl *tableSlot(const VarDecl *Var) {
  if (!Var->isStaticLocal())
    return Var;
  const auto *Helper =
      dyn_cast_or_null<FunctionDecl>(Var->getParentFunctionOrMethod());
  if (Helper && returnsTable(Helper) && returnsVariable(Helper->getBody(), Var))
    return Helper->getCanonicalDecl();
  return Var;
}

/// The table of std::function E denotes: the table itself, a local
/// reference to it (the range of a range-for), a call of a helper that
/// returns one (keyed by the helper), or a parameter (a slot of its own,
/// whose stores are those of the tables its callers pass).
const ValueDecl *tableOf(const Expr *E, unsigned Steps = 0) {
  if (Steps > MaxSteps)
    return nullptr;
  if (const auto *Call = dyn_cast_or_null<CallExpr>(strip(E)))
    if (const FunctionDecl *Helper = Call->getDirectCallee();
        Helper && returnsTable(Helper) && !isStdFunction(Helper))
      return Helper->getCanonicalDecl();
  if (const auto *Ref = dyn_cast_or_null<DeclRefExpr>(strip(E)))
    if (const auto *Param = dyn_cast<ParmVarDecl>(Ref->getDecl());
        Param && isTableOfFunctions(Param->getType()))
      return Param;
  const ValueDecl *D = storageOf(E);
  if (!D)
    return nullptr;
  if (isTableOfFunctions(D->getType()) && !D->getType()->isReferenceType())
    return isa<VarDecl>(D) ? tableSlot(cast<VarDecl>(D)) : D;
  if (D->getType()->isReferenceType())
    if (const Expr *Init = localInitialiser(E))
      return tableOf(Init, Steps + 1);
  return nullptr;
}

/// The table an iterator E points into, when E is one of its methods'
/// iterators (`t.find(k)`, `t.begin()`) or a local initialised with one
/// (the hidden iterator of a range-for).
const ValueDecl *tableOfIteratorCall(const Expr *E, unsigned Steps = 0) {
  E = strip(E);
  if (!E || Steps > MaxSteps)
    return nullptr;
  if (const auto *Call = dyn_cast<CXXMemberCallExpr>(E))
    return isMethodNamed(Call->getMethodDecl(), {"find", "begin", "cbegin",
                                                 "lower_bound", "upper_bound"})
               ? tableOf(Call->getImplicitObjectArgument())
               : nullptr;
  return tableOfIteratorCall(localInitialiser(E), Steps + 1);
}

/// The data member E names when it is not itself a table or a
/// std::function: an iterator kept between calls (`it_ = t.find(k)`).
const FieldDecl *iteratorMember(const Expr *E) {
  const auto *Field = dyn_cast_or_null<FieldDecl>(storageOf(E));
  if (!Field || !Field->getType()->isRecordType() ||
      isTableOfFunctions(Field->getType()) ||
      isStdFunctionType(Field->getType()))
    return nullptr;
  return Field;
}

/// The slot of what an iterator E points to: the table (tableOfIteratorCall),
/// or an iterator member, a slot of its own whose stores are those of the
/// tables the member is set from.
const ValueDecl *tableOfIterator(const Expr *E) {
  if (const ValueDecl *Table = tableOfIteratorCall(E))
    return Table;
  return iteratorMember(E);
}

/// The table E is an element (a key-value pair) of: `*it`, or a local
/// initialised with one (the variable of a range-for).
const ValueDecl *tableOfElement(const Expr *E, unsigned Steps = 0) {
  E = strip(E);
  if (!E || Steps > MaxSteps)
    return nullptr;
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(E))
    return Op->getOperator() == OO_Star && Op->getNumArgs() == 1
               ? tableOfIterator(Op->getArg(0))
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
  // A function called to make the value (std::move, a factory) is not
  // stored; what it is given may be.
  if (const auto *Call = dyn_cast<CallExpr>(S)) {
    for (const Expr *Arg : Call->arguments())
      forEachCallableIn(Arg, Add);
    return;
  }
  for (const Stmt *Child : S->children())
    forEachCallableIn(Child, Add);
}

/// The parameters a stored value mentions (not inside a lambda's body) that
/// may carry a callable: `{name, std::move(make)}` in a registration's
/// constructor.
template <class Fn> void forEachCallableParameterIn(const Stmt *S, Fn Add) {
  if (!S || isa<LambdaExpr>(S))
    return;
  if (const auto *Ref = dyn_cast<DeclRefExpr>(S))
    if (const auto *Param = dyn_cast<ParmVarDecl>(Ref->getDecl()))
      Add(Param);
  for (const Stmt *Child : S->children())
    forEachCallableParameterIn(Child, Add);
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

/// The parameter Value passes on when a store puts a parameter into a slot
/// (`registry()[name] = std::move(make)` in a registration's constructor):
/// through copies, std::move, std::forward and a std::function built from
/// it. nullptr otherwise.
const ParmVarDecl *parameterOf(const Expr *Value) {
  for (unsigned Steps = 0; Value && Steps < MaxSteps; ++Steps) {
    const Expr *E = ignoreExprPlumbing(Value, ExprPlumbing());
    if (const auto *Ref = dyn_cast_or_null<DeclRefExpr>(E))
      return dyn_cast<ParmVarDecl>(Ref->getDecl());
    Value = nullptr;
    if (const auto *Call = dyn_cast_or_null<CallExpr>(E)) {
      const FunctionDecl *Callee = Call->getDirectCallee();
      if (Callee && Callee->isInStdNamespace() && Callee->getIdentifier() &&
          (Callee->getName() == "move" || Callee->getName() == "forward") &&
          Call->getNumArgs() == 1)
        Value = Call->getArg(0);
    } else if (const auto *Construct = dyn_cast_or_null<CXXConstructExpr>(E)) {
      if (Construct->getNumArgs() == 1 &&
          isStdFunctionType(Construct->getType()))
        Value = Construct->getArg(0);
    }
  }
  return nullptr;
}

/// Whether a parameter of type T may carry a callable or a table of them
/// to a store or a call through a table: its call sites count.
bool carriesCallables(QualType T) {
  T = T.getNonReferenceType();
  if (holdsCallables(T) || T->isFunctionPointerType())
    return true;
  const CXXRecordDecl *RD = T->getAsCXXRecordDecl();
  return RD && RD->isLambda();
}

} // namespace

/// What the first pass leaves to be resolved through call sites and other
/// slots once every store of the translation unit is known.
struct CallableStores::Pending {
  /// A store of a parameter's value into a slot: the slot gets what every
  /// call site passes.
  llvm::SmallVector<std::pair<const ParmVarDecl *, const ValueDecl *>, 4>
      ParamStores;
  /// Table parameters of functions with bodies: calls through them run what
  /// the tables their call sites pass hold.
  llvm::SmallSetVector<const ParmVarDecl *, 4> TableParams;
  /// Iterator members, by the tables they are set from.
  llvm::DenseMap<const FieldDecl *, llvm::SmallSetVector<const ValueDecl *, 2>>
      IteratorSources;
  /// By function (canonical): the arguments of each call of it in user
  /// code, in parameter order.
  llvm::DenseMap<const FunctionDecl *,
                 llvm::SmallVector<llvm::SmallVector<const Expr *, 4>, 2>>
      CallSites;
};

namespace {

/// Visits the user's code of a translation unit (template instantiations
/// and lambda bodies included): declarations in system headers are skipped
/// whole, so a TU that includes LibTorch pays only for its own code.
template <class Derived>
class UserCodeVisitor : public RecursiveASTVisitor<Derived> {
public:
  explicit UserCodeVisitor(const SourceManager &SM) : SM(SM) {}

  bool shouldVisitTemplateInstantiations() const { return true; }
  bool shouldVisitLambdaBodies() const { return true; }

  bool TraverseDecl(Decl *D) {
    if (D && !isa<TranslationUnitDecl>(D) &&
        SM.isInSystemHeader(SM.getExpansionLoc(D->getLocation())))
      return true;
    return RecursiveASTVisitor<Derived>::TraverseDecl(D);
  }

protected:
  const SourceManager &SM;
};

class Indexer : public UserCodeVisitor<Indexer> {
public:
  Indexer(const SourceManager &SM, CallableStores::StoreMap &Stored,
          CallableStores::Pending &Work)
      : UserCodeVisitor(SM), Stored(Stored), Work(Work) {}

  // `slot = value;`, `table[k] = value;`, `it->second = value;`, and an
  // iterator member set from a table (`it_ = table.find(k);`).
  bool VisitCXXOperatorCallExpr(CXXOperatorCallExpr *Op) {
    if (Op->getOperator() != OO_Equal || Op->getNumArgs() != 2)
      return true;
    if (isStdFunctionType(Op->getArg(0)->getType()))
      store(callableSlotOf(Op->getArg(0)), Op->getArg(1));
    else
      setIterator(iteratorMember(Op->getArg(0)), Op->getArg(1));
    return true;
  }

  // table.emplace(k, value), try_emplace, insert({k, value}),
  // insert_or_assign(k, value), emplace_hint.
  bool VisitCXXMemberCallExpr(CXXMemberCallExpr *Call) {
    if (!isMethodNamed(Call->getMethodDecl(),
                       {"emplace", "try_emplace", "insert", "insert_or_assign",
                        "emplace_hint"}))
      return true;
    if (const ValueDecl *Table = tableOf(Call->getImplicitObjectArgument()))
      for (const Expr *Arg : Call->arguments())
        store(Table, Arg);
    return true;
  }

  // A member initialiser, a default member initialiser.
  bool VisitCXXConstructorDecl(CXXConstructorDecl *Ctor) {
    for (const CXXCtorInitializer *Init : Ctor->inits()) {
      const FieldDecl *Field = Init->getMember();
      if (!Field || !Init->isWritten())
        continue;
      if (holdsCallables(Field->getType()))
        store(Field, Init->getInit());
      else if (Field->getType()->isRecordType())
        setIterator(Field, Init->getInit());
    }
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
      store(tableSlot(Var), Var->getInit());
    return true;
  }
  // A table parameter of a function with a body.
  bool VisitParmVarDecl(ParmVarDecl *Param) {
    if (!isTableOfFunctions(Param->getType()))
      return true;
    const auto *FD = dyn_cast<FunctionDecl>(Param->getDeclContext());
    if (FD && FD->doesThisDeclarationHaveABody() && !FD->isDependentContext())
      Work.TableParams.insert(Param);
    return true;
  }

private:
  void store(const ValueDecl *Slot, const Expr *Value) {
    if (!Slot || !Value)
      return;
    if (const ParmVarDecl *Param = parameterOf(Value)) {
      if (carriesCallables(Param->getType()))
        Work.ParamStores.push_back({Param, Slot});
      return;
    }
    auto &Into = Stored[Slot];
    forEachStoredCallable(Value,
                          [&](const FunctionDecl *FD) { Into.insert(FD); });
    forEachCallableParameterIn(Value, [&](const ParmVarDecl *Param) {
      if (carriesCallables(Param->getType()))
        Work.ParamStores.push_back({Param, Slot});
    });
  }

  void setIterator(const FieldDecl *Field, const Expr *Value) {
    if (!Field)
      return;
    if (const ValueDecl *Table = tableOfIteratorCall(Value))
      Work.IteratorSources[Field].insert(Table);
  }

  CallableStores::StoreMap &Stored;
  CallableStores::Pending &Work;
};

/// Collects the call sites of the functions whose parameters carry
/// callables or tables (constructors run by a static object included).
class CallSiteFinder : public UserCodeVisitor<CallSiteFinder> {
public:
  CallSiteFinder(const SourceManager &SM, CallableStores::Pending &Work)
      : UserCodeVisitor(SM), Work(Work) {}

  bool VisitCallExpr(CallExpr *Call) {
    const FunctionDecl *Callee = Call->getDirectCallee();
    if (!Callee || !counts(Callee))
      return true;
    // A member operator's first argument is its object.
    unsigned Skip =
        isa<CXXOperatorCallExpr>(Call) && isa<CXXMethodDecl>(Callee) ? 1 : 0;
    add(Callee,
        llvm::ArrayRef<const Expr *>(Call->getArgs(), Call->getNumArgs())
            .drop_front(Skip));
    return true;
  }
  bool VisitCXXConstructExpr(CXXConstructExpr *Construct) {
    const CXXConstructorDecl *Ctor = Construct->getConstructor();
    if (Ctor && counts(Ctor))
      add(Ctor, llvm::ArrayRef<const Expr *>(Construct->getArgs(),
                                             Construct->getNumArgs()));
    return true;
  }

private:
  bool counts(const FunctionDecl *FD) const {
    if (SM.isInSystemHeader(FD->getLocation()))
      return false;
    return llvm::any_of(FD->parameters(), [](const ParmVarDecl *P) {
      return carriesCallables(P->getType());
    });
  }
  void add(const FunctionDecl *Callee, llvm::ArrayRef<const Expr *> Args) {
    Work.CallSites[Callee->getCanonicalDecl()].emplace_back(Args.begin(),
                                                            Args.end());
  }

  CallableStores::Pending &Work;
};

/// The argument a call site gives parameter Index (a default argument
/// included); nullptr when it gives none.
const Expr *argumentAt(llvm::ArrayRef<const Expr *> Args, unsigned Index) {
  if (Index >= Args.size())
    return nullptr;
  if (const auto *Default = dyn_cast<CXXDefaultArgExpr>(Args[Index]))
    return Default->getExpr();
  return Args[Index];
}

} // namespace

bool isStdFunctionType(QualType T) {
  return isStdNamed(T.getNonReferenceType()->getAsCXXRecordDecl(), "function");
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
  Pending Work;
  const SourceManager &SM = Context.getSourceManager();
  Indexer(SM, Stored, Work).TraverseDecl(Context.getTranslationUnitDecl());
  // Call sites are collected only when a parameter needs them.
  if (!Work.ParamStores.empty() || !Work.TableParams.empty())
    CallSiteFinder(SM, Work).TraverseDecl(Context.getTranslationUnitDecl());
  resolveParameterStores(Work);
  resolveTableParameters(Work);
  resolveIteratorMembers(Work);
}

void CallableStores::addStores(const ValueDecl *To, const ValueDecl *From) {
  if (To == From)
    return;
  auto It = Stored.find(From);
  if (It == Stored.end())
    return;
  llvm::SmallVector<const FunctionDecl *, 4> Copy(It->second.begin(),
                                                  It->second.end());
  Stored[To].insert(Copy.begin(), Copy.end());
}

void CallableStores::resolveParameterStores(Pending &Work) {
  // A parameter stored into a slot gets there what each call passes; a
  // call that passes its own parameter on passes what its callers do.
  llvm::DenseSet<std::pair<const ParmVarDecl *, const ValueDecl *>> Seen;
  for (size_t I = 0; I < Work.ParamStores.size() && I < 64; ++I) {
    auto [Param, Slot] = Work.ParamStores[I];
    if (!Seen.insert({Param, Slot}).second)
      continue;
    const auto *FD = dyn_cast<FunctionDecl>(Param->getDeclContext());
    if (!FD)
      continue;
    auto Sites = Work.CallSites.find(FD->getCanonicalDecl());
    if (Sites == Work.CallSites.end())
      continue;
    for (const auto &Args : Sites->second) {
      const Expr *Arg = argumentAt(Args, Param->getFunctionScopeIndex());
      if (!Arg)
        continue;
      if (const ParmVarDecl *Passed = parameterOf(Arg)) {
        Work.ParamStores.push_back({Passed, Slot});
        continue;
      }
      auto &Into = Stored[Slot];
      forEachStoredCallable(Arg,
                            [&](const FunctionDecl *F) { Into.insert(F); });
    }
  }
}

void CallableStores::resolveTableParameters(Pending &Work) {
  // The tables each parameter's call sites pass, when every call site
  // passes one the index knows (else what it holds is not known here).
  llvm::MapVector<const ParmVarDecl *,
                  llvm::SmallSetVector<const ValueDecl *, 2>>
      Passed;
  for (const ParmVarDecl *Param : Work.TableParams) {
    const auto *FD = cast<FunctionDecl>(Param->getDeclContext());
    auto Sites = Work.CallSites.find(FD->getCanonicalDecl());
    if (Sites == Work.CallSites.end())
      continue;
    llvm::SmallSetVector<const ValueDecl *, 2> Tables;
    bool Known = true;
    for (const auto &Args : Sites->second) {
      const Expr *Arg = argumentAt(Args, Param->getFunctionScopeIndex());
      const ValueDecl *Table = Arg ? tableOf(Arg) : nullptr;
      if (!Table || Table == Param) {
        Known = false;
        break;
      }
      Tables.insert(Table);
    }
    if (Known)
      Passed[Param] = std::move(Tables);
  }
  // A parameter passed on from a parameter that is not known is not known.
  for (bool Changed = true; Changed;) {
    Changed = false;
    Passed.remove_if([&](const auto &Entry) {
      bool Unknown = llvm::any_of(Entry.second, [&](const ValueDecl *Table) {
        const auto *Inner = dyn_cast<ParmVarDecl>(Table);
        return Inner && !Passed.count(Inner);
      });
      Changed |= Unknown;
      return Unknown;
    });
  }
  // What a function stores into its table parameter goes into the tables
  // passed to it, and a parameter holds what they hold; a parameter passed
  // on to another function is resolved in a later round.
  for (const auto &[Param, Tables] : Passed)
    for (const ValueDecl *Table : Tables)
      addStores(Table, Param);
  for (unsigned Round = 0; Round < MaxSteps; ++Round)
    for (const auto &[Param, Tables] : Passed)
      for (const ValueDecl *Table : Tables)
        addStores(Param, Table);
  // The tables behind each parameter, for the stores of other translation
  // units.
  for (const auto &[Param, Tables] : Passed) {
    llvm::SmallSetVector<const ValueDecl *, 2> Roots;
    llvm::SmallVector<const ValueDecl *, 4> Queue(Tables.begin(), Tables.end());
    for (unsigned Steps = 0; !Queue.empty() && Steps < 16; ++Steps) {
      const ValueDecl *Table = Queue.pop_back_val();
      const auto *Inner = dyn_cast<ParmVarDecl>(Table);
      auto It = Inner ? Passed.find(Inner) : Passed.end();
      if (It == Passed.end())
        Roots.insert(Table);
      else
        Queue.append(It->second.begin(), It->second.end());
    }
    Sources[Param].assign(Roots.begin(), Roots.end());
  }
}

void CallableStores::resolveIteratorMembers(Pending &Work) {
  for (const auto &[Field, Tables] : Work.IteratorSources) {
    auto &Roots = Sources[Field];
    for (const ValueDecl *Table : Tables) {
      addStores(Field, Table);
      llvm::SmallVector<const ValueDecl *, 2> Behind = sourcesOf(Table);
      Roots.append(Behind.begin(), Behind.end());
    }
  }
}

llvm::SmallVector<const ValueDecl *, 2>
CallableStores::sourcesOf(const ValueDecl *Slot) {
  if (!Indexed)
    index();
  auto It = Sources.find(Slot);
  if (It != Sources.end())
    return It->second;
  return {Slot};
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

const ValueDecl *callableSlotOfCall(const Expr *Call) {
  const auto *Op = dyn_cast_or_null<CXXOperatorCallExpr>(Call);
  if (!Op || Op->getOperator() != OO_Call || Op->getNumArgs() == 0 ||
      !isStdFunctionType(Op->getArg(0)->getType()))
    return nullptr;
  return callableSlotOf(Op->getArg(0));
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
  // A parameter or an iterator member holds what its tables hold: those
  // are the slots other translation units know.
  for (const auto &[Slot, Functions] : Stored)
    if (!Functions.empty() && !Sources.count(Slot))
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
