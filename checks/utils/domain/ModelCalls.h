//===--- ModelCalls.h - metaguard-tidy -------------------------*- C++ -*-===//
//
// The calls that run a model or move it: a forward pass (`m->forward(x)`,
// `m(x)` on a module holder) and `to` with a device. Both need the model's
// weights where they are, which is what a dispatched model's hooks provide
// and what an empty model lacks.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_DOMAIN_MODELCALLS_H
#define METAGUARD_CHECKS_UTILS_DOMAIN_MODELCALLS_H

#include "clang/AST/ExprCXX.h"

namespace clang::tidy::metaguard {

/// The model whose forward pass Call runs: the object of `forward` on a
/// module (`m->forward(x)`), or of a call operator on a module or holder
/// (`m(x)`, which runs forward). nullptr for any other call.
const Expr *forwardedModel(const Expr *Call);

/// Whether Call passes a device (not only a dtype) to the method.
bool passesDevice(const CXXMemberCallExpr *Call);

/// The model that `to` moves: the object of a module's `to` given a device
/// (`m->to(torch::kCUDA)`, `m->to(device, dtype)`); nullptr for a dtype-only
/// `to` (which moves nothing) and any other call.
const Expr *movedModel(const CXXMemberCallExpr *Call);

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_DOMAIN_MODELCALLS_H
