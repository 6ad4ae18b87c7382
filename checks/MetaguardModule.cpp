//===--- MetaguardModule.cpp - metaguard-tidy ------------------*- C++ -*-===//

#include "MetaguardModule.h"
#include "FromPretrainedInMetaScopeCheck.h"
#include "OffloadedParameterMoveCheck.h"

namespace clang::tidy::metaguard {

void MetaguardModule::addCheckFactories(
    ClangTidyCheckFactories &CheckFactories) {
  CheckFactories.registerCheck<FromPretrainedInMetaScopeCheck>(
      "metaguard-from-pretrained-in-meta-scope");
  CheckFactories.registerCheck<OffloadedParameterMoveCheck>(
      "metaguard-offloaded-parameter-move");
}

} // namespace clang::tidy::metaguard
