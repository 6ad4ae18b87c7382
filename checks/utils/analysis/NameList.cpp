//===--- NameList.cpp - metaguard-tidy -------------------------*- C++ -*-===//

#include "utils/analysis/NameList.h"
#include "utils/ClangCompat.h"

#include "clang/AST/DeclCXX.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

namespace clang::tidy::metaguard {

std::vector<std::string> parseList(llvm::StringRef Value) {
  std::vector<std::string> Result;
  while (!Value.empty()) {
    size_t End = Value.find_first_of(";,");
    llvm::StringRef Entry = Value.substr(0, End).trim();
    if (!Entry.empty())
      Result.push_back(Entry.str());
    if (End == llvm::StringRef::npos)
      break;
    Value = Value.substr(End + 1);
  }
  return Result;
}

std::string joinList(llvm::ArrayRef<std::string> Entries) {
  std::string Result;
  for (const std::string &Entry : Entries) {
    if (!Result.empty())
      Result += ';';
    Result += Entry;
  }
  return Result;
}

std::string displayName(const FunctionDecl *FD) {
  if (const auto *Method = dyn_cast<CXXMethodDecl>(FD))
    if (Method->getParent()->isLambda())
      return "lambda";
  if (const auto *Ctor = dyn_cast<CXXConstructorDecl>(FD))
    return qualifiedNameOf(Ctor->getParent()) +
           "::" + Ctor->getParent()->getNameAsString();
  return qualifiedNameOf(FD);
}

std::string qualifiedNameOf(const NamedDecl *D) {
  // Collect the enclosing names innermost first, then join them outermost
  // first.
  llvm::SmallVector<llvm::StringRef, 4> Scopes;
  for (const DeclContext *DC = D->getDeclContext(); DC; DC = DC->getParent()) {
    if (const auto *NS = dyn_cast<NamespaceDecl>(DC)) {
      if (!NS->isAnonymousNamespace() && !NS->isInline())
        Scopes.push_back(NS->getName());
    } else if (const auto *RD = dyn_cast<RecordDecl>(DC)) {
      if (RD->getIdentifier())
        Scopes.push_back(RD->getName());
    } else if (const auto *ED = dyn_cast<EnumDecl>(DC)) {
      if (ED->isScoped())
        Scopes.push_back(ED->getName());
    }
  }
  std::string Name;
  for (llvm::StringRef Scope : llvm::reverse(Scopes)) {
    Name += Scope;
    Name += "::";
  }
  Name += D->getNameAsString();
  return Name;
}

NameList::NameList(llvm::StringRef OptionValue) {
  for (std::string &Entry : parseList(OptionValue)) {
    llvm::StringRef Ref(Entry);
    Ref.consume_front("::");
    if (Ref.contains("::"))
      Qualified.push_back(Ref.str());
    else
      Bare.push_back(Ref.str());
    Entries.push_back(std::move(Entry));
  }
}

bool NameList::matches(const NamedDecl *D) const {
  if (!D || !D->getIdentifier())
    return false;
  llvm::StringRef Name = D->getName();
  if (llvm::is_contained(Bare, Name))
    return true;
  if (Qualified.empty())
    return false;
  bool AnyLastMatches = llvm::any_of(Qualified, [&](const std::string &Q) {
    return compat::endsWith(llvm::StringRef(Q), Name);
  });
  if (!AnyLastMatches)
    return false;
  std::string Full = qualifiedNameOf(D);
  return llvm::is_contained(Qualified, Full);
}

bool NameList::matchesUnresolved(llvm::StringRef Name) const {
  if (llvm::is_contained(Bare, Name))
    return true;
  return llvm::any_of(Qualified, [&](const std::string &Q) {
    llvm::StringRef Ref(Q);
    return compat::endsWith(Ref, Name) &&
           compat::endsWith(Ref.drop_back(Name.size()), "::");
  });
}

} // namespace clang::tidy::metaguard
