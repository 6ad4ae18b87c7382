//===--- TensorWrites.h - metaguard-tidy -----------------------*- C++ -*-===//
//
// Which calls write into a tensor, or into a model's tensors, in place, and
// which module a parameter expression belongs to. LibTorch names its
// in-place tensor methods with a trailing underscore (`mul_`, `zero_`,
// `index_put_`), and so are the initialisers of torch::nn::init that fill
// their argument (`normal_`, `zeros_`); `torch::load(model, ...)` and a
// module's `load` / `load_state_dict` write every parameter of the model.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_DOMAIN_TENSORWRITES_H
#define METAGUARD_CHECKS_UTILS_DOMAIN_TENSORWRITES_H

#include "utils/analysis/NameList.h"
#include "utils/analysis/StmtParents.h"
#include "utils/domain/ModuleExprs.h"

#include "clang/AST/ExprCXX.h"

#include <optional>

namespace clang::tidy::metaguard {

/// Recognises the calls that write tensors, as configured by the
/// ParameterMutators and IgnoredInPlaceMethods options.
class TensorWrites {
public:
  /// GivenTensors: parameterOwner names a tensor (or a list of them) that
  /// the function is given as its own owner, rooted at that parameter, so
  /// that a summary can say what the function does to what it is given;
  /// without it, such a tensor has no owner.
  TensorWrites(llvm::StringRef MutatorsOption, llvm::StringRef IgnoredOption,
               bool GivenTensors = false)
      : Mutators(MutatorsOption), Ignored(IgnoredOption),
        GivenTensors(GivenTensors) {}

  /// Whether Call writes into its object: an in-place tensor method (a
  /// method of a tensor class whose name ends in `_`, not ignored), or a
  /// ParameterMutators method called with arguments or as a statement of
  /// its own (Parents locates the statement).
  bool writesObject(const CXXMemberCallExpr *Call,
                    const StmtParents &Parents) const;
  /// The tensor argument a free function writes in place: the first
  /// argument of the torch::nn::init initialisers whose names end in `_`.
  const Expr *writtenArgument(const CallExpr *Call) const;
  /// The model whose parameters Call overwrites from a checkpoint:
  /// `torch::load(model, path)`, `model->load(archive)`,
  /// `model->load_state_dict(dict)`. nullptr otherwise.
  static const Expr *loadedModel(const CallExpr *Call);

  /// The module that owns the parameter E denotes, if E is reached from a
  /// module through named_parameters() (also its items(), values() and
  /// pairs(), and `first` / `second` of a pair), parameters(), a tensor
  /// member, the result of an in-place method or of a mutator without
  /// arguments (data()), or a local variable (or structured binding)
  /// initialised from one of those; with GivenTensors, also a parameter of
  /// the function (see the constructor).
  std::optional<ModuleRef> parameterOwner(const Expr *E) const;

  const NameList &mutators() const { return Mutators; }

private:
  bool isInPlaceMethod(const CXXMethodDecl *Method) const;

  NameList Mutators;
  NameList Ignored;
  bool GivenTensors;
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_DOMAIN_TENSORWRITES_H
