//===--- MemberModels.cpp - metaguard-tidy ---------------------*- C++ -*-===//

#include "utils/domain/MemberModels.h"
#include "utils/analysis/FunctionBodies.h"

#include "clang/AST/ASTContext.h"
#include "clang/Basic/SourceManager.h"

namespace clang::tidy::metaguard {

bool isMemberModel(const ModuleRef &Ref, const CXXMethodDecl *Method) {
  const auto *Field = dyn_cast_or_null<FieldDecl>(Ref.Root);
  return Field && !Method->isStatic() &&
         Field->getParent()->getCanonicalDecl() ==
             Method->getParent()->getCanonicalDecl();
}

bool hasMemberModels(const CXXRecordDecl *RD) {
  RD = RD ? RD->getDefinition() : nullptr;
  if (!RD)
    return false;
  for (const FieldDecl *Field : RD->fields())
    if (isModelValueType(Field->getType()) ||
        isModelContainerType(Field->getType()))
      return true;
  return false;
}

const FieldDecl *fieldAt(const CXXRecordDecl *RD, unsigned Index) {
  RD = RD ? RD->getDefinition() : nullptr;
  if (!RD)
    return nullptr;
  for (const FieldDecl *Field : RD->fields())
    if (Field->getFieldIndex() == Index)
      return Field;
  return nullptr;
}

llvm::SmallVector<const CXXMethodDecl *, 8>
laterMethods(const CXXMethodDecl *Method) {
  llvm::SmallVector<const CXXMethodDecl *, 8> Result;
  const CXXRecordDecl *Class = Method->getParent()->getDefinition();
  if (!Class || Class->isLambda())
    return Result;
  const SourceManager &SM = Method->getASTContext().getSourceManager();
  for (const Decl *D : Class->decls()) {
    const auto *Other = dyn_cast<CXXMethodDecl>(D);
    if (!Other || Other->isStatic() || Other->isImplicit() ||
        isa<CXXConstructorDecl, CXXDestructorDecl>(Other) ||
        Other->isDependentContext() ||
        Other->getCanonicalDecl() == Method->getCanonicalDecl())
      continue;
    const FunctionDecl *Def = definitionWithBody(Other);
    const auto *DefMethod = dyn_cast_or_null<CXXMethodDecl>(Def);
    if (!DefMethod || SM.isInSystemHeader(Def->getLocation()))
      continue;
    Result.push_back(DefMethod);
    if (Result.size() == MaxLaterMethods)
      break;
  }
  return Result;
}

} // namespace clang::tidy::metaguard
