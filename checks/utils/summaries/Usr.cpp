//===--- Usr.cpp - metaguard-tidy ------------------------------*- C++ -*-===//

#include "utils/summaries/Usr.h"
#include "utils/ClangCompat.h"

#include "llvm/ADT/SmallString.h"

namespace clang::tidy::metaguard {

std::string usrOf(const Decl *D) {
  if (!D)
    return "";
  llvm::SmallString<128> Buffer;
  // Returns true when it could not make one.
  if (index::generateUSRForDecl(D, Buffer))
    return "";
  return std::string(Buffer);
}

} // namespace clang::tidy::metaguard
