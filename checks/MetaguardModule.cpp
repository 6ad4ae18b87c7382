//===--- MetaguardModule.cpp - metaguard-tidy ------------------*- C++ -*-===//

#include "MetaguardModule.h"
// Each check's header, generated from Checks.def (a macro cannot #include).
#include "MetaguardCheckHeaders.inc"

#include "llvm/ADT/STLExtras.h"

namespace clang::tidy::metaguard {

void MetaguardModule::addCheckFactories(
    ClangTidyCheckFactories &CheckFactories) {
#define METAGUARD_CHECK(ClassName, CheckName)                                  \
  CheckFactories.registerCheck<ClassName>(CheckName);
#include "Checks.def"
}

bool isMetaguardCheck(llvm::StringRef CheckName) {
  static constexpr llvm::StringLiteral Names[] = {
#define METAGUARD_CHECK(ClassName, Name) Name,
#include "Checks.def"
  };
  return llvm::is_contained(Names, CheckName);
}

} // namespace clang::tidy::metaguard
