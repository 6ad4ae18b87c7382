//===--- ExplicitOptions.h - metaguard-tidy --------------------*- C++ -*-===//
//
// Whether a loader call's options object visibly sets a member such as
// `device_map` or `offload_folder`.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_DOMAIN_EXPLICITOPTIONS_H
#define METAGUARD_CHECKS_UTILS_DOMAIN_EXPLICITOPTIONS_H

#include "utils/analysis/CfgReachability.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/Expr.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace clang::tidy::metaguard {

/// The member of metaguard::LoadOptions that places weights explicitly.
inline constexpr llvm::StringLiteral DeviceMapMember = "device_map";
/// The member of metaguard::LoadOptions that offloads weights to disk.
inline constexpr llvm::StringLiteral OffloadFolderMember = "offload_folder";

/// Finds where an argument of Call (a loader call in function Fn) visibly
/// sets one of Members, and returns that expression, or nullptr:
/// - a braced initialiser that initialises the member, by designator
///   (`{.device_map = m}`) or by position;
/// - a local options variable whose initialiser does, or whose member is
///   assigned or modified (`opts.device_map = m;`, `opts.device_map["x"] =
///   ...`, `opts.device_map.emplace(...)`) on some path before Call.
/// Options that come from parameters, members or function results are not
/// visible and give nullptr.
const Expr *findExplicitOptionMember(const Expr *Call,
                                     llvm::ArrayRef<llvm::StringRef> Members,
                                     const FunctionDecl *Fn,
                                     ASTContext &Context, CfgCache &Cfgs);

/// The same for one options expression used at statement At (an argument,
/// a returned value): a braced initialiser, or a local options variable
/// whose writes reach At.
const Expr *findExplicitOptionMemberOf(const Expr *Options, const Stmt *At,
                                       llvm::ArrayRef<llvm::StringRef> Members,
                                       const FunctionDecl *Fn,
                                       ASTContext &Context, CfgCache &Cfgs);

/// The value a member found by findExplicitOptionMember is given: the
/// initialiser itself, or the right-hand side of `opts.member = value;`.
/// nullptr when it is modified some other way (`opts.device_map.set(...)`).
/// Fn is the function of the loader call (whose CFG Cfgs keeps).
const Expr *explicitOptionValue(const Expr *Found, const FunctionDecl *Fn,
                                ASTContext &Context, CfgCache &Cfgs);

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_DOMAIN_EXPLICITOPTIONS_H
