//===--- CfgReachability.h - metaguard-tidy --------------------*- C++ -*-===//
//
// A flow-sensitive "gen/kill" reachability query over a function's CFG, at
// CFG element granularity (statements inside a basic block are ordered).
//
// Question answered: is there a path from one of the "gen" statements to the
// target statement that passes no "kill" statement? Loop back edges count,
// so a gen late in a loop body reaches a target early in the same body.
//
// Clang's CFG has no edges for exceptions: a catch handler is unreachable.
// A query may ask for the paths through handlers too (Paths::WithHandlers):
// an exception leaves its try block at a call that may throw (its callee's
// type is not noexcept), a throw-expression, a new-expression or a
// dynamic_cast to a reference, so a handler is entered from each of these
// with the state just before it (a call that throws has not done its
// work: a reset that throws resets nothing, a setter that throws sets
// nothing).
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_ANALYSIS_CFGREACHABILITY_H
#define METAGUARD_CHECKS_UTILS_ANALYSIS_CFGREACHABILITY_H

#include "utils/analysis/StmtParents.h"

#include "clang/AST/ASTContext.h"
#include "clang/Analysis/CFG.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <memory>
#include <optional>
#include <vector>

namespace clang::tidy::metaguard {

class CfgReachability {
public:
  /// What reaches the target.
  struct Reach {
    /// The gen statement found nearest to the target on a kill-free path;
    /// nullptr when the path starts at the function's entry.
    const Stmt *Gen = nullptr;
  };

  /// Which paths a query follows.
  enum class Paths {
    /// The CFG's edges: catch handlers are never entered.
    Normal,
    /// Also into a try block's catch handlers, from each point of the try
    /// block that may throw (with the state just before it).
    WithHandlers,
  };

  /// Builds the CFG of Body, the body of D (a function, method, constructor,
  /// or lambda call operator). Returns nullptr when Clang cannot build it.
  /// Constructors include their member initialisers and in-class default
  /// member initialisers.
  static std::unique_ptr<CfgReachability> build(const Decl *D, const Stmt *Body,
                                                ASTContext &Context);

  /// Whether S (or the CFG element that evaluates it) is in the CFG. False for
  /// statements in code the CFG pruned as unreachable.
  bool contains(const Stmt *S) const { return position(S).has_value(); }

  /// Searches backwards from Target. Returns how Target is reached on some
  /// path that passes no statement of Kills, starting at a statement of Gens
  /// (or at the function's entry when EntryIsGen), or std::nullopt if there
  /// is no such path. A statement is matched with the CFG element that
  /// evaluates it (the innermost enclosing element), so sub-expressions may be
  /// passed. Statements that are not in the CFG are ignored.
  ///
  /// The end of an object's life may kill too: Ended lists constructions
  /// (a local variable's initialiser, a temporary) whose object's destruction
  /// counts as a kill wherever the CFG runs its destructor (the end of its
  /// block, a return, break or goto out of it, the end of the
  /// full-expression for a temporary). A construction whose object is not
  /// destroyed in this function (a return value, a heap object, a member
  /// being initialised) kills nothing.
  std::optional<Reach> findReachingGen(const Stmt *Target,
                                       llvm::ArrayRef<const Stmt *> Gens,
                                       llvm::ArrayRef<const Stmt *> Kills,
                                       bool EntryIsGen = false,
                                       llvm::ArrayRef<const Expr *> Ended = {},
                                       Paths Through = Paths::Normal) const;

  /// Like findReachingGen, with the function's exit as the target: how the
  /// function can return (or end) with a gen that no kill followed. With
  /// Paths::WithHandlers, an exception that leaves the function is not a
  /// way to its exit (only handlers are entered).
  std::optional<Reach> findReachingGenAtExit(
      llvm::ArrayRef<const Stmt *> Gens, llvm::ArrayRef<const Stmt *> Kills,
      bool EntryIsGen = false, llvm::ArrayRef<const Expr *> Ended = {},
      Paths Through = Paths::Normal) const;

  /// Convenience: whether Target is reachable from the function's entry
  /// without passing a statement of Kills.
  bool reachableFromEntry(const Stmt *Target,
                          llvm::ArrayRef<const Stmt *> Kills,
                          Paths Through = Paths::Normal) const {
    return findReachingGen(Target, {}, Kills, /*EntryIsGen=*/true, {}, Through)
        .has_value();
  }

  /// Whether the object Construct builds is destroyed in this function (see
  /// findReachingGen's Ended).
  bool destroys(const Expr *Construct) const {
    return !destructions(Construct).empty();
  }

  const CFG &cfg() const { return *Graph; }
  /// Parents of the statements of the body (and constructor initialisers).
  const StmtParents &parents() const { return Parents; }

private:
  struct Position {
    unsigned Block;
    unsigned Index;
  };

  CfgReachability(std::unique_ptr<CFG> Graph, const Stmt *Body,
                  ASTContext &Context);
  std::optional<Position> position(const Stmt *S) const;
  /// The CFG elements that destroy the object Construct builds.
  llvm::ArrayRef<Position> destructions(const Expr *Construct) const;
  std::optional<Reach>
  search(Position Target, llvm::ArrayRef<const Stmt *> Gens,
         llvm::ArrayRef<const Stmt *> Kills, bool EntryIsGen,
         llvm::ArrayRef<const Expr *> Ended, Paths Through) const;
  /// Indexes the points that may throw of each try block (only for CFGs
  /// that have some).
  void indexTryBlocks();

  std::unique_ptr<CFG> Graph;
  const Stmt *Body;
  ASTContext &Context;
  llvm::DenseMap<const Stmt *, Position> Positions;
  /// Implicit destructor calls: of local variables (also of temporaries
  /// whose lifetime a reference variable extends), and of temporaries (by
  /// their CXXBindTemporaryExpr).
  llvm::DenseMap<const VarDecl *, llvm::SmallVector<Position, 2>> VarEnds;
  llvm::DenseMap<const Stmt *, llvm::SmallVector<Position, 1>> TemporaryEnds;
  StmtParents Parents;
  std::vector<const CFGBlock *> ById;
  /// Try dispatch block -> the elements of its try block that may throw
  /// (where an exception into its handlers comes from).
  llvm::DenseMap<unsigned, llvm::SmallVector<Position, 8>> ThrowPoints;
};

/// Builds each function's CFG once and keeps it for the translation unit.
class CfgCache {
public:
  /// The reachability engine of D's body, or nullptr if no CFG can be built.
  const CfgReachability *get(const Decl *D, const Stmt *Body,
                             ASTContext &Context);
  void clear() { Cache.clear(); }

private:
  llvm::DenseMap<const Decl *, std::unique_ptr<CfgReachability>> Cache;
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_ANALYSIS_CFGREACHABILITY_H
