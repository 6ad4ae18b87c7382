//===--- NameList.h - metaguard-tidy ---------------------------*- C++ -*-===//
//
// Option lists of declaration names ("from_pretrained;::metaguard::loader")
// and how a declaration is matched against them.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_ANALYSIS_NAMELIST_H
#define METAGUARD_CHECKS_UTILS_ANALYSIS_NAMELIST_H

#include "clang/AST/Decl.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace clang::tidy::metaguard {

/// Splits an option value on ';' and ',' into trimmed, non-empty entries.
std::vector<std::string> parseList(llvm::StringRef Value);

/// Joins entries with ';' (the inverse of parseList).
std::string joinList(llvm::ArrayRef<std::string> Entries);

/// The fully qualified name of D without template arguments, anonymous or
/// inline namespaces, and without a leading "::", e.g.
/// "metaguard::from_pretrained" or "Model::from_pretrained".
std::string qualifiedNameOf(const NamedDecl *D);

/// How a function is called in messages: its qualified name, "lambda" for
/// a lambda's call operator, and the class built for a constructor
/// (inherited constructors carry the base's name).
std::string displayName(const FunctionDecl *FD);

/// Whether D is a declaration with the simple name Name.
inline bool isNamed(const NamedDecl *D, llvm::StringRef Name) {
  return D && D->getIdentifier() && D->getName() == Name;
}

/// Whether D is the standard library's Name: declared in namespace std or
/// in an inline namespace of it (libc++'s std::__1). A class template's
/// specializations carry its name, so std::optional<int> is "optional".
inline bool isStdNamed(const NamedDecl *D, llvm::StringRef Name) {
  return isNamed(D, Name) && D->isInStdNamespace();
}

/// A list of declaration names read from a check option.
///
/// - An entry without "::" is a bare name: it matches a declaration with that
///   name in any namespace or class ("from_pretrained" matches
///   metaguard::from_pretrained, Model::from_pretrained and a user's own
///   ::from_pretrained).
/// - An entry with "::" is qualified: it matches exactly that fully qualified
///   name; a leading "::" is optional ("::metaguard::DeviceScope" and
///   "metaguard::DeviceScope" are the same entry).
class NameList {
public:
  NameList() = default;
  explicit NameList(llvm::StringRef OptionValue);

  /// Whether D's name matches an entry.
  bool matches(const NamedDecl *D) const;
  /// Whether an unresolved (dependent) name matches an entry: a bare entry
  /// equal to Name, or a qualified entry whose last component is Name.
  bool matchesUnresolved(llvm::StringRef Name) const;

  bool empty() const { return Bare.empty() && Qualified.empty(); }
  /// The entries as written (normalised), for storeOptions.
  llvm::ArrayRef<std::string> entries() const { return Entries; }
  std::string str() const { return joinList(Entries); }

private:
  std::vector<std::string> Entries;
  std::vector<std::string> Bare;
  std::vector<std::string> Qualified; // Without the leading "::".
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_ANALYSIS_NAMELIST_H
