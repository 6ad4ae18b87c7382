//===--- AmbientDeviceNotes.cpp - metaguard-tidy ---------------*- C++ -*-===//

#include "utils/domain/AmbientDeviceNotes.h"
#include "utils/analysis/FunctionBodies.h"
#include "utils/analysis/NameList.h"

#include "clang/AST/ExprCXX.h"
#include "clang/Lex/Lexer.h"

namespace clang::tidy::metaguard {

namespace {

constexpr llvm::StringLiteral GuardNote =
    "meta-device scope '%0' is %select{active from here to the end of its "
    "block|passed in here, so it is active for the whole function}1";
constexpr llvm::StringLiteral ScopeFunctionNote =
    "'%0' runs %select{this lambda|'%2'}1 on the meta device";
constexpr llvm::StringLiteral SetterNote =
    "the default device is set to meta here";

/// The argument that makes a helper set meta: its default argument, left
/// out at the call, or one the call passes.
void noteMetaArgument(ClangTidyCheck &Check, const AmbientDevice::Origin &O,
                      const SourceManager &SM) {
  if (!O.MetaArgument)
    return;
  if (const auto *Default = dyn_cast<CXXDefaultArgExpr>(O.MetaArgument)) {
    const Expr *Value = Default->getExpr();
    std::string Text =
        Lexer::getSourceText(
            CharSourceRange::getTokenRange(SM.getFileLoc(Value->getBeginLoc()),
                                           SM.getFileLoc(Value->getEndLoc())),
            SM, LangOptions())
            .str();
    Check.diag(SM.getFileLoc(O.OriginStmt->getBeginLoc()),
               "default argument %0 of parameter '%1' used here",
               DiagnosticIDs::Note)
        << (Text.empty() ? std::string("meta") : Text) << O.Parameter;
    return;
  }
  Check.diag(SM.getFileLoc(O.MetaArgument->getBeginLoc()),
             "a meta device is passed to parameter '%0' here",
             DiagnosticIDs::Note)
      << O.Parameter;
}

} // namespace

void noteAmbientOriginAt(ClangTidyCheck &Check, AmbientDevice::Source Kind,
                         SourceLocation Loc, llvm::StringRef Name) {
  if (Loc.isInvalid())
    return;
  switch (Kind) {
  case AmbientDevice::Source::ScopeGuard:
    Check.diag(Loc, GuardNote, DiagnosticIDs::Note) << Name << false;
    break;
  case AmbientDevice::Source::ScopeFunction:
    Check.diag(Loc, ScopeFunctionNote, DiagnosticIDs::Note)
        << Name << false << "";
    break;
  case AmbientDevice::Source::DefaultDevice:
    Check.diag(Loc, SetterNote, DiagnosticIDs::Note);
    break;
  }
}

void noteAmbientOrigin(ClangTidyCheck &Check, const AmbientDevice::Origin &O,
                       const Expr *Call, llvm::StringRef What, bool ThroughCall,
                       const SourceManager &SM) {
  switch (O.Kind) {
  case AmbientDevice::Source::ScopeGuard: {
    const auto *Var = cast<VarDecl>(O.OriginDecl);
    Check.diag(SM.getFileLoc(Var->getLocation()), GuardNote,
               DiagnosticIDs::Note)
        << Var->getName() << isa<ParmVarDecl>(Var);
    break;
  }
  case AmbientDevice::Source::ScopeFunction: {
    const auto *ScopeCall = cast<CallExpr>(O.OriginStmt);
    const FunctionDecl *Fn = ScopeCall->getDirectCallee();
    Check.diag(SM.getFileLoc(ScopeCall->getBeginLoc()), ScopeFunctionNote,
               DiagnosticIDs::Note)
        << (Fn ? displayName(Fn) : unresolvedCalleeName(ScopeCall).str())
        << (ThroughCall && ScopeCall == Call) << What;
    break;
  }
  case AmbientDevice::Source::DefaultDevice:
    if (O.Helper.empty()) {
      Check.diag(SM.getFileLoc(O.OriginStmt->getBeginLoc()), SetterNote,
                 DiagnosticIDs::Note);
      break;
    }
    Check.diag(SM.getFileLoc(O.OriginStmt->getBeginLoc()),
               "'%0' returns with the default device set to meta%select{|, "
               "until the object it builds is destroyed}1",
               DiagnosticIDs::Note)
        << O.Helper << O.UntilDestroyed;
    noteMetaArgument(Check, O, SM);
    if (O.InnerSetter.isValid())
      Check.diag(O.InnerSetter, SetterNote, DiagnosticIDs::Note);
    break;
  }
  if (O.Handler)
    Check.diag(SM.getFileLoc(O.Handler->getBeginLoc()),
               "an exception that leaves the try block before its reset lands "
               "in this handler, which does not reset the default device",
               DiagnosticIDs::Note);
  if (O.KeptAt)
    Check.diag(SM.getFileLoc(O.KeptAt->getBeginLoc()),
               "'%0' may run here and does not reset the default device",
               DiagnosticIDs::Note)
        << O.KeptBy;
}

} // namespace clang::tidy::metaguard
