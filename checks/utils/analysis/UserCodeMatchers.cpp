//===--- UserCodeMatchers.cpp - metaguard-tidy ------------------*- C++ -*-===//

#include "utils/analysis/UserCodeMatchers.h"
#include "utils/domain/OwningFactories.h"

#include "clang/ASTMatchers/ASTMatchers.h"

#include <algorithm>
#include <map>
#include <mutex>

namespace clang::tidy::metaguard {

namespace {
/// A construction that runs a constructor of the user's inside a system
/// header: `std::optional<Session> s{std::in_place, ...}`.
AST_MATCHER(CXXConstructExpr, buildsObjectOfTheUsers) {
  return OwningFactories::builtRecord(&Node) != nullptr;
}
} // namespace

UserCodeMatchers::Subscription::Subscription(
    std::shared_ptr<UserCodeMatchers> Shared, MatchCallback *Check)
    : Shared(std::move(Shared)), Check(Check) {}

UserCodeMatchers::Subscription::Subscription(Subscription &&Other) noexcept
    : Shared(std::move(Other.Shared)), Check(Other.Check) {
  Other.Check = nullptr;
}

UserCodeMatchers::Subscription &
UserCodeMatchers::Subscription::operator=(Subscription &&Other) noexcept {
  if (this != &Other) {
    leave();
    Shared = std::move(Other.Shared);
    Check = Other.Check;
    Other.Check = nullptr;
  }
  return *this;
}

UserCodeMatchers::Subscription::~Subscription() { leave(); }

void UserCodeMatchers::Subscription::leave() {
  if (Shared && Check)
    Shared->Checks.erase(
        std::remove(Shared->Checks.begin(), Shared->Checks.end(), Check),
        Shared->Checks.end());
  Shared.reset();
  Check = nullptr;
}

UserCodeMatchers::Subscription
UserCodeMatchers::subscribe(ast_matchers::MatchFinder *Finder,
                            MatchCallback *Check) {
  // One set of matchers per MatchFinder (clangd builds several ASTs at
  // once), found under a lock; it lives as long as a check subscribed to it.
  // A MatchFinder outlives no check of its own (clang-tidy and clangd
  // destroy the checks first), so an address is never found again with a
  // live entry of an older MatchFinder.
  static std::mutex Lock;
  static std::map<const ast_matchers::MatchFinder *,
                  std::weak_ptr<UserCodeMatchers>>
      Registry;
  std::lock_guard<std::mutex> Guard(Lock);
  for (auto It = Registry.begin(); It != Registry.end();)
    It = It->second.expired() ? Registry.erase(It) : std::next(It);
  std::weak_ptr<UserCodeMatchers> &Slot = Registry[Finder];
  std::shared_ptr<UserCodeMatchers> Shared = Slot.lock();
  if (!Shared) {
    Shared = std::make_shared<UserCodeMatchers>();
    Shared->registerMatchers(Finder);
    Slot = Shared;
  }
  Shared->Checks.push_back(Check);
  return Subscription(std::move(Shared), Check);
}

void UserCodeMatchers::registerMatchers(ast_matchers::MatchFinder *Finder) {
  using namespace ast_matchers;
  // The system-header test first: it rejects most nodes of a TU that
  // includes LibTorch.
  Finder->addMatcher(
      callExpr(unless(isExpansionInSystemHeader()),
               ast_matchers::callee(functionDecl().bind(CalleeNode)))
          .bind(CallNode),
      this);
  // Constructors of the user's, also one a std::optional's std::in_place
  // constructor runs.
  Finder->addMatcher(
      cxxConstructExpr(unless(isExpansionInSystemHeader()),
                       anyOf(hasDeclaration(cxxConstructorDecl(
                                 unless(isExpansionInSystemHeader()))),
                             buildsObjectOfTheUsers()))
          .bind(ConstructNode),
      this);
  Finder->addMatcher(varDecl(unless(isExpansionInSystemHeader())).bind(VarNode),
                     this);
}

const CallExpr *UserCodeMatchers::call(const MatchResult &Result) {
  return Result.Nodes.getNodeAs<CallExpr>(CallNode);
}

const FunctionDecl *UserCodeMatchers::callee(const MatchResult &Result) {
  return Result.Nodes.getNodeAs<FunctionDecl>(CalleeNode);
}

const CXXConstructExpr *UserCodeMatchers::construct(const MatchResult &Result) {
  return Result.Nodes.getNodeAs<CXXConstructExpr>(ConstructNode);
}

const VarDecl *UserCodeMatchers::var(const MatchResult &Result) {
  return Result.Nodes.getNodeAs<VarDecl>(VarNode);
}

void UserCodeMatchers::run(const MatchResult &Result) {
  for (MatchCallback *Check : Checks)
    Check->run(Result);
}

void UserCodeMatchers::onStartOfTranslationUnit() {
  for (MatchCallback *Check : Checks)
    Check->onStartOfTranslationUnit();
}

void UserCodeMatchers::onEndOfTranslationUnit() {
  for (MatchCallback *Check : Checks)
    Check->onEndOfTranslationUnit();
}

llvm::StringRef UserCodeMatchers::getID() const {
  return "metaguard checks (shared matchers)";
}

} // namespace clang::tidy::metaguard
