//===--- ScopeGuards.h - metaguard-tidy ------------------------*- C++ -*-===//
//
// Lexical device scopes: local RAII guard objects (metaguard::DeviceScope,
// metaguard::MetaDeviceScope, ...) and which one is alive at a statement.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_DOMAIN_SCOPEGUARDS_H
#define METAGUARD_CHECKS_UTILS_DOMAIN_SCOPEGUARDS_H

#include "utils/analysis/CfgReachability.h"
#include "utils/analysis/NameList.h"
#include "utils/analysis/StmtParents.h"
#include "utils/domain/DeviceExpr.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/DeclCXX.h"

#include "llvm/ADT/DenseMap.h"

#include <memory>
#include <optional>
#include <vector>

namespace clang::tidy::metaguard {

/// Decides which local variables are device-scope guards.
class ScopeGuardClassifier {
public:
  ScopeGuardClassifier() = default;
  ScopeGuardClassifier(llvm::StringRef MetaScopeTypes,
                       llvm::StringRef DeviceScopeTypes)
      : MetaTypes(MetaScopeTypes), DeviceTypes(DeviceScopeTypes) {}

  /// The device a guard variable makes ambient, or std::nullopt if VD is not
  /// a guard. A guard is a local, non-static, non-parameter variable (or a
  /// reference bound to a temporary, whose lifetime it extends) whose class
  /// is, or derives from:
  /// - a MetaScopeTypes class: Meta (`auto g = init_empty_weights();`);
  /// - a DeviceScopeTypes class: the kind of the device expression it is
  ///   constructed from (Unknown when that is not visible).
  std::optional<DeviceKind> classify(const VarDecl *VD) const;

  /// Also guards:
  /// - a variable of an RAII class of the user's whose object holds a meta
  ///   guard (a data member of a MetaScopeTypes class or of another such
  ///   class, or such a base): Meta;
  /// - a std::optional or std::unique_ptr of a guard class, or a standard
  ///   container of guards or of std::unique_ptr to them (a holder): the
  ///   guard lives only while the holder is engaged, with the device it is
  ///   engaged with, see guardHolderEngagedAt().
  ///
  /// Whether RD is, or derives from, a MetaScopeTypes or DeviceScopeTypes
  /// class (its methods implement the scope and are not analysed).
  bool isGuardClass(const CXXRecordDecl *RD) const;

  /// Whether objects of RD (not a guard class itself) hold a meta guard for
  /// their lifetime: their constructor opens a meta scope and their
  /// destructor closes it. Memoised per translation unit.
  bool isMetaRaiiClass(const CXXRecordDecl *RD) const;
  /// Whether Field of RD is a DeviceScopeTypes guard whose default member
  /// initialiser opens a meta scope that no constructor of RD overrides.
  bool isMetaByDefault(const CXXRecordDecl *RD, const FieldDecl *Field) const;

  /// Whether VD (classified as a guard) holds it in a std::optional,
  /// std::unique_ptr or container.
  bool isGuardHolder(const VarDecl *VD) const;

  /// Whether a parameter is a meta guard passed in (by reference or
  /// pointer): the function runs inside the caller's scope.
  bool isMetaGuardParameter(const ParmVarDecl *P) const;

  /// Forgets the memoised classes (at the end of a translation unit).
  void clearCache() const { RaiiClasses.clear(); }

  const NameList &metaTypes() const { return MetaTypes; }
  const NameList &deviceTypes() const { return DeviceTypes; }

private:
  /// The guard class a holder type (std::optional<G>, std::unique_ptr<G>)
  /// holds, or nullptr.
  const CXXRecordDecl *heldGuardClass(QualType T) const;
  std::optional<DeviceKind> classifyRecord(const CXXRecordDecl *RD) const;

  NameList MetaTypes;
  NameList DeviceTypes;
  mutable llvm::DenseMap<const CXXRecordDecl *, bool> RaiiClasses;
};

/// A guard variable alive at a statement.
struct LiveGuard {
  const VarDecl *Var = nullptr;
  DeviceKind Kind = DeviceKind::Unknown;
  /// Held in a std::optional / std::unique_ptr: live only where engaged.
  bool Holder = false;
  /// The statement that declares Var (nullptr for parameters).
  const Stmt *DeclaredBy = nullptr;
};

/// The device of the guard that the holder G holds at S on some path, or
/// std::nullopt when it is empty there: its initialiser engages it
/// (std::in_place, a guard, std::make_unique, new) or an emplace /
/// assignment / reset(p) / a container's emplace_back or push_back does,
/// with no reset() / = std::nullopt / = nullptr / pop_back() / clear()
/// after it. Meta when a meta guard reaches S on some path; otherwise the
/// device the reaching guard is built with (Unknown when not visible). F is
/// the function and Cfg its CFG.
std::optional<DeviceKind> guardHolderEngagedAt(const LiveGuard &G,
                                               const Stmt *S,
                                               const FunctionDecl *F,
                                               const CfgReachability &Cfg);

/// Finds the innermost guard alive at a statement: a guard variable declared
/// before it in a block that encloses it (or in the init-statement or
/// condition of an enclosing if/switch/for/while), looking no further out
/// than the function body. Temporaries (`MetaDeviceScope();` as a statement)
/// are gone at the end of their full-expression and never count.
///
/// Each block is scanned once (the guards declared before each of its
/// statements are remembered), so a query costs the nesting depth of the
/// statement, not the size of the blocks around it.
class LiveGuardFinder {
public:
  LiveGuardFinder(const ScopeGuardClassifier &Guards, StmtParents &Parents)
      : Guards(Guards), Parents(Parents) {}

  /// The innermost guard alive at S, a statement of the function whose body
  /// is Body (indexed on first use).
  std::optional<LiveGuard> innermost(const Stmt *S, const Stmt *Body);
  void clear() { Blocks.clear(); }

private:
  struct BlockGuards {
    /// Position of each statement of the block.
    llvm::DenseMap<const Stmt *, unsigned> IndexOf;
    /// The last guard declared before the statement at each position.
    std::vector<std::optional<LiveGuard>> Before;
  };
  const BlockGuards &blockGuards(const CompoundStmt *Block);

  const ScopeGuardClassifier &Guards;
  StmtParents &Parents;
  llvm::DenseMap<const CompoundStmt *, std::unique_ptr<BlockGuards>> Blocks;
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_DOMAIN_SCOPEGUARDS_H
