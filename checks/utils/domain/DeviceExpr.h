//===--- DeviceExpr.h - metaguard-tidy -------------------------*- C++ -*-===//
//
// Classifies an expression that denotes a device (torch::Device, a device
// type, or a device string) as the meta device, another device, or unknown.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_DOMAIN_DEVICEEXPR_H
#define METAGUARD_CHECKS_UTILS_DOMAIN_DEVICEEXPR_H

#include "clang/AST/Decl.h"
#include "clang/AST/Expr.h"
#include "llvm/ADT/StringRef.h"

namespace clang::tidy::metaguard {

enum class DeviceKind {
  /// Certainly the meta device.
  Meta,
  /// Certainly a device other than meta ("cpu", torch::kCUDA, ...).
  NonMeta,
  /// Not a recognisable constant device: callers must not guess.
  Unknown,
};

/// Classifies a device written as text: "meta" and "meta:N" are Meta; the
/// names of other PyTorch device types ("cpu", "cuda:0", "mps", ...) are
/// NonMeta; anything else (a typo the runtime would reject) is Unknown.
DeviceKind classifyDeviceString(llvm::StringRef Text);

/// Classifies a device expression. Recognised constants:
/// - any DeviceType value or string pointer the compiler can compute
///   (Clang's constant evaluator): enumerators of an enum named DeviceType
///   (c10::DeviceType::Meta, torch::kMeta), string literals, constexpr and
///   const variables, constexpr functions, conditionals with a constant
///   condition;
/// - std::string / std::string_view construction and the ""s / ""sv
///   literals from one of these;
/// - torch::Device(...) built from one of these (first argument);
/// - const or constexpr variables initialised from one of these;
/// - a conditional whose condition is constant (the branch it takes), or
///   whose two arms have the same kind.
/// Anything else (a parameter, a call, a non-const variable) is Unknown.
DeviceKind classifyDeviceExpr(const Expr *E, const ASTContext &Context);

/// The parameter a device expression passes on as it is (`d` in
/// `set_default_device(d)`, through conversions, copies, std::move, a
/// torch::Device built from it, and a local copy that nothing changes,
/// `std::string dev = d;`), or nullptr. In a constructor In, also through
/// a data member it initialises from the parameter and its body leaves as
/// it is (`Session(std::string d) : dev_(std::move(d)) {
/// set_default_device(dev_); }`). A value computed from the parameter
/// (`prefix + d`) is not the parameter: nullptr.
const ParmVarDecl *deviceParameter(const Expr *E,
                                   const FunctionDecl *In = nullptr);

/// Whether a device-map expression visibly keeps every parameter in memory
/// (so nothing is offloaded and no hook is attached, as at run time):
/// `DeviceMap::on(dev)`, or a braced map whose entries `{"prefix", dev}` all
/// name a recognisable device (not "disk"), also inside a designated
/// initialiser. A strategy, a variable or a call is not visible: false.
bool isInMemoryDeviceMap(const Expr *E);

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_DOMAIN_DEVICEEXPR_H
