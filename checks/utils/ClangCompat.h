//===--- ClangCompat.h - metaguard-tidy -------------------------*- C++ -*-===//
//
// Every difference between the LLVM majors the checks build for (14 to 23),
// in one place. The rest of checks/ and clangd/ call these names and never
// test LLVM_VERSION_MAJOR themselves; docs/llvm-versions.md lists them.
//
// A rename is detected from the declaration itself rather than from a
// version number, so majors that are only compile-supported (15, 17, 18, 20,
// 21) take whichever spelling their headers have.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_CLANGCOMPAT_H
#define METAGUARD_CHECKS_UTILS_CLANGCOMPAT_H

#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"
#include "clang/AST/Expr.h"
#include "clang/AST/PrettyPrinter.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

// The check registry: ClangTidyModuleRegistry.h until LLVM 21; 22 moved it
// into ClangTidyModule.h and deprecates the old header.
#if LLVM_VERSION_MAJOR >= 22
#include "clang-tidy/ClangTidyModule.h"
#else
#include "clang-tidy/ClangTidyModuleRegistry.h"
#endif

// clang::index::generateUSRForDecl (whole-program summaries' keys): declared
// in clang/Index/ up to LLVM 22; 23 moved it, same namespace and name, into
// clang/UnifiedSymbolResolution/ (the clangUnifiedSymbolResolution library,
// still exported by libclang-cpp). Detected from the headers.
#if __has_include("clang/UnifiedSymbolResolution/USRGeneration.h")
#include "clang/UnifiedSymbolResolution/USRGeneration.h"
#else
#include "clang/Index/USRGeneration.h"
#endif

#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>

namespace clang::tidy::metaguard::compat {

/// The optional type of Clang's own results (CFGElement::getAs, the
/// traversal kind a check overrides): llvm::Optional before LLVM 16.
#if LLVM_VERSION_MAJOR >= 16
template <typename T> using Optional = std::optional<T>;
#else
template <typename T> using Optional = llvm::Optional<T>;
#endif

namespace detail {
template <typename T, typename = void>
struct HasStartsWith : std::false_type {};
template <typename T>
struct HasStartsWith<
    T, std::void_t<decltype(std::declval<const T &>().starts_with(T()))>>
    : std::true_type {};

template <typename T, typename = void>
struct HasUnnamedBitFieldCamel : std::false_type {};
template <typename T>
struct HasUnnamedBitFieldCamel<
    T, std::void_t<decltype(std::declval<const T &>().isUnnamedBitField())>>
    : std::true_type {};

template <typename T, typename = void>
struct HasGetFieldDecl : std::false_type {};
template <typename T>
struct HasGetFieldDecl<
    T, std::void_t<decltype(std::declval<const T &>().getFieldDecl())>>
    : std::true_type {};
template <typename T, typename = void>
struct HasIsPureVirtual : std::false_type {};
template <typename T>
struct HasIsPureVirtual<
    T, std::void_t<decltype(std::declval<const T &>().isPureVirtual())>>
    : std::true_type {};
template <typename Context, typename = void>
struct HasCanonicalTagType : std::false_type {};
template <typename Context>
struct HasCanonicalTagType<
    Context, std::void_t<decltype(std::declval<const Context &>()
                                      .getCanonicalTagType(nullptr))>>
    : std::true_type {};
} // namespace detail

namespace detail {
// Templates, so that only the spelling the headers have is compiled.
template <typename Ref> bool startsWith(const Ref &S, llvm::StringRef Prefix) {
  if constexpr (HasStartsWith<Ref>::value)
    return S.starts_with(Prefix);
  else
    return S.startswith(Prefix);
}
template <typename Ref> bool endsWith(const Ref &S, llvm::StringRef Suffix) {
  if constexpr (HasStartsWith<Ref>::value)
    return S.ends_with(Suffix);
  else
    return S.endswith(Suffix);
}
} // namespace detail

/// StringRef::starts_with/ends_with: startswith/endswith in LLVM 14, both in
/// 16 to 18, the new spelling alone since 19.
inline bool startsWith(llvm::StringRef S, llvm::StringRef Prefix) {
  return detail::startsWith<llvm::StringRef>(S, Prefix);
}
inline bool endsWith(llvm::StringRef S, llvm::StringRef Suffix) {
  return detail::endsWith<llvm::StringRef>(S, Suffix);
}

/// FieldDecl::isUnnamedBitField: isUnnamedBitfield in LLVM 14 and 16.
template <typename Field = FieldDecl> bool isUnnamedBitField(const Field *FD) {
  if constexpr (detail::HasUnnamedBitFieldCamel<Field>::value)
    return FD->isUnnamedBitField();
  else
    return FD->isUnnamedBitfield();
}

/// FunctionDecl::isPureVirtual: isPure up to LLVM 17.
template <typename Function = FunctionDecl>
bool isPureVirtual(const Function *FD) {
  if constexpr (detail::HasIsPureVirtual<Function>::value)
    return FD->isPureVirtual();
  else
    return FD->isPure();
}

/// The field a field designator names: getField() in LLVM 14 and 16,
/// getFieldDecl() in 19 and 22.
template <typename Designator = DesignatedInitExpr::Designator>
const FieldDecl *designatedField(const Designator *D) {
  if constexpr (detail::HasGetFieldDecl<Designator>::value)
    return D->getFieldDecl();
  else
    return D->getField();
}

/// The name of a SourceManager::fileinfo_iterator's key: a const FileEntry *
/// in LLVM 14 and 16, a FileEntryRef in 19 and 22.
template <typename Key> llvm::StringRef fileInfoName(const Key &K) {
  if constexpr (std::is_pointer_v<Key>)
    return K->getName();
  else
    return K.getName();
}

/// The type a record declares: TagDecl::getTypeForDecl() up to LLVM 21,
/// which 22 deletes in favour of ASTContext::getCanonicalTagType().
template <typename Record = CXXRecordDecl>
QualType recordType(const Record *RD) {
  if constexpr (detail::HasCanonicalTagType<ASTContext>::value)
    return RD->getASTContext().getCanonicalTagType(RD);
  else
    return QualType(RD->getTypeForDecl(), 0);
}

/// Prints a qualifier (an expression's getQualifier(): a NestedNameSpecifier *
/// up to LLVM 21, a NestedNameSpecifier value since 22); false, printing
/// nothing, when there is none.
template <typename Qualifier>
bool printQualifier(const Qualifier &Q, llvm::raw_ostream &OS,
                    const PrintingPolicy &Policy) {
  if (!Q)
    return false;
  if constexpr (std::is_pointer_v<Qualifier>)
    Q->print(OS, Policy);
  else
    Q.print(OS, Policy);
  return true;
}

/// A 64-bit hash of Data that names files on disk, so it must not change
/// within a major: XXH3 since LLVM 17, XXH64 before.
inline std::uint64_t stableHash(llvm::StringRef Data) {
#if LLVM_VERSION_MAJOR >= 17
  return llvm::xxh3_64bits(Data);
#else
  return llvm::xxHash64(Data);
#endif
}

} // namespace clang::tidy::metaguard::compat

#endif // METAGUARD_CHECKS_UTILS_CLANGCOMPAT_H
