//===--- ModuleExprs.cpp - metaguard-tidy ----------------------*- C++ -*-===//

#include "utils/domain/ModuleExprs.h"
#include "utils/ClangCompat.h"
#include "utils/analysis/ExprPlumbing.h"
#include "utils/analysis/LocalVariables.h"
#include "utils/analysis/NameList.h"
#include "utils/analysis/RecordBases.h"

#include "clang/AST/DeclTemplate.h"
#include "clang/AST/ExprCXX.h"
#include "llvm/ADT/STLExtras.h"

namespace clang::tidy::metaguard {

namespace {

/// How many alias variables are followed (`auto &a = m; auto &b = a; ...`);
/// also stops self-referencing initialisers.
constexpr unsigned MaxAliasHops = 8;

/// Methods of standard containers that give access to an element.
constexpr llvm::StringLiteral ContainerAccessors[] = {
    "at", "front", "back", "begin", "cbegin", "rbegin", "find", "data"};

/// A local variable that merely names another object.
bool isAliasCandidate(const VarDecl *VD) {
  return VD && VD->hasLocalStorage() && !isa<ParmVarDecl>(VD) &&
         VD->getInit() && !VD->isInitCapture();
}

std::optional<ModuleRef> refOf(const Expr *E, unsigned Hops) {
  llvm::SmallVector<const FieldDecl *, 4> Reversed; // Innermost first.
  auto Finish = [&](const ValueDecl *Root) {
    ModuleRef Ref;
    Ref.Root = Root;
    Ref.Path.assign(Reversed.rbegin(), Reversed.rend());
    return Ref;
  };
  for (unsigned Steps = 0; E && Steps < 64; ++Steps) {
    E = ignoreObjectPlumbing(E);
    if (const auto *U = dyn_cast<UnaryOperator>(E)) {
      if (U->getOpcode() != UO_Deref && U->getOpcode() != UO_AddrOf)
        return std::nullopt;
      E = U->getSubExpr();
      continue;
    }
    if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(E)) {
      // *holder, *shared_ptr, holder->..., shared_ptr->...
      if ((Op->getOperator() == OO_Star || Op->getOperator() == OO_Arrow) &&
          Op->getNumArgs() == 1) {
        E = Op->getArg(0);
        continue;
      }
      // list[i] on a ModuleList / Sequential: an element stands for the
      // list (elements are not told apart).
      if (Op->getOperator() == OO_Subscript && Op->getNumArgs() == 2 &&
          (isModuleOrHolderType(Op->getArg(0)->getType()) ||
           isModelContainerType(Op->getArg(0)->getType()))) {
        E = Op->getArg(0);
        continue;
      }
      return std::nullopt;
    }
    if (const auto *Call = dyn_cast<CXXMemberCallExpr>(E)) {
      // holder.get(), holder.ptr(), shared_ptr.get(): the same object.
      const CXXMethodDecl *Method = Call->getMethodDecl();
      if (Method && Call->getNumArgs() == 0 &&
          (isNamed(Method, "get") || isNamed(Method, "ptr"))) {
        E = Call->getImplicitObjectArgument();
        continue;
      }
      // list->at<T>(i), list[i]->as<T>(): the same (element of the) module.
      if (Method && (isNamed(Method, "at") || isNamed(Method, "as")) &&
          isModuleOrHolderType(compat::recordType(Method->getParent()))) {
        E = Call->getImplicitObjectArgument();
        continue;
      }
      // models.at(i), models.front(), the iterators of a range-for over a
      // standard container of models: an element stands for the container.
      if (Method && Method->getIdentifier() &&
          llvm::is_contained(ContainerAccessors, Method->getName()) &&
          isModelContainerType(compat::recordType(Method->getParent()))) {
        E = Call->getImplicitObjectArgument();
        continue;
      }
      return std::nullopt;
    }
    if (const auto *Member = dyn_cast<MemberExpr>(E)) {
      const auto *Field = dyn_cast<FieldDecl>(Member->getMemberDecl());
      if (!Field)
        return std::nullopt;
      const Expr *Base = Member->getBase()->IgnoreParenImpCasts();
      // kv.second, it->second: the element of a standard container, which
      // stands for the container.
      if (isStandardElementMember(Field)) {
        E = Base;
        continue;
      }
      if (isa<CXXThisExpr>(Base))
        return Finish(Field);
      Reversed.push_back(Field);
      E = Base;
      continue;
    }
    if (const auto *Ref = dyn_cast<DeclRefExpr>(E)) {
      // A structured binding (`for (auto &[name, net] : models)`) names a
      // part of the element it decomposes.
      const VarDecl *Var = variableOfName(Ref->getDecl());
      if (!Var)
        return std::nullopt;
      if (isAliasCandidate(Var) && Hops < MaxAliasHops)
        if (std::optional<ModuleRef> Inner = refOf(Var->getInit(), Hops + 1)) {
          Inner->Path.append(Reversed.rbegin(), Reversed.rend());
          return Inner;
        }
      // Unresolved, messages name what the code wrote: the binding.
      return Finish(isa<BindingDecl>(Ref->getDecl()) ? Ref->getDecl() : Var);
    }
    return std::nullopt;
  }
  return std::nullopt;
}

} // namespace

