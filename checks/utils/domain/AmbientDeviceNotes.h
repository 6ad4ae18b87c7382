//===--- AmbientDeviceNotes.h - metaguard-tidy -----------------*- C++ -*-===//
//
// The notes that say where the meta device came from (AmbientDevice::Origin)
// under a finding: the scope, the lambda's scope function, the setter call or
// the helper that set it. Every check reporting something done on meta
// attaches them the same way.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_DOMAIN_AMBIENTDEVICENOTES_H
#define METAGUARD_CHECKS_UTILS_DOMAIN_AMBIENTDEVICENOTES_H

#include "utils/domain/AmbientDevice.h"

#include "clang-tidy/ClangTidyCheck.h"

namespace clang::tidy::metaguard {

/// Notes for O under the finding at Call. What names the function the
/// finding is about; ThroughCall: the finding is about a function Call runs
/// (a scope function's note then names it instead of "this lambda").
void noteAmbientOrigin(ClangTidyCheck &Check, const AmbientDevice::Origin &O,
                       const Expr *Call, llvm::StringRef What, bool ThroughCall,
                       const SourceManager &SM);

/// The same note for an origin known only as a fact (a function summary,
/// possibly of another file): its kind, where it is (the guard variable,
/// the scope function's call, the setter call that set meta) and the
/// guard's or the scope function's name.
void noteAmbientOriginAt(ClangTidyCheck &Check, AmbientDevice::Source Kind,
                         SourceLocation Loc, llvm::StringRef Name);

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_DOMAIN_AMBIENTDEVICENOTES_H
