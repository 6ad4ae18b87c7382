//===--- OffloadGuards.cpp - metaguard-tidy --------------------*- C++ -*-===//

#include "utils/domain/OffloadGuards.h"
#include "utils/analysis/LocalVariables.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/StmtCXX.h"
#include "clang/Basic/Builtins.h"
#include "clang/Basic/SourceManager.h"

namespace clang::tidy::metaguard {

namespace {

/// The name of the runtime's query that makes a move safe when it says no.
constexpr llvm::StringLiteral NoOffloadQuery = "has_offloaded_parameters";

/// E without what only restates its truth value: parentheses, implicit and
/// explicit conversions to bool, and `__builtin_expect(E, hint)` (what
/// `TORCH_CHECK(cond, ...)` expands to: `if (__builtin_expect(
/// static_cast<bool>(!(cond)), 0)) torchCheckFail(...);`).
const Expr *withoutBranchHints(const Expr *E) {
  for (unsigned Steps = 0; E && Steps < 16; ++Steps) {
    E = E->IgnoreParenImpCasts();
    if (const auto *Cast = dyn_cast<ExplicitCastExpr>(E);
        Cast && Cast->getType()->isBooleanType()) {
      E = Cast->getSubExpr();
      continue;
    }
    if (const auto *Call = dyn_cast<CallExpr>(E);
        Call && Call->getBuiltinCallee() == Builtin::BI__builtin_expect &&
        Call->getNumArgs() == 2) {
      E = Call->getArg(0);
      continue;
    }
    break;
  }
  return E;
}

/// Whether Cond, evaluating to WhenTrue, implies that the model of Ref has
/// no offloaded parameters: `!has_offloaded_parameters(m)` when true,
/// `has_offloaded_parameters(m)` when false, through !, && and ||, and
/// through a local that keeps the value it was initialised with (`const bool
/// offloaded = has_offloaded_parameters(m);`). Depth bounds the locals
/// followed.
bool impliesNoOffload(const Expr *Cond, const ModuleRef &Ref, bool WhenTrue,
                      unsigned Depth = 0) {
  if (!Cond || Depth > 8)
    return false;
  Cond = withoutBranchHints(Cond);
  if (const auto *U = dyn_cast<UnaryOperator>(Cond))
    return U->getOpcode() == UO_LNot &&
           impliesNoOffload(U->getSubExpr(), Ref, !WhenTrue, Depth);
  if (const auto *B = dyn_cast<BinaryOperator>(Cond)) {
    if ((B->getOpcode() == BO_LAnd && WhenTrue) ||
        (B->getOpcode() == BO_LOr && !WhenTrue))
      return impliesNoOffload(B->getLHS(), Ref, WhenTrue, Depth) ||
             impliesNoOffload(B->getRHS(), Ref, WhenTrue, Depth);
    return false;
  }
  if (const auto *DRE = dyn_cast<DeclRefExpr>(Cond)) {
    const auto *Var = dyn_cast<VarDecl>(DRE->getDecl());
    return Var && Var->hasLocalStorage() && !isa<ParmVarDecl>(Var) &&
           Var->getType()->isBooleanType() && keepsItsInitialiser(Var) &&
           impliesNoOffload(Var->getInit(), Ref, WhenTrue, Depth + 1);
  }
  const auto *Call = dyn_cast<CallExpr>(Cond);
  if (WhenTrue || !Call || Call->getNumArgs() != 1)
    return false;
  const FunctionDecl *Callee = Call->getDirectCallee();
  if (!Callee || !Callee->getIdentifier() ||
      Callee->getName() != NoOffloadQuery)
    return false;
  // The query on the model, or on a module containing Ref.
  std::optional<ModuleRef> Asked = moduleRefOf(Call->getArg(0));
  return Asked &&
         Asked->Root->getCanonicalDecl() == Ref.Root->getCanonicalDecl() &&
         isPathPrefix(Asked->Path, Ref.Path);
}

/// Whether control never continues after S.
bool alwaysExits(const Stmt *S) {
  if (!S)
    return false;
  if (isa<ReturnStmt, BreakStmt, ContinueStmt>(S))
    return true;
  if (const auto *Block = dyn_cast<CompoundStmt>(S))
    return !Block->body_empty() && alwaysExits(Block->body_back());
  if (const auto *E = dyn_cast<Expr>(S)) {
    // A throw whose operand builds temporaries (`throw Error("..." + s);`)
    // is wrapped in the cleanups of its full-expression.
    E = E->IgnoreParenImpCasts();
    if (isa<CXXThrowExpr>(E))
      return true;
    if (const auto *Call = dyn_cast<CallExpr>(E))
      if (const FunctionDecl *Callee = Call->getDirectCallee())
        return Callee->isNoReturn();
  }
  return false;
}

/// Whether an exception thrown in the block of Try never lets control go on
/// after it: every handler leaves (rethrows, returns, ...), so the code
/// after the `try` runs only when its block ran to its end.
bool handlersAllExit(const CXXTryStmt *Try) {
  for (unsigned I = 0; I < Try->getNumHandlers(); ++I)
    if (!alwaysExits(Try->getHandler(I)->getHandlerBlock()))
      return false;
  return true;
}

/// The early exits `if (...) return;` among Items, and those at the top of
/// the block of a `try` among them whose handlers all exit.
void collectEarlyExits(const CompoundStmt *Block,
                       llvm::SmallVectorImpl<const IfStmt *> &Exits) {
  for (const Stmt *Item : Block->body()) {
    if (const auto *Exit = dyn_cast<IfStmt>(Item);
        Exit && !Exit->getElse() && alwaysExits(Exit->getThen()))
      Exits.push_back(Exit);
    else if (const auto *Try = dyn_cast<CXXTryStmt>(Item);
             Try && handlersAllExit(Try))
      collectEarlyExits(Try->getTryBlock(), Exits);
  }
}

} // namespace

bool NoOffloadGuards::guarded(const Stmt *S, const ModuleRef &Ref,
                              const FunctionDecl *F, StmtParents &Parents) {
  Parents.indexFunction(F);
  const SourceManager &SM = F->getASTContext().getSourceManager();
  const Stmt *Child = S;
  for (unsigned Steps = 0; Child && Steps < 4096; ++Steps) {
    const Stmt *Parent = Parents.parent(Child);
    if (!Parent || isa<LambdaExpr>(Parent))
      return false;
    if (const auto *If = dyn_cast<IfStmt>(Parent)) {
      if ((Child == If->getThen() &&
           impliesNoOffload(If->getCond(), Ref, /*WhenTrue=*/true)) ||
          (Child == If->getElse() &&
           impliesNoOffload(If->getCond(), Ref, /*WhenTrue=*/false)))
        return true;
    } else if (const auto *Block = dyn_cast<CompoundStmt>(Parent)) {
      // An earlier `if (has_offloaded_parameters(m)) return;` in the block,
      // or in a `try` before it that no handler lets go on.
      auto [It, Inserted] = EarlyExits.try_emplace(Block);
      if (Inserted)
        collectEarlyExits(Block, It->second);
      for (const IfStmt *Exit : It->second)
        if (SM.isBeforeInTranslationUnit(Exit->getEndLoc(),
                                         Child->getBeginLoc()) &&
            impliesNoOffload(Exit->getCond(), Ref, /*WhenTrue=*/false))
          return true;
    }
    Child = Parent;
  }
  return false;
}

} // namespace clang::tidy::metaguard
