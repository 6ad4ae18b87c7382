//===--- MetaguardClangTidy.cpp - metaguard-clang-tidy ---------*- C++ -*-===//
//
// metaguard-clang-tidy: Debian's clang-tidy (its own clangTidyMain and every
// upstream module, from the static libraries) with the metaguard-* checks
// compiled in. A plugin only loads into a clang-tidy that exports Clang's
// classes and has the plugin's major; this binary needs neither.
//
//===----------------------------------------------------------------------===//

#include "MetaguardModule.h"
#include "MetaguardVersion.h"
#include "utils/ClangCompat.h"

#include "clang-tidy/tool/ClangTidyMain.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

#define METAGUARD_STRINGIZE2(X) #X
#define METAGUARD_STRINGIZE(X) METAGUARD_STRINGIZE2(X)
#define LLVM_MAJOR_STRING METAGUARD_STRINGIZE(LLVM_VERSION_MAJOR)

namespace clang::tidy::metaguard {
namespace {

// The executable's own object: always linked, so no anchor is needed.
ClangTidyModuleRegistry::Add<MetaguardModule> Registration(ModuleName,
                                                           ModuleDescription);

void printMetaguardVersion(llvm::raw_ostream &OS) {
  printBuiltInVersion(OS, "clang-tidy");
}

/// Clang looks for its builtin headers (stddef.h, ...) in
/// <bin>/../lib/clang/<major>. A build tree has none there; the wheel and the
/// install tree do. Where they are missing, use those of the LLVM this binary
/// was linked from, unless the user chose a resource directory.
bool needsResourceDir(const char *Argv0, llvm::ArrayRef<char *> Args) {
  for (const char *Arg : Args.drop_front())
    if (llvm::StringRef(Arg).contains("resource-dir"))
      return false;
  std::string Exe = llvm::sys::fs::getMainExecutable(
      Argv0, reinterpret_cast<void *>(&printMetaguardVersion));
  llvm::SmallString<256> Beside(
      llvm::sys::path::parent_path(llvm::sys::path::parent_path(Exe)));
  llvm::sys::path::append(Beside, "lib", "clang", LLVM_MAJOR_STRING, "include");
  return !llvm::sys::fs::is_directory(Beside) &&
         llvm::sys::fs::is_directory(METAGUARD_CLANG_RESOURCE_DIR);
}

} // namespace
} // namespace clang::tidy::metaguard

int main(int Argc, char *Argv[]) {
  using namespace clang::tidy::metaguard;
  llvm::cl::AddExtraVersionPrinter(printMetaguardVersion);
  std::vector<char *> Args(Argv, Argv + Argc);
  static std::string ResourceDir =
      std::string("--extra-arg-before=-resource-dir=") +
      METAGUARD_CLANG_RESOURCE_DIR;
  if (needsResourceDir(Argv[0], Args))
    Args.insert(Args.begin() + 1, ResourceDir.data());
  Args.push_back(nullptr);
  return clang::tidy::clangTidyMain(static_cast<int>(Args.size()) - 1,
                                    const_cast<const char **>(Args.data()));
}
