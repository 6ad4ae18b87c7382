//===--- LibraryCode.cpp - metaguard-tidy ----------------------*- C++ -*-===//

#include "utils/domain/LibraryCode.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/DeclCXX.h"
#include "clang/Basic/SourceManager.h"

namespace clang::tidy::metaguard {

bool isLibraryFunction(const FunctionDecl *FD) {
  if (FD->getASTContext().getSourceManager().isInSystemHeader(
          FD->getLocation()))
    return true;
  const DeclContext *DC = FD->getDeclContext();
  const NamespaceDecl *Outermost = nullptr;
  for (; DC; DC = DC->getParent())
    if (const auto *NS = dyn_cast<NamespaceDecl>(DC))
      Outermost = NS;
  if (!Outermost || !Outermost->getIdentifier())
    return false;
  llvm::StringRef Name = Outermost->getName();
  return Name == "std" || Name == "torch" || Name == "c10" || Name == "at" ||
         Name == "metaguard";
}

} // namespace clang::tidy::metaguard
