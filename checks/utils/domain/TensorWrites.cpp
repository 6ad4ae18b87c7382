//===--- TensorWrites.cpp - metaguard-tidy ---------------------*- C++ -*-===//

#include "utils/domain/TensorWrites.h"
#include "utils/ClangCompat.h"
#include "utils/analysis/LocalVariables.h"

#include "clang/AST/ExprCXX.h"
#include "clang/AST/StmtCXX.h"
#include "llvm/ADT/STLExtras.h"

namespace clang::tidy::metaguard {

namespace {

/// How many local variables are followed from a parameter back to the
/// module it came from (including the hidden variables of range-for loops).
constexpr unsigned MaxParameterHops = 12;

/// Methods of the containers of parameters (and of their items) whose
/// result holds the same tensors.
constexpr llvm::StringLiteral ElementAccessors[] = {
    "value", "values", "items", "pairs", "at",
    "find",  "front",  "back",  "begin", "cbegin"};

/// Whether the value of E (a call) is thrown away: it is an expression
/// statement, so the call is made for what it does to its object.
bool isDiscarded(const Expr *E, const StmtParents &Parents) {
  const Stmt *Node = E;
  for (unsigned Steps = 0; Steps < 8; ++Steps) {
    Node = Parents.parent(Node);
    if (!Node)
      return false;
    if (isa<ExprWithCleanups, CXXBindTemporaryExpr, ParenExpr>(Node))
      continue;
    if (const auto *Cast = dyn_cast<ImplicitCastExpr>(Node))
      return Cast->getCastKind() == CK_ToVoid;
    if (const auto *Cast = dyn_cast<CStyleCastExpr>(Node))
      return Cast->getCastKind() == CK_ToVoid;
    if (isa<CompoundStmt, LabelStmt, AttributedStmt, CaseStmt, DefaultStmt>(
            Node))
      return true;
    if (const auto *If = dyn_cast<IfStmt>(Node))
      return If->getCond() != E;
    if (isa<ForStmt, WhileStmt, DoStmt, CXXForRangeStmt>(Node))
      return true; // Bodies; conditions are Exprs with an implicit cast.
    return false;
  }
  return false;
}

} // namespace

bool TensorWrites::isInPlaceMethod(const CXXMethodDecl *Method) const {
  // Names with a leading underscore are LibTorch internals that set flags
  // (`_coalesced_`), not values.
  return Method && Method->getIdentifier() && Method->getName().size() > 1 &&
         compat::endsWith(Method->getName(), "_") &&
         !compat::startsWith(Method->getName(), "_") &&
         !Ignored.matches(Method) && isTensorClass(Method->getParent());
}

bool TensorWrites::writesObject(const CXXMemberCallExpr *Call,
                                const StmtParents &Parents) const {
  const CXXMethodDecl *Method = Call->getMethodDecl();
  if (isInPlaceMethod(Method))
    return true;
  return Mutators.matches(Method) &&
         (Call->getNumArgs() > 0 || isDiscarded(Call, Parents));
}

const Expr *TensorWrites::writtenArgument(const CallExpr *Call) const {
  const FunctionDecl *Callee = Call->getDirectCallee();
  if (!Callee || isa<CXXMethodDecl>(Callee) || !Callee->getIdentifier() ||
      !compat::endsWith(Callee->getName(), "_") || Call->getNumArgs() == 0 ||
      Ignored.matches(Callee))
    return nullptr;
  if (!compat::startsWith(qualifiedNameOf(Callee), "torch::nn::init::"))
    return nullptr;
  return Call->getArg(0);
}

const Expr *TensorWrites::loadedModel(const CallExpr *Call) {
  if (const auto *Member = dyn_cast<CXXMemberCallExpr>(Call)) {
    const CXXMethodDecl *Method = Member->getMethodDecl();
    if (Method &&
        (isNamed(Method, "load_state_dict") ||
         (isNamed(Method, "load") && Method->getNumParams() == 1)) &&
        isModuleClass(Method->getParent()))
      return Member->getImplicitObjectArgument();
    return nullptr;
  }
  const FunctionDecl *Callee = Call->getDirectCallee();
  if (!Callee || !isNamed(Callee, "load") || Call->getNumArgs() < 2 ||
      qualifiedNameOf(Callee) != "torch::load" ||
      !isModuleOrHolderType(Call->getArg(0)->getType()))
    return nullptr;
  return Call->getArg(0);
}

std::optional<ModuleRef> TensorWrites::parameterOwner(const Expr *E) const {
  unsigned Hops = 0;
  for (unsigned Steps = 0; E && Steps < 64; ++Steps) {
    E = ignoreObjectPlumbing(E);
    if (const auto *U = dyn_cast<UnaryOperator>(E)) {
      if (U->getOpcode() != UO_Deref)
        return std::nullopt;
      E = U->getSubExpr();
      continue;
    }
    if (const auto *Subscript = dyn_cast<ArraySubscriptExpr>(E)) {
      E = Subscript->getBase();
      continue;
    }
    if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(E)) {
      // params["w"], *it, item->..., *params.find("w").
      OverloadedOperatorKind Kind = Op->getOperator();
      if ((Kind == OO_Subscript || Kind == OO_Star || Kind == OO_Arrow) &&
          Op->getNumArgs() >= 1) {
        E = Op->getArg(0);
        continue;
      }
      return std::nullopt;
    }
    if (const auto *Call = dyn_cast<CXXMemberCallExpr>(E)) {
      const CXXMethodDecl *Method = Call->getMethodDecl();
      if (!Method)
        return std::nullopt;
      const Expr *Object = Call->getImplicitObjectArgument();
      if ((isNamed(Method, "named_parameters") ||
           isNamed(Method, "parameters")) &&
          isModuleClass(Method->getParent()))
        return moduleRefOf(Object);
      // Accessors of the containers and items they return: the result is
      // (a handle to) the same parameter. items() and pairs() of
      // named_parameters() hold the same tensors (pairs() copies the
      // handles, which share them).
      if (Method->getIdentifier() &&
          llvm::is_contained(ElementAccessors, Method->getName())) {
        E = Object;
        continue;
      }
      // A mutator without arguments (data()) gives write access to the
      // tensor's storage; an in-place method returns its object.
      if ((Call->getNumArgs() == 0 && Mutators.matches(Method)) ||
          isInPlaceMethod(Method)) {
        E = Object;
        continue;
      }
      return std::nullopt;
    }
    if (const auto *Member = dyn_cast<MemberExpr>(E)) {
      const auto *Field = dyn_cast<FieldDecl>(Member->getMemberDecl());
      // kv.second of named_parameters().pairs(): the element.
      if (isStandardElementMember(Field)) {
        E = Member->getBase();
        continue;
      }
      // m->layer->weight: a tensor member of a submodule.
      if (!Field || !isTensorType(Field->getType()))
        return std::nullopt;
      return moduleRefOf(Member->getBase());
    }
    if (const auto *Ref = dyn_cast<DeclRefExpr>(E)) {
      // A tensor (or a list of them) the function is given: whose it is,
      // its callers know (the summaries' "changes the parameters of its
      // argument").
      if (const auto *Param = dyn_cast<ParmVarDecl>(Ref->getDecl())) {
        if (!GivenTensors || !holdsTensors(Param->getType()))
          return std::nullopt;
        ModuleRef Given;
        Given.Root = Param;
        return Given;
      }
      // A local handle initialised from a parameter shares its tensor
      // (copies of torch::Tensor are shallow), and so does the variable of a
      // range-for loop over parameters(), or a structured binding of one of
      // its elements (`for (auto &[name, p] : ...pairs())`).
      const VarDecl *Var = variableOfName(Ref->getDecl());
      if (!Var || !Var->hasLocalStorage() || isa<ParmVarDecl>(Var) ||
          !Var->getInit() || ++Hops > MaxParameterHops)
        return std::nullopt;
      E = Var->getInit();
      continue;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

} // namespace clang::tidy::metaguard
