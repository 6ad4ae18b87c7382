//===--- SummaryFacts.cpp - metaguard-tidy ---------------------*- C++ -*-===//

#include "utils/summaries/SummaryFacts.h"
#include "utils/ClangCompat.h"
#include "utils/summaries/SummaryJson.h"
#include "utils/summaries/SummaryMerge.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <mutex>
#include <vector>

namespace clang::tidy::metaguard {

namespace {

/// What identifies one version of a SummaryFile: for a file its size and
/// modification time, for a folder those of each *.json file in it.
struct Stamp {
  std::vector<std::tuple<std::string, uint64_t, int64_t>> Files;
  bool Missing = false;
  bool operator==(const Stamp &O) const {
    return Missing == O.Missing && Files == O.Files;
  }
};

Stamp stampOf(llvm::StringRef Path, bool &IsFolder) {
  Stamp S;
  IsFolder = false;
  llvm::sys::fs::file_status Status;
  if (llvm::sys::fs::status(Path, Status) || !llvm::sys::fs::exists(Status)) {
    S.Missing = true;
    return S;
  }
  auto Add = [&S](llvm::StringRef File, const llvm::sys::fs::file_status &St) {
    S.Files.emplace_back(
        File.str(), St.getSize(),
        static_cast<int64_t>(
            St.getLastModificationTime().time_since_epoch().count()));
  };
  if (!llvm::sys::fs::is_directory(Status)) {
    Add(Path, Status);
    return S;
  }
  IsFolder = true;
  std::error_code EC;
  for (llvm::sys::fs::directory_iterator It(Path, EC), End; It != End && !EC;
       It.increment(EC)) {
    llvm::StringRef Name = It->path();
    // Temporary files of a writer in progress are not facts yet.
    if (!compat::endsWith(Name, ".json"))
      continue;
    llvm::sys::fs::file_status St;
    if (!llvm::sys::fs::status(Name, St) && llvm::sys::fs::is_regular_file(St))
      Add(Name, St);
  }
  std::sort(S.Files.begin(), S.Files.end());
  return S;
}

void report(const std::string &Message) {
  llvm::errs() << "metaguard: " << Message << "\n";
}

std::shared_ptr<const ExternalFacts> load(llvm::StringRef Path, const Stamp &S,
                                          bool IsFolder) {
  auto Table = std::make_shared<ExternalFacts>();
  if (S.Missing) {
    report(("SummaryFile " + Path +
            ": no such file or folder; calls into other translation units "
            "are treated as unknown")
               .str());
    return Table;
  }
  SummaryMerger Merger;
  for (const auto &File : S.Files) {
    const std::string &Name = std::get<0>(File);
    auto Buffer = llvm::MemoryBuffer::getFile(Name, /*IsText=*/true);
    if (!Buffer) {
      report("SummaryFile " + Name + ": cannot read: " +
             Buffer.getError().message() + "; its functions are unknown");
      continue;
    }
    ParsedFacts Parsed = parseFacts((*Buffer)->getBuffer(), Name);
    for (const std::string &Error : Parsed.Errors)
      report("invalid facts: " + Error);
    if (Parsed.Unreadable)
      report("SummaryFile " + Name +
             ": ignored; calls into the functions it describes are treated "
             "as unknown");
    // A folder's files name their translation unit; an index's entries were
    // merged already.
    llvm::StringRef Source =
        IsFolder ? llvm::sys::path::filename(Name) : llvm::StringRef(Name);
    for (const FunctionSummary &Summary : Parsed.Facts.Functions)
      Merger.add(Summary, Source);
    for (const auto &[Base, By] : Parsed.Facts.Overrides)
      Table->Overrides[Base].insert(By.begin(), By.end());
    for (const auto &[Slot, Stored] : Parsed.Facts.Stores)
      Table->Stores[Slot].insert(Stored.begin(), Stored.end());
  }
  for (const SummaryConflict &C : Merger.conflicts())
    report(C.message());
  for (auto &Entry : Merger.take())
    Table->Functions.emplace(Entry.first, std::move(Entry.second));
  return Table;
}

struct CacheEntry {
  Stamp Version;
  std::shared_ptr<const ExternalFacts> Table;
};

} // namespace

std::shared_ptr<const ExternalFacts> loadExternalFacts(llvm::StringRef Path) {
  // One lock for the whole load: clangd's workers parsing together wait for
  // the first to read the file instead of reading (and reporting) it twice.
  static std::mutex Lock;
  static std::map<std::string, CacheEntry, std::less<>> Cache;
  std::lock_guard<std::mutex> Guard(Lock);
  bool IsFolder = false;
  Stamp Now = stampOf(Path, IsFolder);
  auto It = Cache.find(Path);
  if (It != Cache.end() && It->second.Version == Now)
    return It->second.Table;
  CacheEntry Entry{Now, load(Path, Now, IsFolder)};
  std::shared_ptr<const ExternalFacts> Table = Entry.Table;
  Cache[Path.str()] = std::move(Entry);
  return Table;
}

const FunctionSummary *
ExternalSummaries::findExternalSummary(llvm::StringRef USR) {
  if (Path.empty() || USR.empty())
    return nullptr;
  load();
  return Table->find(USR);
}

std::vector<const FunctionSummary *>
ExternalSummaries::findOverrides(llvm::StringRef USR) {
  std::vector<const FunctionSummary *> Result;
  if (Path.empty() || USR.empty())
    return Result;
  load();
  std::vector<std::string> Work{USR.str()};
  std::set<std::string> Seen{USR.str()};
  while (!Work.empty()) {
    auto It = Table->Overrides.find(Work.back());
    Work.pop_back();
    if (It == Table->Overrides.end())
      continue;
    for (const std::string &Override : It->second)
      if (Seen.insert(Override).second) {
        Work.push_back(Override);
        if (const FunctionSummary *S = Table->find(Override))
          Result.push_back(S);
      }
  }
  return Result;
}

std::vector<const FunctionSummary *>
ExternalSummaries::findStored(llvm::StringRef USR) {
  std::vector<const FunctionSummary *> Result;
  if (Path.empty() || USR.empty())
    return Result;
  load();
  auto It = Table->Stores.find(USR);
  if (It == Table->Stores.end())
    return Result;
  for (const std::string &Stored : It->second)
    if (const FunctionSummary *S = Table->find(Stored))
      Result.push_back(S);
  return Result;
}

} // namespace clang::tidy::metaguard