std::string ModuleRef::displayName() const {
  std::string Name = Root ? Root->getNameAsString() : std::string("<model>");
  for (const FieldDecl *Field : Path) {
    Name += '.';
    Name += Field->getNameAsString();
  }
  return Name;
}

bool isPathPrefix(llvm::ArrayRef<const FieldDecl *> Prefix,
                  llvm::ArrayRef<const FieldDecl *> Path) {
  if (Prefix.size() > Path.size())
    return false;
  for (size_t I = 0; I < Prefix.size(); ++I)
    if (Prefix[I]->getCanonicalDecl() != Path[I]->getCanonicalDecl())
      return false;
  return true;
}

const Expr *ignoreObjectPlumbing(const Expr *E) {
  ExprPlumbing SameObject;
  SameObject.Casts = ExprPlumbing::FunctionalCasts::NoOpOnly;
  SameObject.Copies = ExprPlumbing::CopyMoves::AnyArguments;
  return ignoreExprPlumbing(E, SameObject);
}

std::optional<ModuleRef> moduleRefOf(const Expr *E) { return refOf(E, 0); }

bool sameRoot(const ModuleRef &A, const ModuleRef &B) {
  return A.Root->getCanonicalDecl() == B.Root->getCanonicalDecl();
}

bool refCovers(const ModuleRef &Outer, const ModuleRef &Target,
               bool AncestorsToo) {
  return sameRoot(Outer, Target) &&
         (isPathPrefix(Outer.Path, Target.Path) ||
          (AncestorsToo && isPathPrefix(Target.Path, Outer.Path)));
}

const ValueDecl *denotedVariable(const Expr *E) {
  std::optional<ModuleRef> Ref = moduleRefOf(E);
  return Ref && Ref->isRoot() ? Ref->Root : nullptr;
}

bool isModuleClass(const CXXRecordDecl *RD) {
  return recordOrBase(RD, [](const CXXRecordDecl *R) {
    return isNamed(R, "Module") && qualifiedNameOf(R) == "torch::nn::Module";
  });
}

bool isModuleOrHolderType(QualType T) {
  if (T.isNull())
    return false;
  const CXXRecordDecl *RD = T.getNonReferenceType()->getAsCXXRecordDecl();
  return isModuleClass(RD) || recordOrBase(RD, [](const CXXRecordDecl *R) {
           const auto *Spec = dyn_cast<ClassTemplateSpecializationDecl>(R);
           return Spec &&
                  isNamed(Spec->getSpecializedTemplate(), "ModuleHolder");
         });
}

