//===--- TensorReads.h - metaguard-tidy ------------------------*- C++ -*-===//
//
// Which calls read a tensor's data, as opposed to its metadata. A tensor on
// the meta device has a shape and a dtype but no storage: `sizes()`,
// `numel()` or `dtype()` work on it, an operation gives another meta tensor,
// but reading a value (`item`), its storage (`data_ptr`), copying it out
// (`to(device)`, `cpu()`, `dst.copy_(t)`) or printing it fails ("Cannot copy
// out of meta tensor; no data!").
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_DOMAIN_TENSORREADS_H
#define METAGUARD_CHECKS_UTILS_DOMAIN_TENSORREADS_H

#include "clang/AST/Expr.h"

#include <optional>
#include <string>

namespace clang::tidy::metaguard {

/// What a call that reads a tensor's data reads.
struct TensorRead {
  /// The tensor expression read.
  const Expr *Tensor = nullptr;
  /// How, for messages: the method ("item", "copy_") or "<<".
  std::string How;
  /// Printing (`os << t`) rather than a tensor method.
  bool Prints = false;
};

/// If Call reads the data of a tensor: a tensor method that reads values or
/// storage (`item`, `data_ptr`, `const_data_ptr`, `mutable_data_ptr`,
/// `accessor`, `cpu`, `cuda`), `to` given a device, `copy_` (its source),
/// or `<<` into a stream.
std::optional<TensorRead> tensorRead(const Expr *Call);

/// The tensor E is computed from by out-of-place tensor methods (`p.sum()`,
/// `p.abs().max()`, `p.detach()`): an operation on a meta tensor gives a
/// meta tensor, so reading the result reads nothing either. E itself when it
/// is not such a result.
const Expr *computedFrom(const Expr *E);

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_DOMAIN_TENSORREADS_H
