//===--- CfgReachability.cpp - metaguard-tidy ------------------*- C++ -*-===//

#include "utils/analysis/CfgReachability.h"
#include "utils/ClangCompat.h"
#include "utils/analysis/ThrowingExprs.h"

#include "clang/AST/DeclCXX.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/StmtCXX.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"

namespace clang::tidy::metaguard {

std::unique_ptr<CfgReachability>
CfgReachability::build(const Decl *D, const Stmt *Body, ASTContext &Context) {
  if (!Body)
    return nullptr;
  CFG::BuildOptions Options;
  Options.AddImplicitDtors = true;
  Options.AddTemporaryDtors = true;
  Options.AddInitializers = true;
  Options.AddCXXDefaultInitExprInCtors = true;
  Options.setAllAlwaysAdd();
  std::unique_ptr<CFG> Graph =
      CFG::buildCFG(D, const_cast<Stmt *>(Body), &Context, Options);
  if (!Graph)
    return nullptr;
  auto Result = std::unique_ptr<CfgReachability>(
      new CfgReachability(std::move(Graph), Body, Context));
  // Constructor initialisers are evaluated by the CFG too.
  if (const auto *Ctor = dyn_cast<CXXConstructorDecl>(D))
    for (const CXXCtorInitializer *Init : Ctor->inits())
      Result->Parents.index(Init->getInit());
  if (Result->Graph->try_blocks_begin() != Result->Graph->try_blocks_end())
    Result->indexTryBlocks();
  return Result;
}

void CfgReachability::indexTryBlocks() {
  // Each element that may throw is where an exception into the handlers of
  // the try blocks around it may come from.
  llvm::DenseMap<const CXXTryStmt *, unsigned> Dispatches;
  for (const CFGBlock *Dispatch :
       llvm::make_range(Graph->try_blocks_begin(), Graph->try_blocks_end()))
    if (const auto *Try =
            dyn_cast_or_null<CXXTryStmt>(Dispatch->getTerminatorStmt()))
      Dispatches[Try] = Dispatch->getBlockID();
  for (const CFGBlock *Block : *Graph) {
    if (!Block)
      continue;
    unsigned Index = 0;
    for (const CFGElement &Element : *Block) {
      Position At{Block->getBlockID(), Index++};
      compat::Optional<CFGStmt> S = Element.getAs<CFGStmt>();
      if (!S || !mayThrow(S->getStmt()))
        continue;
      const Stmt *Child = S->getStmt();
      for (unsigned Steps = 0; Child && Steps < 256; ++Steps) {
        const Stmt *Parent = Parents.parent(Child);
        if (const auto *Try = dyn_cast_or_null<CXXTryStmt>(Parent);
            Try && Try->getTryBlock() == Child)
          if (auto It = Dispatches.find(Try); It != Dispatches.end())
            ThrowPoints[It->second].push_back(At);
        Child = Parent;
      }
    }
  }
}

CfgReachability::CfgReachability(std::unique_ptr<CFG> G, const Stmt *Body,
                                 ASTContext &Context)
    : Graph(std::move(G)), Body(Body), Context(Context) {
  Parents.index(Body);
  for (const CFGBlock *Block : *Graph) {
    if (!Block)
      continue;
    if (ById.size() <= Block->getBlockID())
      ById.resize(Block->getBlockID() + 1, nullptr);
    ById[Block->getBlockID()] = Block;
    unsigned Index = 0;
    for (const CFGElement &Element : *Block) {
      Position At{Block->getBlockID(), Index++};
      if (compat::Optional<CFGStmt> S = Element.getAs<CFGStmt>())
        Positions.try_emplace(S->getStmt(), At);
      else if (compat::Optional<CFGAutomaticObjDtor> D =
                   Element.getAs<CFGAutomaticObjDtor>())
        VarEnds[D->getVarDecl()].push_back(At);
      else if (compat::Optional<CFGTemporaryDtor> T =
                   Element.getAs<CFGTemporaryDtor>())
        TemporaryEnds[T->getBindTemporaryExpr()].push_back(At);
    }
  }
}

std::optional<CfgReachability::Position>
CfgReachability::position(const Stmt *S) const {
  // Walk up from S to the innermost statement the CFG evaluates.
  const Stmt *Current = S;
  for (unsigned Steps = 0; Current && Steps < 64; ++Steps) {
    auto It = Positions.find(Current);
    if (It != Positions.end())
      return It->second;
    if (Current == Body || isa<LambdaExpr>(Current))
      return std::nullopt;
    Current = Parents.parent(Current);
  }
  return std::nullopt;
}

llvm::ArrayRef<CfgReachability::Position>
CfgReachability::destructions(const Expr *Construct) const {
  // Climb from the construction to what owns the object: a temporary (its
  // CXXBindTemporaryExpr), possibly lifetime-extended by a reference, or the
  // variable it initialises.
  const Stmt *Current = Construct;
  for (unsigned Steps = 0; Current && Steps < 16; ++Steps) {
    const Stmt *Parent = Parents.parent(Current);
    if (const auto *Bind = dyn_cast_or_null<CXXBindTemporaryExpr>(Parent)) {
      auto It = TemporaryEnds.find(Bind);
      if (It != TemporaryEnds.end())
        return It->second;
    } else if (const auto *Temp =
                   dyn_cast_or_null<MaterializeTemporaryExpr>(Parent)) {
      if (const auto *Var =
              dyn_cast_or_null<VarDecl>(Temp->getExtendingDecl())) {
        auto It = VarEnds.find(Var);
        return It == VarEnds.end() ? llvm::ArrayRef<Position>() : It->second;
      }
    } else if (const auto *Decls = dyn_cast_or_null<DeclStmt>(Parent)) {
      for (const Decl *D : Decls->decls())
        if (const auto *Var = dyn_cast<VarDecl>(D);
            Var && Var->getInit() == Current) {
          auto It = VarEnds.find(Var);
          if (It != VarEnds.end())
            return It->second;
        }
      return {};
    } else if (!isa_and_nonnull<ImplicitCastExpr, ParenExpr, ExprWithCleanups,
                                CXXFunctionalCastExpr>(Parent)) {
      return {}; // An argument, a return value, a member initialiser...
    }
    Current = Parent;
  }
  return {};
}

std::optional<CfgReachability::Reach> CfgReachability::findReachingGen(
    const Stmt *Target, llvm::ArrayRef<const Stmt *> Gens,
    llvm::ArrayRef<const Stmt *> Kills, bool EntryIsGen,
    llvm::ArrayRef<const Expr *> Ended, Paths Through) const {
  std::optional<Position> TargetPos = position(Target);
  if (!TargetPos)
    return std::nullopt;
  return search(*TargetPos, Gens, Kills, EntryIsGen, Ended, Through);
}

std::optional<CfgReachability::Reach> CfgReachability::findReachingGenAtExit(
    llvm::ArrayRef<const Stmt *> Gens, llvm::ArrayRef<const Stmt *> Kills,
    bool EntryIsGen, llvm::ArrayRef<const Expr *> Ended, Paths Through) const {
  const CFGBlock &Exit = Graph->getExit();
  return search(Position{Exit.getBlockID(), static_cast<unsigned>(Exit.size())},
                Gens, Kills, EntryIsGen, Ended, Through);
}

std::optional<CfgReachability::Reach>
CfgReachability::search(Position TargetPos, llvm::ArrayRef<const Stmt *> Gens,
                        llvm::ArrayRef<const Stmt *> Kills, bool EntryIsGen,
                        llvm::ArrayRef<const Expr *> Ended,
                        Paths Through) const {

  // Events per block: element index -> (is gen, statement).
  struct Event {
    unsigned Index;
    bool IsGen;
    const Stmt *S;
  };
  llvm::DenseMap<unsigned, llvm::SmallVector<Event, 2>> Events;
  auto AddEvents = [&](llvm::ArrayRef<const Stmt *> Stmts, bool IsGen) {
    for (const Stmt *S : Stmts)
      if (std::optional<Position> P = position(S))
        Events[P->Block].push_back(Event{P->Index, IsGen, S});
  };
  AddEvents(Kills, /*IsGen=*/false);
  AddEvents(Gens, /*IsGen=*/true);
  for (const Expr *Construct : Ended)
    for (Position P : destructions(Construct))
      Events[P.Block].push_back(Event{P.Index, false, Construct});

  // Scans Block backwards from element End (exclusive). Returns 1 for a gen
  // (stored in Found), 0 for a kill, -1 if the scan passed the whole range.
  auto Scan = [&](unsigned Block, unsigned End, const Stmt *&Found) -> int {
    auto It = Events.find(Block);
    if (It == Events.end())
      return -1;
    const Event *Best = nullptr;
    for (const Event &E : It->second) {
      if (E.Index >= End)
        continue;
      // Latest element wins; at the same element a kill wins over a gen.
      if (!Best || E.Index > Best->Index ||
          (E.Index == Best->Index && !E.IsGen))
        Best = &E;
    }
    if (!Best)
      return -1;
    Found = Best->S;
    return Best->IsGen ? 1 : 0;
  };

  const unsigned NumBlocks = Graph->getNumBlockIDs();
  llvm::BitVector Visited(NumBlocks);
  // The points that may throw already followed into a handler.
  llvm::DenseSet<std::pair<unsigned, unsigned>> VisitedThrows;
  struct Item {
    const CFGBlock *Block;
    unsigned End; ///< Scanned backwards from this element (exclusive).
  };
  llvm::SmallVector<Item, 16> Worklist;
  const CFGBlock *Entry = &Graph->getEntry();

  auto Push = [&](const CFGBlock *P) {
    if (!P || Visited.test(P->getBlockID()))
      return;
    Visited.set(P->getBlockID());
    Worklist.push_back({P, static_cast<unsigned>(P->size())});
  };
  auto PushPreds = [&](const CFGBlock *Block) {
    for (const CFGBlock::AdjacentBlock &Pred : Block->preds())
      Push(Pred.getReachableBlock());
    // A handler is entered from each point of its try block that may throw,
    // with the state just before that point.
    if (Through != Paths::WithHandlers ||
        !isa_and_nonnull<CXXCatchStmt>(Block->getLabel()))
      return;
    for (const CFGBlock::AdjacentBlock &Pred : Block->preds()) {
      const CFGBlock *Dispatch = Pred.getReachableBlock();
      auto Points = Dispatch ? ThrowPoints.find(Dispatch->getBlockID())
                             : ThrowPoints.end();
      if (Points == ThrowPoints.end())
        continue;
      for (Position P : Points->second)
        if (P.Block < ById.size() && ById[P.Block] &&
            VisitedThrows.insert({P.Block, P.Index}).second)
          Worklist.push_back({ById[P.Block], P.Index});
    }
  };

  // The target's own block, before the target.
  const CFGBlock *TargetBlock =
      TargetPos.Block < ById.size() ? ById[TargetPos.Block] : nullptr;
  if (!TargetBlock)
    return std::nullopt;
  Worklist.push_back({TargetBlock, TargetPos.Index});
  while (!Worklist.empty()) {
    const auto [Block, End] = Worklist.pop_back_val();
    const Stmt *Found = nullptr;
    int R = Scan(Block->getBlockID(), End, Found);
    if (R == 1)
      return Reach{Found};
    if (R == 0)
      continue;
    if (Block == Entry) {
      if (EntryIsGen)
        return Reach{nullptr};
      continue;
    }
    PushPreds(Block);
  }
  return std::nullopt;
}

const CfgReachability *CfgCache::get(const Decl *D, const Stmt *Body,
                                     ASTContext &Context) {
  auto [It, Inserted] = Cache.try_emplace(D);
  if (Inserted)
    It->second = CfgReachability::build(D, Body, Context);
  return It->second.get();
}

} // namespace clang::tidy::metaguard
