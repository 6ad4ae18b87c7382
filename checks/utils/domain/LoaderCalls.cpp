//===--- LoaderCalls.cpp - metaguard-tidy ----------------------*- C++ -*-===//

#include "utils/domain/LoaderCalls.h"
#include "utils/ClangCompat.h"
#include "utils/analysis/CallableStores.h"

#include "clang/AST/Attr.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/NestedNameSpecifier.h"
#include "clang/AST/PrettyPrinter.h"
#include "llvm/Support/raw_ostream.h"

namespace clang::tidy::metaguard {

namespace {

bool declHasAnnotation(const FunctionDecl *FD) {
  for (const FunctionDecl *Redecl : FD->redecls())
    for (const auto *Attr : Redecl->specific_attrs<AnnotateAttr>())
      if (Attr->getAnnotation() == LoadsWeightsAnnotation)
        return true;
  return false;
}

/// The callee's name as written, with its qualifier ("M::from_pretrained").
std::string writtenName(const CallExpr *Call, llvm::StringRef Name) {
  const Expr *Callee = Call->getCallee()->IgnoreParenImpCasts();
  std::string Text;
  llvm::raw_string_ostream OS(Text);
  PrintingPolicy Policy{LangOptions()};
  Policy.SuppressScope = false;
  bool Qualified = false;
  if (const auto *ULE = dyn_cast<UnresolvedLookupExpr>(Callee))
    Qualified = compat::printQualifier(ULE->getQualifier(), OS, Policy);
  else if (const auto *DSDRE = dyn_cast<DependentScopeDeclRefExpr>(Callee))
    Qualified = compat::printQualifier(DSDRE->getQualifier(), OS, Policy);
  if (!Qualified)
    return Name.str();
  OS << Name;
  return OS.str();
}

} // namespace

bool hasLoadsWeightsAnnotation(const FunctionDecl *FD) {
  if (!FD)
    return false;
  if (declHasAnnotation(FD))
    return true;
  if (const FunctionDecl *Pattern = FD->getTemplateInstantiationPattern())
    if (declHasAnnotation(Pattern))
      return true;
  if (const FunctionTemplateDecl *Primary = FD->getPrimaryTemplate())
    if (declHasAnnotation(Primary->getTemplatedDecl()))
      return true;
  return false;
}

const FunctionDecl *calledFunction(const Stmt *S) {
  if (const auto *Call = dyn_cast_or_null<CallExpr>(S)) {
    const FunctionDecl *Direct = Call->getDirectCallee();
    // f(args) on a std::function set once: the function it holds.
    if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(Call);
        Op && Op->getOperator() == OO_Call && Op->getNumArgs() > 0 &&
        isStdFunctionType(Op->getArg(0)->getType()))
      if (const FunctionDecl *Target =
              CallableStores::soleTarget(Op->getArg(0)))
        return Target;
    if (Direct)
      return Direct;
    // fp(args) through a function pointer set once.
    return CallableStores::soleTarget(Call->getCallee());
  }
  if (const auto *Construct = dyn_cast_or_null<CXXConstructExpr>(S))
    return Construct->getConstructor();
  if (const auto *Inherited = dyn_cast_or_null<CXXInheritedCtorInitExpr>(S))
    return Inherited->getConstructor();
  return nullptr;
}

llvm::StringRef unresolvedCalleeName(const Stmt *S) {
  const auto *Call = dyn_cast_or_null<CallExpr>(S);
  if (!Call || Call->getDirectCallee())
    return {};
  const Expr *Callee = Call->getCallee();
  if (!Callee)
    return {};
  Callee = Callee->IgnoreParenImpCasts();
  DeclarationName Name;
  if (const auto *ULE = dyn_cast<UnresolvedLookupExpr>(Callee))
    Name = ULE->getName();
  else if (const auto *UME = dyn_cast<UnresolvedMemberExpr>(Callee))
    Name = UME->getMemberName();
  else if (const auto *DSME = dyn_cast<CXXDependentScopeMemberExpr>(Callee))
    Name = DSME->getMember();
  else if (const auto *DSDRE = dyn_cast<DependentScopeDeclRefExpr>(Callee))
    Name = DSDRE->getDeclName();
  // An empty DeclarationName also says isIdentifier(): ask for the pointer.
  const IdentifierInfo *Id = Name.getAsIdentifierInfo();
  if (!Id)
    return {};
  return Id->getName();
}

bool LoaderMatcher::isLoader(const FunctionDecl *FD) const {
  if (!FD)
    return false;
  return Names.matches(FD) || hasLoadsWeightsAnnotation(FD);
}

std::optional<std::string> LoaderMatcher::loaderCallName(const Stmt *S) const {
  if (const FunctionDecl *FD = calledFunction(S)) {
    if (isLoader(FD))
      return FD->getNameAsString();
    return std::nullopt;
  }
  if (const auto *Call = dyn_cast_or_null<CallExpr>(S)) {
    llvm::StringRef Name = unresolvedCalleeName(Call);
    if (Name.empty())
      return std::nullopt;
    if (Names.matchesUnresolved(Name))
      return writtenName(Call, Name);
    // An unresolved call whose candidates are all annotated loaders.
    if (const auto *ULE = dyn_cast<UnresolvedLookupExpr>(
            Call->getCallee()->IgnoreParenImpCasts())) {
      bool Any = false;
      for (const NamedDecl *Candidate : ULE->decls()) {
        const auto *FD = dyn_cast<FunctionDecl>(Candidate->getUnderlyingDecl());
        if (const auto *FTD =
                dyn_cast<FunctionTemplateDecl>(Candidate->getUnderlyingDecl()))
          FD = FTD->getTemplatedDecl();
        if (!FD || !hasLoadsWeightsAnnotation(FD))
          return std::nullopt;
        Any = true;
      }
      if (Any)
        return writtenName(Call, Name);
    }
  }
  return std::nullopt;
}

} // namespace clang::tidy::metaguard