bool isModelValueType(QualType T) {
  if (T.isNull())
    return false;
  T = T.getNonReferenceType();
  if (isModuleOrHolderType(T))
    return true;
  const auto *Spec = dyn_cast_or_null<ClassTemplateSpecializationDecl>(
      T->getAsCXXRecordDecl());
  return Spec &&
         (isNamed(Spec->getSpecializedTemplate(), "shared_ptr") ||
          isNamed(Spec->getSpecializedTemplate(), "unique_ptr")) &&
         Spec->getTemplateArgs().size() > 0 &&
         Spec->getTemplateArgs()[0].getKind() == TemplateArgument::Type &&
         isModuleOrHolderType(Spec->getTemplateArgs()[0].getAsType());
}

namespace {

/// How deep standard templates of models nest (`std::vector<std::pair<
/// std::string, Net>>`, a map's allocator of pairs) before giving up.
constexpr unsigned MaxContainerNesting = 3;

bool isModelContainerTypeAt(QualType T, unsigned Depth) {
  if (T.isNull() || Depth > MaxContainerNesting)
    return false;
  T = T.getNonReferenceType();
  const auto *Spec = dyn_cast_or_null<ClassTemplateSpecializationDecl>(
      T->getAsCXXRecordDecl());
  if (!Spec || isModelValueType(T))
    return false;
  const DeclContext *DC = Spec->getSpecializedTemplate()->getDeclContext();
  while (DC && DC->isInlineNamespace())
    DC = DC->getParent();
  if (!DC || !DC->isStdNamespace())
    return false;
  // The element (or mapped) type: any type argument that is a model, or a
  // standard template of models itself (the named pairs of a vector).
  for (const TemplateArgument &Arg : Spec->getTemplateArgs().asArray())
    if (Arg.getKind() == TemplateArgument::Type &&
        (isModelValueType(Arg.getAsType()) ||
         isModelContainerTypeAt(Arg.getAsType(), Depth + 1)))
      return true;
  return false;
}

} // namespace

bool isModelContainerType(QualType T) { return isModelContainerTypeAt(T, 0); }

bool isStandardElementMember(const FieldDecl *Field) {
  return Field && Field->getParent()->isInStdNamespace();
}

bool isTensorType(QualType T) {
  if (T.isNull())
    return false;
  const CXXRecordDecl *RD = T.getNonReferenceType()->getAsCXXRecordDecl();
  return recordOrBase(
      RD, [](const CXXRecordDecl *R) { return isNamed(R, "Tensor"); });
}

bool isTensorClass(const CXXRecordDecl *RD) {
  return RD &&
         (isNamed(RD, "TensorBase") || isTensorType(compat::recordType(RD)));
}

namespace {

bool holdsTensorsAt(QualType T, unsigned Depth) {
  if (T.isNull() || Depth > 3)
    return false;
  T = T.getNonReferenceType();
  if (!T->getPointeeType().isNull())
    T = T->getPointeeType();
  if (isTensorType(T))
    return true;
  // A class template specialization with a tensor among its arguments, or
  // a class nested in one (OrderedDict<Key, Tensor>::Item).
  for (const DeclContext *DC = T->getAsCXXRecordDecl(); DC && DC->isRecord();
       DC = DC->getParent())
    if (const auto *Spec = dyn_cast<ClassTemplateSpecializationDecl>(DC))
      for (const TemplateArgument &Arg : Spec->getTemplateArgs().asArray())
        if (Arg.getKind() == TemplateArgument::Type &&
            holdsTensorsAt(Arg.getAsType(), Depth + 1))
          return true;
  return false;
}

} // namespace

bool holdsTensors(QualType T) { return holdsTensorsAt(T, 0); }

bool isDeviceType(QualType T) {
  if (T.isNull())
    return false;
  T = T.getNonReferenceType();
  if (const auto *Enum = T->getAs<EnumType>())
    return isNamed(Enum->getDecl(), "DeviceType");
  const CXXRecordDecl *RD = T->getAsCXXRecordDecl();
  return RD && isNamed(RD, "Device");
}

} // namespace clang::tidy::metaguard
