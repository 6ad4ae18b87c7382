//===--- MetaScopeLoadReporter.h - metaguard-tidy --------------*- C++ -*-===//
//
// The diagnostics of metaguard-from-pretrained-in-meta-scope, each message
// written once: a load while the meta device is ambient (directly, or
// through the functions a call runs), and a loader whose own implementation
// builds the model on meta and loads a part of it there.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_FROM_PRETRAINED_IN_META_SCOPE_METASCOPELOADREPORTER_H
#define METAGUARD_CHECKS_FROM_PRETRAINED_IN_META_SCOPE_METASCOPELOADREPORTER_H

#include "utils/domain/AmbientDevice.h"

#include "clang-tidy/ClangTidyCheck.h"
#include "llvm/ADT/DenseSet.h"

#include <optional>
#include <string>

namespace clang::tidy::metaguard {

/// A loader call reached through calls, and the function it is in.
struct InnerLoad {
  SourceLocation At; ///< Invalid when it is in another translation unit.
  std::string LoaderName;
  std::string In;
};

class MetaScopeLoadReporter {
public:
  explicit MetaScopeLoadReporter(ClangTidyCheck &Check) : Check(Check) {}

  /// Call (a loader, or a call of What that reaches the loader Inner) runs
  /// while the meta device is ambient, as Origin says.
  void loadOnMeta(const Expr *Call, llvm::StringRef What,
                  const AmbientDevice::Origin &Origin,
                  const std::optional<InnerLoad> &Inner, ASTContext &Context);
  /// Call, to the loader Loader, builds Model on meta, and building it loads
  /// Inner.
  void loaderBuildsOnMeta(const CallExpr *Call, llvm::StringRef Loader,
                          llvm::StringRef Model, const InnerLoad &Inner,
                          ASTContext &Context);
  /// At the end of a translation unit.
  void clear() { Reported.clear(); }

private:
  /// Whether nothing was reported at Loc yet (one finding per place).
  bool firstAt(SourceLocation Loc);
  void noteInnerLoad(const InnerLoad &Inner, SourceLocation Call);

  ClangTidyCheck &Check;
  llvm::DenseSet<SourceLocation> Reported;
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_FROM_PRETRAINED_IN_META_SCOPE_METASCOPELOADREPORTER_H
