//===--- WholeProgram.cpp - metaguard-tidy ---------------------*- C++ -*-===//

#include "utils/summaries/WholeProgram.h"
#include "utils/ClangCompat.h"
#include "utils/analysis/NameList.h"
#include "utils/summaries/SummaryJson.h"
#include "utils/summaries/Usr.h"

#include "clang/AST/DeclCXX.h"
#include "clang/AST/ExprCXX.h"
#include "clang/Basic/SourceManager.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <cstdlib>
#include <map>
#include <mutex>

using namespace clang::ast_matchers;

namespace clang::tidy::metaguard {

namespace {

constexpr const char *SummaryFileEnv = "METAGUARD_SUMMARY_FILE";
constexpr const char *ExportEnv = "METAGUARD_EXPORT_SUMMARIES";

/// The environment variable when it is set, even to "" (metaguard-tidy sets
/// METAGUARD_SUMMARY_FILE= to keep a .clang-tidy's SummaryFile out of the
/// first pass), else the option.
std::string fromEnvOr(const char *Variable, llvm::StringRef Option) {
  if (const char *Value = std::getenv(Variable))
    return Value;
  return Option.str();
}

/// Path if it exists from the working folder; else the first Dir/Path that
/// exists, Dir being the main file's folder or a parent of it; else Path.
std::string resolveSummaryFile(llvm::StringRef Path, llvm::StringRef MainFile) {
  if (Path.empty() || llvm::sys::path::is_absolute(Path) ||
      llvm::sys::fs::exists(Path))
    return Path.str();
  for (llvm::StringRef Dir = llvm::sys::path::parent_path(MainFile);
       !Dir.empty(); Dir = llvm::sys::path::parent_path(Dir)) {
    llvm::SmallString<256> Candidate(Dir);
    llvm::sys::path::append(Candidate, Path);
    if (llvm::sys::fs::exists(Candidate))
      return std::string(Candidate);
  }
  return Path.str();
}

/// The facts file for MainFile when ExportSummaries names a folder: its
/// base name (readable) and a hash of its full path (unique).
std::string factsFileIn(llvm::StringRef Folder, llvm::StringRef MainFile) {
  llvm::SmallString<256> Path(Folder);
  std::string Name;
  llvm::raw_string_ostream(Name)
      << llvm::sys::path::filename(MainFile) << "-"
      << llvm::format_hex_no_prefix(compat::stableHash(MainFile), 16)
      << ".json";
  llvm::sys::path::append(Path, Name);
  return std::string(Path);
}

/// Facet by facet, the facts that say something win over none. Each check
/// fills in the facets it registered; two checks sharing a facet compute the
/// same facts, so the first non-empty one is taken.
FunctionSummary combineFacets(FunctionSummary A, const FunctionSummary &B) {
  if (A.Name.empty())
    A.Name = B.Name;
  for (const FacetKind *K : FacetKind::all()) {
    const FacetFacts *Mine = A.facts(*K);
    const FacetFacts *Theirs = B.facts(*K);
    if ((!Mine || Mine->empty()) && Theirs && !Theirs->empty())
      A.setFacts(*K, Theirs->clone());
  }
  return A;
}

/// What the checks of this process have exported to each facts file for
/// the current TU: both metaguard checks write the same file, and the
/// second write must keep what the first one found (its summaries, and the
/// uses its summary table saw).
struct PendingExport {
  std::map<std::string, TranslationUnitFacts> ByCheck;
};

/// Mine with the functions and uses of the other checks' exports of Path
/// for this TU folded in.
TranslationUnitFacts combineExports(llvm::StringRef Path,
                                    llvm::StringRef CheckName,
                                    TranslationUnitFacts Mine) {
  static std::mutex Lock;
  static std::map<std::string, PendingExport, std::less<>> Pending;
  std::lock_guard<std::mutex> Guard(Lock);
  PendingExport &Entry = Pending[Path.str()];
  // A check exporting again: a new TU for the same file (clangd re-parsing,
  // or the file named twice on a command line).
  if (Entry.ByCheck.count(CheckName.str()))
    Entry.ByCheck.clear();
  Entry.ByCheck[CheckName.str()] = Mine;
  std::map<std::string, FunctionSummary> ByUSR;
  std::set<std::string> Uses;
  for (const auto &Contribution : Entry.ByCheck) {
    for (const FunctionSummary &S : Contribution.second.Functions) {
      auto [It, New] = ByUSR.try_emplace(S.USR, S);
      if (!New)
        It->second = combineFacets(It->second, S);
    }
    Uses.insert(Contribution.second.Uses.begin(),
                Contribution.second.Uses.end());
  }
  Mine.Functions.clear();
  for (auto &Item : ByUSR)
    Mine.Functions.push_back(std::move(Item.second));
  Mine.Uses.assign(Uses.begin(), Uses.end());
  return Mine;
}

std::string absolute(const SourceManager &SM, llvm::StringRef Name) {
  llvm::SmallString<256> Path(Name);
  SM.getFileManager().makeAbsolutePath(Path);
  llvm::sys::path::remove_dots(Path, /*remove_dot_dot=*/true);
  return std::string(Path);
}

} // namespace

WholeProgramFacts::WholeProgramFacts(llvm::StringRef CheckName,
                                     ClangTidyCheck::OptionsView &Options)
    : CheckName(CheckName.str()),
      SummaryFileOption(
          std::string(Options.getLocalOrGlobal("SummaryFile", ""))),
      ExportOption(
          std::string(Options.getLocalOrGlobal("ExportSummaries", ""))),
      ExportPath(fromEnvOr(ExportEnv, ExportOption)),
      External(fromEnvOr(SummaryFileEnv, SummaryFileOption)) {}

void WholeProgramFacts::storeOptions(ClangTidyCheck::OptionsView &Options,
                                     ClangTidyOptions::OptionMap &Opts) const {
  Options.store(Opts, "SummaryFile", SummaryFileOption);
  Options.store(Opts, "ExportSummaries", ExportOption);
}

void WholeProgramFacts::registerMatchers(MatchFinder *Finder) {
  bool Reads = !External.path().empty();
  if (!Reads && !exporting())
    return;
  Finder->addMatcher(translationUnitDecl().bind("tu"), this);
  if (!exporting())
    return;
  // Definitions and calls outside system headers: LibTorch's and the
  // standard library's functions are known by name, not by summary.
  Finder->addMatcher(
      functionDecl(isDefinition(), unless(isExpansionInSystemHeader()))
          .bind("definition"),
      this);
  Finder->addMatcher(callExpr(unless(isExpansionInSystemHeader()),
                              callee(functionDecl().bind("callee"))),
                     this);
  Finder->addMatcher(
      cxxConstructExpr(unless(isExpansionInSystemHeader()),
                       hasDeclaration(cxxConstructorDecl().bind("callee"))),
      this);
}

void WholeProgramFacts::run(const MatchFinder::MatchResult &Result) {
  if (Result.Nodes.getNodeAs<TranslationUnitDecl>("tu")) {
    SM = Result.SourceManager;
    Context = Result.Context;
    if (auto Main = SM->getFileEntryRefForID(SM->getMainFileID()))
      MainFile = absolute(*SM, Main->getName());
    External.setPath(resolveSummaryFile(
        fromEnvOr(SummaryFileEnv, SummaryFileOption), MainFile));
    // Read now rather than at the first lookup, so that a missing or broken
    // file is reported even by a TU that calls nothing in other files (once
    // per process and version of the file: this is a stat when cached).
    External.load();
    return;
  }
  if (const auto *FD = Result.Nodes.getNodeAs<FunctionDecl>("definition")) {
    // Functions another TU can call and has no body for: not inline ones
    // (every caller has the body), not templates (instantiated where used).
    // Overrides are the exception: a virtual call in another TU may run one
    // defined in a class it never sees (one written in this .cpp file).
    const auto *Method = dyn_cast<CXXMethodDecl>(FD);
    const bool Override = Method && Method->size_overridden_methods() > 0;
    if (FD->isImplicit() || FD->isDependentContext() ||
        FD->isTemplateInstantiation() ||
        (!Override && (FD->isInlined() || !FD->isExternallyVisible())))
      return;
    std::string USR = usrOf(FD);
    if (!USR.empty() && Defines.insert(std::move(USR)).second)
      Definitions.push_back(FD);
    if (Override)
      for (const CXXMethodDecl *Base : Method->overridden_methods())
        if (std::string BaseUSR = usrOf(Base->getCanonicalDecl());
            !BaseUSR.empty())
          Overrides[BaseUSR].insert(usrOf(FD));
    return;
  }
  if (const auto *FD = Result.Nodes.getNodeAs<FunctionDecl>("callee")) {
    if (!FD->hasBody())
      addUse(FD);
  }
}

bool WholeProgramFacts::sharedAcrossFiles(const ValueDecl *Slot) const {
  if (!Slot || !SM || SM->isInSystemHeader(Slot->getLocation()))
    return false;
  if (isa<FieldDecl>(Slot))
    return true;
  // A helper that returns a reference to a table (a registry).
  if (const auto *Helper = dyn_cast<FunctionDecl>(Slot))
    return Helper->isExternallyVisible();
  const auto *Var = dyn_cast<VarDecl>(Slot);
  return Var && !Var->isLocalVarDeclOrParm() && Var->isExternallyVisible();
}

void WholeProgramFacts::addUse(const FunctionDecl *FD) {
  FD = FD->getCanonicalDecl();
  if (!Seen.insert(FD).second || FD->getBuiltinID() ||
      FD->isDependentContext() || !SM ||
      SM->isInSystemHeader(FD->getLocation()))
    return;
  std::string USR = usrOf(FD);
  if (!USR.empty())
    Uses.insert(std::move(USR));
}

const FunctionSummary *
WholeProgramFacts::findExternalSummary(const FunctionDecl *FD) {
  if (External.path().empty() || !FD)
    return nullptr;
  return External.findExternalSummary(usrOf(FD->getCanonicalDecl()));
}

void WholeProgramFacts::exportSummaries(
    llvm::ArrayRef<FunctionSummary> Summaries) {
  if (exporting() && SM && !MainFile.empty()) {
    std::string Path = ExportPath;
    if (compat::endsWith(Path, "/") || llvm::sys::fs::is_directory(Path))
      Path = factsFileIn(Path, MainFile);

    TranslationUnitFacts Facts;
    Facts.MainFile = MainFile;
    Facts.Functions = Summaries.vec();
    Facts.Defines.assign(Defines.begin(), Defines.end());
    Facts.Uses.assign(Uses.begin(), Uses.end());
    for (const auto &[Base, By] : Overrides)
      Facts.Overrides[Base].assign(By.begin(), By.end());
    for (const auto &[Slot, Stored] : Stores)
      Facts.Stores[Slot].assign(Stored.begin(), Stored.end());
    // Every file the preprocessor entered: the driver re-summarises the TU
    // when one of them changes (like a compiler's .d file). Not the files
    // that notes point into (SummaryTable::locationOf gives them a FileID
    // with no #include): what this TU depends on there is the summary,
    // which the driver follows on its own.
    std::set<std::string> Inputs;
    for (auto It = SM->fileinfo_begin(), End = SM->fileinfo_end(); It != End;
         ++It) {
      FileID ID = SM->translateFile(It->first);
      if (ID.isValid() && ID != SM->getMainFileID() &&
          SM->getIncludeLoc(ID).isInvalid())
        continue;
      Inputs.insert(absolute(*SM, compat::fileInfoName(It->first)));
    }
    Facts.Inputs.assign(Inputs.begin(), Inputs.end());
    Facts = combineExports(Path, CheckName, std::move(Facts));

    std::string Error = writeFileAtomically(Path, factsToJson(Facts));
    if (!Error.empty())
      llvm::errs()
          << "metaguard: cannot write the facts file (ExportSummaries): "
          << Error << "\n";
  }
  SM = nullptr;
  MainFile.clear();
  Defines.clear();
  Definitions.clear();
  Context = nullptr;
  Uses.clear();
  Overrides.clear();
  Stores.clear();
  Seen.clear();
  External.reset();
}

void WholeProgramFacts::exportTable(
    const std::function<SummaryTable &(ASTContext &)> &Table,
    llvm::ArrayRef<const FacetKind *> Facets) {
  std::vector<FunctionSummary> Summaries;
  if (exporting() && Context) {
    SummaryTable &T = Table(*Context);
    llvm::DenseSet<const FunctionDecl *> Exported;
    // What is stored into a slot another TU calls through is reached there
    // by its USR, from the stores facts: a lambda or a function of this
    // file only (a registration's lambda) is exported too.
    std::vector<const FunctionDecl *> ToExport(Definitions.begin(),
                                               Definitions.end());
    T.callableStores().forEachStore(
        [&](const ValueDecl *Slot,
            llvm::ArrayRef<const FunctionDecl *> Stored) {
          if (sharedAcrossFiles(Slot))
            for (const FunctionDecl *FD : Stored)
              if (FD->hasBody() && !FD->isDependentContext() &&
                  !SM->isInSystemHeader(FD->getLocation()))
                ToExport.push_back(FD);
        });
    for (const FunctionDecl *FD : ToExport) {
      const FunctionDecl *Def = FD->getDefinition() ? FD->getDefinition() : FD;
      Exported.insert(Def);
      for (const FacetKind *K : Facets)
        T.lookup(Def, *K);
    }
    llvm::DenseSet<const FunctionDecl *> Written;
    T.forEachComputed([&](const FunctionDecl *FD, const FunctionSummary &S) {
      if (Exported.contains(FD) && !S.empty()) {
        Summaries.push_back(S);
        Written.insert(FD);
      }
    });
    // A destructor that does nothing is written too: an object's end of
    // life runs it implicitly, and a reader must tell "does nothing" from
    // "defined nowhere it can see" (an RAII session's end).
    for (const FunctionDecl *FD : Definitions)
      if (const FunctionDecl *Def =
              FD->getDefinition() ? FD->getDefinition() : FD;
          isa<CXXDestructorDecl>(Def) && Written.insert(Def).second) {
        FunctionSummary Empty;
        Empty.USR = usrOf(Def);
        Empty.Name = qualifiedNameOf(Def);
        Summaries.push_back(std::move(Empty));
      }
    // Calls the matchers do not see: those reached through system headers
    // (std::make_shared running a constructor), and virtual calls.
    for (const FunctionDecl *FD : T.usedElsewhere())
      addUse(FD);
    // Stores into a std::function slot another TU may call through (a
    // global, a member), and the slots this TU's calls go through: their
    // USRs are uses too, so that the driver re-checks this TU when what
    // other TUs store there changes.
    T.callableStores().forEachStore(
        [&](const ValueDecl *Slot,
            llvm::ArrayRef<const FunctionDecl *> Stored) {
          if (!sharedAcrossFiles(Slot))
            return;
          std::string SlotUSR = usrOf(Slot);
          if (SlotUSR.empty())
            return;
          for (const FunctionDecl *FD : Stored)
            if (std::string USR = usrOf(FD->getCanonicalDecl()); !USR.empty())
              Stores[SlotUSR].insert(std::move(USR));
        });
    for (const ValueDecl *Slot : T.slotsUsed())
      if (sharedAcrossFiles(Slot))
        if (std::string USR = usrOf(Slot); !USR.empty())
          Uses.insert(std::move(USR));
  }
  exportSummaries(Summaries);
}

SummaryTable &
WholeProgramFacts::table(std::shared_ptr<SummaryTable> &Held,
                         ASTContext &Context,
                         std::initializer_list<SummaryFacet *> Facets) {
  if (!Held) {
    Held = sharedSummaryTable(Context);
    if (readsSummaries()) {
      Held->setExternalLookup(
          [this](llvm::StringRef USR) { return findExternalSummary(USR); });
      Held->setExternalOverrides(
          [this](llvm::StringRef USR) { return External.findOverrides(USR); });
      Held->setExternalStores(
          [this](llvm::StringRef USR) { return External.findStored(USR); });
    }
  }
  for (SummaryFacet *F : Facets)
    Held->setFacet(F);
  return *Held;
}

} // namespace clang::tidy::metaguard
