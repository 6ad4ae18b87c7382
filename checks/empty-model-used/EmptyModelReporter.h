//===--- EmptyModelReporter.h - metaguard-tidy -----------------*- C++ -*-===//
//
// The diagnostics of metaguard-empty-model-used, each message written once:
// a use of a model built empty (directly, or through a helper or a method
// that uses it), with notes at where it was built, at what made the meta
// device ambient there (the factory or constructor it came through, in
// other files too), at the place inside the helper, and, where the rewrite
// is certain, a fix-it note that loads its weights first; and a use of a
// model that to_empty gave memory but no values, with notes at where it
// was given memory and where it was built empty.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_EMPTY_MODEL_USED_EMPTYMODELREPORTER_H
#define METAGUARD_CHECKS_EMPTY_MODEL_USED_EMPTYMODELREPORTER_H

#include "EmptyModelEvents.h"

#include "clang-tidy/ClangTidyCheck.h"
#include "llvm/ADT/DenseSet.h"

#include <optional>
#include <string>

namespace clang::tidy::metaguard {

class EmptyModelReporter {
public:
  /// The rewrite that gives the model its weights before the statement that
  /// uses it: `<Qualifier>load_weights(<Model>, <Dir>);` inserted before
  /// Before (a statement of a block), Dir being the checkpoint folder the
  /// model's config was read from.
  struct LoadFirst {
    const Stmt *Before = nullptr;
    std::string Model;
    const Expr *Dir = nullptr;
    std::string Qualifier;
  };

  explicit EmptyModelReporter(ClangTidyCheck &Check) : Check(Check) {}

  /// U uses the model that G built empty, on a path where nothing gives it
  /// weights. Table resolves the places that summaries name.
  void emptyModelUsed(const emptymodel::Use &U, const emptymodel::Gen &G,
                      const std::optional<LoadFirst> &Fix,
                      const SummaryTable &Table);
  /// U uses the model that G gave memory but no values (to_empty), on a
  /// path where nothing initialises or loads it; Before built it empty,
  /// when it was built in this function.
  void uninitialisedModelUsed(const emptymodel::Use &U,
                              const emptymodel::Gen &G,
                              const emptymodel::Gen *Before,
                              const SummaryTable &Table);
  /// At the end of a translation unit.
  void clear() {
    Reported.clear();
    Fixed.clear();
  }

private:
  /// Whether nothing was reported at Loc yet (one finding per place).
  bool firstAt(SourceLocation Loc);
  /// The warning at U, its message ending in Why.
  void warnAtUse(const emptymodel::Use &U, llvm::StringRef Noun,
                 llvm::StringRef Why, SourceLocation Loc);
  void noteBuilt(const emptymodel::Gen &G, const SummaryTable &Table);
  void noteMemory(const emptymodel::Gen &G, const SummaryTable &Table);
  void noteInnerOrigin(const BuiltOrigin &O, const SummaryTable &Table);
  void noteUse(const emptymodel::Use &U, const SummaryTable &Table);
  void noteLoadFirst(const LoadFirst &Fix, SourceLocation Loc,
                     const ASTContext &Context);

  ClangTidyCheck &Check;
  llvm::DenseSet<SourceLocation> Reported;
  /// The models that got a fix-it already: one load is enough.
  llvm::DenseSet<const Stmt *> Fixed;
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_EMPTY_MODEL_USED_EMPTYMODELREPORTER_H
