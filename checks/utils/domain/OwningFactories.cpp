//===--- OwningFactories.cpp - metaguard-tidy ------------------*- C++ -*-===//

#include "utils/domain/OwningFactories.h"
#include "utils/analysis/FunctionBodies.h"
#include "utils/analysis/NameList.h"
#include "utils/domain/LoaderCalls.h"

#include "clang/AST/ASTContext.h"
#include "clang/Basic/SourceManager.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace clang::tidy::metaguard {

namespace {

/// libstdc++'s make_shared reaches the placement new about ten calls deep.
constexpr unsigned MaxDepth = 16;

/// Depth-first through the functions of system headers FD calls, for a
/// construction of Record.
const CXXConstructExpr *
findConstruction(const FunctionDecl *FD, const CXXRecordDecl *Record,
                 unsigned Depth,
                 llvm::SmallPtrSetImpl<const FunctionDecl *> &Seen) {
  const FunctionDecl *Def = definitionWithBody(FD);
  if (!Def || Depth > MaxDepth || !Seen.insert(Def).second)
    return nullptr;
  const SourceManager &SM = Def->getASTContext().getSourceManager();
  for (const Expr *Call : collectCalls(Def)) {
    if (const auto *Construct = dyn_cast<CXXConstructExpr>(Call);
        Construct &&
        Construct->getConstructor()->getParent()->getCanonicalDecl() ==
            Record->getCanonicalDecl())
      return Construct;
    const FunctionDecl *Callee = calledFunction(Call);
    if (Callee && SM.isInSystemHeader(Callee->getLocation()))
      if (const CXXConstructExpr *Inner =
              findConstruction(Callee, Record, Depth + 1, Seen))
        return Inner;
  }
  return nullptr;
}

} // namespace

bool OwningFactories::isOwningFactory(const FunctionDecl *FD) {
  if (!FD || !FD->getIdentifier() || !FD->isInStdNamespace())
    return false;
  llvm::StringRef Name = FD->getName();
  return Name == "make_unique" || Name == "make_shared" ||
         Name == "allocate_shared";
}

bool OwningFactories::isOptionalEmplace(const FunctionDecl *FD) {
  const auto *Method = dyn_cast_or_null<CXXMethodDecl>(FD);
  if (!Method || !Method->getIdentifier() || Method->getName() != "emplace")
    return false;
  return isStdNamed(Method->getParent(), "optional");
}

bool OwningFactories::isOptionalInPlace(const CXXConstructExpr *Construct) {
  if (!Construct || Construct->getNumArgs() == 0)
    return false;
  const CXXRecordDecl *Tag =
      Construct->getArg(0)->getType()->getAsCXXRecordDecl();
  return isStdNamed(Construct->getConstructor()->getParent(), "optional") &&
         Tag && Tag->getIdentifier() && Tag->getName() == "in_place_t";
}

/// The function that Call (a factory call, an emplace, an in_place
/// construction) runs.
static const FunctionDecl *factoryOf(const Expr *Call) {
  if (const auto *Construct = dyn_cast_or_null<CXXConstructExpr>(Call))
    return Construct->getConstructor();
  const auto *CE = dyn_cast_or_null<CallExpr>(Call);
  return CE ? CE->getDirectCallee() : nullptr;
}

const CXXRecordDecl *OwningFactories::builtRecord(const Expr *Call) {
  const FunctionDecl *Callee = factoryOf(Call);
  const TemplateArgumentList *Args = nullptr;
  if (const auto *Construct = dyn_cast_or_null<CXXConstructExpr>(Call)) {
    if (!isOptionalInPlace(Construct))
      return nullptr;
    if (const auto *Spec = dyn_cast<ClassTemplateSpecializationDecl>(
            Construct->getConstructor()->getParent()))
      Args = &Spec->getTemplateArgs();
  } else if (isOptionalEmplace(Callee)) {
    // The optional's own argument: std::optional<Session>::emplace(...).
    if (const auto *Spec = dyn_cast<ClassTemplateSpecializationDecl>(
            cast<CXXMethodDecl>(Callee)->getParent()))
      Args = &Spec->getTemplateArgs();
  } else if (isOwningFactory(Callee)) {
    Args = Callee->getTemplateSpecializationArgs();
  }
  if (!Args || Args->size() == 0 ||
      Args->get(0).getKind() != TemplateArgument::Type)
    return nullptr;
  const CXXRecordDecl *Record = Args->get(0).getAsType()->getAsCXXRecordDecl();
  if (!Record || !Record->hasDefinition())
    return nullptr;
  const SourceManager &SM = Callee->getASTContext().getSourceManager();
  return SM.isInSystemHeader(Record->getLocation()) ? nullptr
                                                    : Record->getDefinition();
}

const CXXConstructExpr *OwningFactories::construction(const Expr *Call) {
  const CXXRecordDecl *Record = builtRecord(Call);
  if (!Record)
    return nullptr;
  const FunctionDecl *Callee = factoryOf(Call);
  auto [It, Inserted] = Found.try_emplace(Callee, nullptr);
  if (Inserted) {
    llvm::SmallPtrSet<const FunctionDecl *, 16> Seen;
    It->second = findConstruction(Callee, Record, 0, Seen);
  }
  return It->second;
}

const Expr *OwningFactories::forwardedArgument(const Expr *Call,
                                               unsigned Index) {
  if (!builtRecord(Call))
    return nullptr;
  // The arguments after the tag (std::in_place) or the allocator
  // (std::allocate_shared) are the constructor's, in order.
  unsigned Skip = 0;
  llvm::ArrayRef<const Expr *> Args;
  if (const auto *Construct = dyn_cast<CXXConstructExpr>(Call)) {
    Args = {Construct->getArgs(), Construct->getNumArgs()};
    Skip = 1;
  } else {
    const auto *CE = cast<CallExpr>(Call);
    Args = {CE->getArgs(), CE->getNumArgs()};
    const FunctionDecl *Callee = CE->getDirectCallee();
    Skip = Callee->getName() == "allocate_shared" ? 1 : 0;
  }
  if (Index + Skip >= Args.size() || isa<CXXDefaultArgExpr>(Args[Index + Skip]))
    return nullptr;
  return Args[Index + Skip];
}

} // namespace clang::tidy::metaguard
