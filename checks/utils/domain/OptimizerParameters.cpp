//===--- OptimizerParameters.cpp - metaguard-tidy --------------*- C++ -*-===//

#include "utils/domain/OptimizerParameters.h"
#include "utils/analysis/FunctionBodies.h"
#include "utils/analysis/NameList.h"
#include "utils/analysis/RecordBases.h"

#include "llvm/ADT/STLExtras.h"

namespace clang::tidy::metaguard {

namespace {

/// How deep parameter collections are followed (braced lists, groups,
/// locals initialised from other locals).
constexpr unsigned MaxCollectionDepth = 6;

/// Methods of standard containers that put elements in.
constexpr llvm::StringLiteral Inserters[] = {"push_back", "emplace_back",
                                             "insert", "emplace"};

/// The local variable E names, looking through `*p` and `p->` of smart
/// pointers.
const VarDecl *localVariable(const Expr *E) {
  for (unsigned Steps = 0; E && Steps < 4; ++Steps) {
    E = ignoreObjectPlumbing(E);
    if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(E)) {
      if ((Op->getOperator() != OO_Arrow && Op->getOperator() != OO_Star) ||
          Op->getNumArgs() != 1)
        return nullptr;
      E = Op->getArg(0);
      continue;
    }
    if (const auto *U = dyn_cast<UnaryOperator>(E)) {
      if (U->getOpcode() != UO_Deref)
        return nullptr;
      E = U->getSubExpr();
      continue;
    }
    const auto *Ref = dyn_cast<DeclRefExpr>(E);
    const auto *Var = Ref ? dyn_cast<VarDecl>(Ref->getDecl()) : nullptr;
    return Var && Var->hasLocalStorage() && !isa<ParmVarDecl>(Var) ? Var
                                                                   : nullptr;
  }
  return nullptr;
}

/// The parameter collection an optimizer's initialiser is built from:
/// `Adam(params, opts)`, `std::make_unique<Adam>(params, opts)`,
/// `new Adam(params)`.
const Expr *builtFrom(const Expr *Init) {
  Init = ignoreObjectPlumbing(Init);
  if (const auto *New = dyn_cast<CXXNewExpr>(Init))
    Init = New->getInitializer();
  if (!Init)
    return nullptr;
  if (const auto *Construct = dyn_cast<CXXConstructExpr>(Init))
    return Construct->getNumArgs() > 0 &&
                   isOptimizerClass(Construct->getType()->getAsCXXRecordDecl())
               ? Construct->getArg(0)
               : nullptr;
  const auto *Call = dyn_cast<CallExpr>(Init);
  const FunctionDecl *Callee = Call ? Call->getDirectCallee() : nullptr;
  if (!Callee || Call->getNumArgs() == 0 ||
      !(isNamed(Callee, "make_unique") || isNamed(Callee, "make_shared")))
    return nullptr;
  const auto *Args = Callee->getTemplateSpecializationArgs();
  if (!Args || Args->size() == 0 ||
      Args->get(0).getKind() != TemplateArgument::Type ||
      !isOptimizerClass(Args->get(0).getAsType()->getAsCXXRecordDecl()))
    return nullptr;
  return Call->getArg(0);
}

/// Adds to Out the modules whose parameters the collection E holds.
void collectOwners(const Expr *E, const TensorWrites &Writes,
                   llvm::SmallVectorImpl<ModuleRef> &Out, unsigned Depth) {
  if (!E || Depth > MaxCollectionDepth)
    return;
  E = ignoreObjectPlumbing(E)->IgnoreImplicit();
  if (std::optional<ModuleRef> Owner = Writes.parameterOwner(E)) {
    Out.push_back(*Owner);
    return;
  }
  if (const auto *List = dyn_cast<InitListExpr>(E)) {
    for (const Expr *Item : List->inits())
      collectOwners(Item, Writes, Out, Depth + 1);
    return;
  }
  if (const auto *List = dyn_cast<CXXStdInitializerListExpr>(E)) {
    collectOwners(List->getSubExpr(), Writes, Out, Depth + 1);
    return;
  }
  if (const auto *Construct = dyn_cast<CXXConstructExpr>(E)) {
    // std::vector<Tensor>{...}, OptimizerParamGroup(params, options).
    for (const Expr *Arg : Construct->arguments())
      collectOwners(Arg, Writes, Out, Depth + 1);
    return;
  }
  if (const auto *Cast = dyn_cast<CastExpr>(E)) {
    // OptimizerParamGroup(params): a constructor conversion.
    collectOwners(Cast->getSubExpr(), Writes, Out, Depth + 1);
    return;
  }
  if (const auto *Call = dyn_cast<CallExpr>(E)) {
    if (isNamed(Call->getDirectCallee(), "move") && Call->getNumArgs() == 1)
      collectOwners(Call->getArg(0), Writes, Out, Depth + 1);
    return;
  }
  const VarDecl *Var = localVariable(E);
  if (!Var)
    return;
  collectOwners(Var->getInit(), Writes, Out, Depth + 1);
  // A vector filled in the function: `params.push_back(item.value())`.
  const auto *F = dyn_cast<FunctionDecl>(Var->getDeclContext());
  if (!F)
    return;
  forEachEvaluatedStmt(F, [&](const Stmt *S) {
    const auto *Insert = dyn_cast<CXXMemberCallExpr>(S);
    const CXXMethodDecl *Method = Insert ? Insert->getMethodDecl() : nullptr;
    if (!Method || !Method->getIdentifier() ||
        !llvm::is_contained(Inserters, Method->getName()) ||
        localVariable(Insert->getImplicitObjectArgument()) != Var)
      return;
    for (const Expr *Arg : Insert->arguments())
      collectOwners(Arg, Writes, Out, Depth + 1);
  });
}

} // namespace

bool isOptimizerClass(const CXXRecordDecl *RD) {
  return RD && recordOrBase(RD, [](const CXXRecordDecl *R) {
           return isNamed(R, "Optimizer") &&
                  qualifiedNameOf(R) == "torch::optim::Optimizer";
         });
}

std::optional<OptimizerStep> optimizerStep(const CXXMemberCallExpr *Call,
                                           const TensorWrites &Writes) {
  const CXXMethodDecl *Method = Call->getMethodDecl();
  if (!isNamed(Method, "step") || !isOptimizerClass(Method->getParent()))
    return std::nullopt;
  const VarDecl *Var = localVariable(Call->getImplicitObjectArgument());
  if (!Var || !Var->getInit())
    return std::nullopt;
  OptimizerStep Step;
  Step.Optimizer = Var;
  collectOwners(builtFrom(Var->getInit()), Writes, Step.Owners, 0);
  if (Step.Owners.empty())
    return std::nullopt;
  return Step;
}

} // namespace clang::tidy::metaguard
