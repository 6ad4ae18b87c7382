//===--- ScopeGuards.h - metaguard-tidy ------------------------*- C++ -*-===//
//
// Lexical device scopes: local RAII guard objects (metaguard::DeviceScope,
// metaguard::MetaDeviceScope, ...) and which one is alive at a statement.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_SCOPEGUARDS_H
#define METAGUARD_CHECKS_UTILS_SCOPEGUARDS_H

#include "DeviceExpr.h"
#include "NameList.h"
#include "StmtParents.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/DeclCXX.h"

#include "llvm/ADT/DenseMap.h"

#include <memory>
#include <optional>
#include <vector>

namespace clang::tidy::metaguard {

/// Default of the MetaScopeTypes option.
inline constexpr llvm::StringLiteral DefaultMetaScopeTypes =
    "::metaguard::MetaDeviceScope";
/// Default of the DeviceScopeTypes option.
inline constexpr llvm::StringLiteral DefaultDeviceScopeTypes =
    "::metaguard::DeviceScope";

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

  /// Whether RD is, or derives from, a MetaScopeTypes or DeviceScopeTypes
  /// class (its methods implement the scope and are not analysed).
  bool isGuardClass(const CXXRecordDecl *RD) const;

  const NameList &metaTypes() const { return MetaTypes; }
  const NameList &deviceTypes() const { return DeviceTypes; }

private:
  NameList MetaTypes;
  NameList DeviceTypes;
};

/// A guard variable alive at a statement.
struct LiveGuard {
  const VarDecl *Var = nullptr;
  DeviceKind Kind = DeviceKind::Unknown;
};

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

#endif // METAGUARD_CHECKS_UTILS_SCOPEGUARDS_H
