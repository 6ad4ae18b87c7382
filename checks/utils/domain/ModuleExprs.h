//===--- ModuleExprs.h - metaguard-tidy ------------------------*- C++ -*-===//
//
// Which model variable an expression denotes. LibTorch models are handled
// through many spellings of the same object (a module holder `m`, `*m`,
// `m.get()`, `*m.ptr()`, `m->encoder`, a shared_ptr, a local reference
// `auto &mod = *m;`); flow-sensitive checks must key their state on the
// variable behind all of them.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_DOMAIN_MODULEEXPRS_H
#define METAGUARD_CHECKS_UTILS_DOMAIN_MODULEEXPRS_H

#include "clang/AST/Decl.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/Expr.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace clang::tidy::metaguard {

/// An object reached from a variable through submodule members:
/// `m->encoder->layer` is {m, [encoder, layer]}. Elements of module lists
/// and of standard containers of models stand for the list or container.
struct ModuleRef {
  /// A variable (local or parameter), or a data member of `*this` used
  /// inside a method (the model a class keeps).
  const ValueDecl *Root = nullptr;
  /// The members followed from Root, outermost first; empty for Root itself.
  llvm::SmallVector<const FieldDecl *, 2> Path;

  bool isRoot() const { return Path.empty(); }
  /// "m", "m.encoder.layer": how messages name it.
  std::string displayName() const;
};

/// Whether Prefix is a prefix of Path (equal paths included).
bool isPathPrefix(llvm::ArrayRef<const FieldDecl *> Prefix,
                  llvm::ArrayRef<const FieldDecl *> Path);

/// Whether A and B start at the same variable or member.
bool sameRoot(const ModuleRef &A, const ModuleRef &B);

/// Whether a dispatch (or other state) of Outer applies to Target: Target is
/// Outer or inside it; with AncestorsToo, also when Target contains it
/// (moving a model moves its submodules).
bool refCovers(const ModuleRef &Outer, const ModuleRef &Target,
               bool AncestorsToo);

/// Looks through what does not change which object an expression denotes:
/// parentheses, implicit conversions, full-expression cleanups, temporaries
/// being materialised or bound, functional casts, and copy/move construction
/// (copies of module holders, shared_ptrs and tensors share the object).
const Expr *ignoreObjectPlumbing(const Expr *E);

/// The object E denotes, as a variable and submodule path: `m`, `*m`, `(*m)`,
/// `&m`, `m.get()`, `m.ptr()`, `*m.ptr()`, `m->encoder`, `m.encoder`,
/// `this->model_`, and elements of module lists (`m->blocks[2]`,
/// `m->blocks->at<Block>(2)`), which stand for the list. A local variable
/// initialised from another such expression
/// (`auto &mod = *m;`, `auto enc = m->encoder;`, `auto *p = m.get();`) is an
/// alias: the result names the variable it was initialised from; so is a
/// structured binding of such an element (`auto &[name, net] = *it;`), and
/// `first` / `second` of a std::pair stand for the pair. The result
/// of any other call (`from_pretrained(...)`, `std::make_shared<...>()`) is a
/// new object: std::nullopt.
std::optional<ModuleRef> moduleRefOf(const Expr *E);

/// The variable E denotes with no member in between (moduleRefOf with an
/// empty path), or nullptr.
const ValueDecl *denotedVariable(const Expr *E);

/// Whether RD is torch::nn::Module or derives from it.
bool isModuleClass(const CXXRecordDecl *RD);

/// Whether T (references and cv-qualifiers ignored) is a module: a class
/// derived from torch::nn::Module, or a module holder (TORCH_MODULE, a class
/// derived from torch::nn::ModuleHolder<...>).
bool isModuleOrHolderType(QualType T);

/// Whether T (references and cv-qualifiers ignored) is a model: a module, a
/// holder, or a std::shared_ptr / std::unique_ptr to one.
bool isModelValueType(QualType T);

/// Whether T (references and cv-qualifiers ignored) is a standard container
/// (std::vector, std::map, std::array, ...) of models or of smart pointers
/// to models, also through nested standard templates (a vector of
/// `std::pair<std::string, Net>`). Its elements are not told apart: an element
/// stands for the container, as an element of a module list stands for the
/// list.
bool isModelContainerType(QualType T);

/// Whether Field is a member of a standard-library class (`first` and
/// `second` of a std::pair, as in the elements of a std::map): its object is
/// the element the code means, not a submodule.
bool isStandardElementMember(const FieldDecl *Field);

/// Whether T (references and cv-qualifiers ignored) is a tensor: a class
/// named Tensor (at::Tensor / torch::Tensor) or derived from one
/// (torch::autograd::Variable, Parameter types).
bool isTensorType(QualType T);

/// Whether RD is a tensor class: at::Tensor (and what derives from it) or
/// at::TensorBase, which declares some of the tensor methods itself
/// (`data_ptr`, in-place ones).
bool isTensorClass(const CXXRecordDecl *RD);

/// Whether T (references, pointers and cv-qualifiers ignored) is a tensor or
/// a standard or LibTorch container of them: what parameters() and
/// named_parameters() return, their elements and items
/// (`std::vector<torch::Tensor>`, `OrderedDict<std::string, Tensor>::Item`,
/// `std::pair<std::string, torch::Tensor>`).
bool holdsTensors(QualType T);

/// Whether T (references and cv-qualifiers ignored) is a device:
/// c10::Device / torch::Device, or the DeviceType enumeration.
bool isDeviceType(QualType T);

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_DOMAIN_MODULEEXPRS_H
