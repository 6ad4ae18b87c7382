//===--- OptimizerParameters.h - metaguard-tidy ----------------*- C++ -*-===//
//
// Optimizers over a model's parameters. A torch::optim optimizer keeps the
// parameter tensors it was built from and writes them in place at each
// step(): over an offloaded parameter (a meta tensor between forwards) the
// update is lost.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_DOMAIN_OPTIMIZERPARAMETERS_H
#define METAGUARD_CHECKS_UTILS_DOMAIN_OPTIMIZERPARAMETERS_H

#include "utils/domain/ModuleExprs.h"
#include "utils/domain/TensorWrites.h"

#include "clang/AST/ExprCXX.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace clang::tidy::metaguard {

/// A `step()` of an optimizer kept in a local variable, and the modules
/// whose parameters it was built from.
struct OptimizerStep {
  /// The optimizer variable, where notes point.
  const VarDecl *Optimizer = nullptr;
  llvm::SmallVector<ModuleRef, 2> Owners;
};

/// Whether RD is torch::optim::Optimizer or derives from it.
bool isOptimizerClass(const CXXRecordDecl *RD);

/// If Call is `opt.step()` (or `opt->step()` through a smart pointer) on a
/// local optimizer built from parameters of modules (`m->parameters()`, a
/// submodule's, `named_parameters()` values, a local vector of them filled
/// in the function, braced lists and parameter groups of those): which.
std::optional<OptimizerStep> optimizerStep(const CXXMemberCallExpr *Call,
                                           const TensorWrites &Writes);

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_DOMAIN_OPTIMIZERPARAMETERS_H
