//===--- UserCodeMatchers.h - metaguard-tidy --------------------*- C++ -*-===//
//
// The nodes every metaguard check starts from — calls, constructions and
// variables written outside system headers — matched once for all the
// metaguard checks of a MatchFinder instead of once per check.
//
// Clang 19's MatchFinder tries each registered matcher on every node of its
// kind in the translation unit, LibTorch's and the standard library's
// headers included (only LLVM 22 skips system headers): three checks with
// their own call matchers paid for four matcher runs on each of the
// hundreds of thousands of calls in LibTorch's templates. With
// --enable-check-profile every switch from one check's matcher to the next
// on a node also costs a getrusage call, charged to the checks.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_ANALYSIS_USERCODEMATCHERS_H
#define METAGUARD_CHECKS_UTILS_ANALYSIS_USERCODEMATCHERS_H

#include "utils/ClangCompat.h"

#include "clang/AST/Expr.h"
#include "clang/AST/ExprCXX.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <memory>

namespace clang::tidy::metaguard {

/// One callback, shared by the metaguard checks of a MatchFinder, whose
/// matchers find, outside system headers:
/// - every call with a callee declaration (CallNode, its callee CalleeNode);
/// - every construction by a constructor declared outside system headers
///   (ConstructNode);
/// - every variable, parameters included (VarNode).
/// Each match runs the subscribed checks' check() in the order they
/// subscribed (the order their own matchers had), and the end of the
/// translation unit their onEndOfTranslationUnit(): a subscribed check
/// registers none of these matchers itself and sorts the matches out in
/// check().
class UserCodeMatchers final : public ast_matchers::MatchFinder::MatchCallback {
public:
  using MatchCallback = ast_matchers::MatchFinder::MatchCallback;
  using MatchResult = ast_matchers::MatchFinder::MatchResult;

  static constexpr llvm::StringLiteral CallNode = "metaguard-user-call";
  static constexpr llvm::StringLiteral CalleeNode = "metaguard-user-callee";
  static constexpr llvm::StringLiteral ConstructNode =
      "metaguard-user-construct";
  static constexpr llvm::StringLiteral VarNode = "metaguard-user-var";

  /// A check's place among the subscribers; it leaves when destroyed.
  class Subscription {
  public:
    Subscription() = default;
    Subscription(std::shared_ptr<UserCodeMatchers> Shared,
                 MatchCallback *Check);
    Subscription(Subscription &&Other) noexcept;
    Subscription &operator=(Subscription &&Other) noexcept;
    Subscription(const Subscription &) = delete;
    Subscription &operator=(const Subscription &) = delete;
    ~Subscription();

  private:
    void leave();

    std::shared_ptr<UserCodeMatchers> Shared;
    MatchCallback *Check = nullptr;
  };

  /// Subscribes Check to Finder's shared matchers, registering them with
  /// Finder when Check is the first metaguard check to ask.
  static Subscription subscribe(ast_matchers::MatchFinder *Finder,
                                MatchCallback *Check);

  /// The call a match found (a CallExpr with a callee declaration), or
  /// nullptr; its callee.
  static const CallExpr *call(const MatchResult &Result);
  static const FunctionDecl *callee(const MatchResult &Result);
  /// The construction a match found, or nullptr.
  static const CXXConstructExpr *construct(const MatchResult &Result);
  /// The variable or parameter a match found, or nullptr.
  static const VarDecl *var(const MatchResult &Result);

  void run(const MatchResult &Result) override;
  void onStartOfTranslationUnit() override;
  void onEndOfTranslationUnit() override;
  /// The profile's name for the shared matchers and everything the checks
  /// do in check() and at the end of a translation unit.
  llvm::StringRef getID() const override;
  compat::Optional<TraversalKind> getCheckTraversalKind() const override {
    return TK_AsIs;
  }

private:
  void registerMatchers(ast_matchers::MatchFinder *Finder);

  llvm::SmallVector<MatchCallback *, 4> Checks;
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_ANALYSIS_USERCODEMATCHERS_H
