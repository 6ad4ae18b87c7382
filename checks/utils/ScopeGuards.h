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

#include "clang/AST/ASTContext.h"
#include "clang/AST/DeclCXX.h"

#include <optional>

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

/// The innermost guard alive at S: a guard variable declared before S in a
/// block that encloses S (or in the init-statement or condition of an
/// enclosing if/switch/for/while), looking no further out than Body, the
/// function body. Temporaries (`MetaDeviceScope();` as a statement) are gone
/// at the end of their full-expression and never count.
std::optional<LiveGuard> innermostLiveGuard(const Stmt *S, const Stmt *Body,
                                            const ScopeGuardClassifier &Guards,
                                            ASTContext &Context);

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_SCOPEGUARDS_H
