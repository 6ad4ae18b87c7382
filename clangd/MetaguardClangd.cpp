//===--- MetaguardClangd.cpp - metaguard-clangd ----------------*- C++ -*-===//
//
// metaguard-clangd: Debian's clangd 19 (its static libraries, unchanged) with
// the metaguard-* clang-tidy checks compiled in. clangd cannot load clang-tidy
// plugins, so the checks have to be in the binary.
//
//===----------------------------------------------------------------------===//

#include "MetaguardModule.h"
#include "MetaguardVersion.h"
#include "utils/ClangCompat.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace clang::clangd {
// Declared in clang-tools-extra/clangd/tool/ClangdMain.h, which Debian does
// not install.
int clangdMain(int Argc, char *Argv[]);
} // namespace clang::clangd

namespace clang::tidy::metaguard {
namespace {

// The executable's own object: always linked, so no anchor is needed.
ClangTidyModuleRegistry::Add<MetaguardModule> Registration(ModuleName,
                                                           ModuleDescription);

} // namespace
} // namespace clang::tidy::metaguard

// clangd's default FastCheckFilter (Strict) only runs checks listed as fast
// in clangd's own table (TidyFastChecks.inc, compiled into libclangDaemon.a),
// which cannot know metaguard's. The link wraps that lookup (-Wl,--wrap, see
// clangd/CMakeLists.txt) so every check of checks/Checks.def answers "fast":
// measured with --check-tidy-time they cost well under clangd's 8% threshold
// (numbers in docs/editor.md; a new check is measured before it is listed).
// Every other check keeps clangd's own answer.
std::optional<bool> realIsFastTidyCheck(llvm::StringRef Check) asm(
    "__real__ZN5clang6clangd15isFastTidyCheckEN4llvm9StringRefE");
std::optional<bool> wrappedIsFastTidyCheck(llvm::StringRef Check) asm(
    "__wrap__ZN5clang6clangd15isFastTidyCheckEN4llvm9StringRefE");

std::optional<bool> wrappedIsFastTidyCheck(llvm::StringRef Check) {
  if (clang::tidy::metaguard::isMetaguardCheck(Check))
    return true;
  return realIsFastTidyCheck(Check);
}

namespace {

bool isDirectory(const char *Path) {
  struct stat Info;
  return stat(Path, &Info) == 0 && S_ISDIR(Info.st_mode);
}

} // namespace

int main(int Argc, char *Argv[]) {
  // clangd looks for Clang's builtin headers (stddef.h, ...) beside its own
  // binary, <bin>/../lib/clang/19, which holds nothing for metaguard-clangd in
  // a build tree or under another prefix. Unless the user chose, use the ones
  // of the LLVM it was built with.
  // clangd replaces the version printer (cl::SetVersionPrinter), which drops
  // any extra one: name metaguard's version before clangd names its own.
  for (int I = 1; I < Argc; ++I)
    if (llvm::StringRef(Argv[I]).ltrim('-') == "version")
      clang::tidy::metaguard::printBuiltInVersion(llvm::outs(), "clangd");
  std::vector<char *> Args(Argv, Argv + Argc);
  static std::string ResourceDir =
      std::string("--resource-dir=") + METAGUARD_CLANG_RESOURCE_DIR;
  // Keep the bodies of forwarding functions (std::make_shared, the TORCH_MODULE
  // holders' constructors, emplace_back) in the preamble. clangd drops header
  // function bodies there, and without these the checks cannot see that
  // `Model m(config);` or `std::make_shared<ModelImpl>(config)` runs a
  // constructor that loads weights (see docs/editor.md).
  static char ParseForwarding[] = "--parse-forwarding-functions";
  bool ChoseResourceDir = false, ChoseForwarding = false;
  for (int I = 1; I < Argc; ++I) {
    llvm::StringRef Arg = llvm::StringRef(Argv[I]).ltrim('-');
    ChoseResourceDir |= Arg.starts_with("resource-dir");
    ChoseForwarding |= Arg.contains("parse-forwarding-functions");
  }
  if (!ChoseForwarding)
    Args.insert(Args.begin() + 1, ParseForwarding);
  if (!ChoseResourceDir && isDirectory(METAGUARD_CLANG_RESOURCE_DIR))
    Args.insert(Args.begin() + 1, ResourceDir.data());
  Args.push_back(nullptr);
  return clang::clangd::clangdMain(static_cast<int>(Args.size()) - 1,
                                   Args.data());
}
