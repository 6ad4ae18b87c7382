//===--- MetaScopeLoadReporter.cpp - metaguard-tidy ------------*- C++ -*-===//

#include "MetaScopeLoadReporter.h"
#include "utils/domain/AmbientDeviceNotes.h"

#include "clang/AST/ExprCXX.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/SmallVector.h"

namespace clang::tidy::metaguard {

namespace {

/// The rewrite of `metaguard::from_pretrained<M>(dir)` (no LoadOptions) into
/// `metaguard::from_config<M>(metaguard::load_config(dir))`, which builds the
/// same empty model a meta scope gives without trying to load weights. Only a
/// suggestion (a fix-it on a note): the user may instead have meant to move
/// the load out of the scope. Empty when the call is not of that form or is
/// spelled in a macro.
llvm::SmallVector<FixItHint, 3> fromConfigRewrite(const Expr *E,
                                                  const ASTContext &Context) {
  const auto *Call = dyn_cast<CallExpr>(E);
  if (!Call || Call->getNumArgs() == 0)
    return {};
  const FunctionDecl *Callee = Call->getDirectCallee();
  if (!Callee || !Callee->getPrimaryTemplate() ||
      Callee->getQualifiedNameAsString() != "metaguard::from_pretrained")
    return {};
  const auto *Ref = dyn_cast<DeclRefExpr>(Call->getCallee()->IgnoreImplicit());
  if (!Ref || Ref->getNumTemplateArgs() != 1)
    return {};
  for (unsigned I = 1; I < Call->getNumArgs(); ++I)
    if (!isa<CXXDefaultArgExpr>(Call->getArg(I)))
      return {}; // LoadOptions given: from_config has no use for them.
  const Expr *Dir = Call->getArg(0);
  SourceLocation Name = Ref->getNameInfo().getLoc();
  if (Call->getBeginLoc().isMacroID() || Call->getEndLoc().isMacroID() ||
      Name.isMacroID() || Dir->getBeginLoc().isMacroID() ||
      Dir->getEndLoc().isMacroID())
    return {};
  const SourceManager &SM = Context.getSourceManager();
  const LangOptions &LO = Context.getLangOpts();
  // load_config is spelled with the same qualifier as the call, so that a
  // namespace alias keeps working; unqualified calls get the full name.
  std::string Qualifier = "metaguard::";
  if (NestedNameSpecifierLoc QualifierLoc = Ref->getQualifierLoc())
    Qualifier = Lexer::getSourceText(CharSourceRange::getCharRange(
                                         QualifierLoc.getBeginLoc(), Name),
                                     SM, LO)
                    .str();
  SourceLocation AfterDir =
      Lexer::getLocForEndOfToken(Dir->getEndLoc(), 0, SM, LO);
  if (AfterDir.isInvalid())
    return {};
  return {FixItHint::CreateReplacement(CharSourceRange::getTokenRange(Name),
                                       "from_config"),
          FixItHint::CreateInsertion(Dir->getBeginLoc(),
                                     Qualifier + "load_config("),
          FixItHint::CreateInsertion(AfterDir, ")")};
}

} // namespace

bool MetaScopeLoadReporter::firstAt(SourceLocation Loc) {
  return Loc.isValid() && Reported.insert(Loc).second;
}

void MetaScopeLoadReporter::loadOnMeta(const Expr *Call, llvm::StringRef What,
                                       const AmbientDevice::Origin &Origin,
                                       const std::optional<InnerLoad> &Inner,
                                       ASTContext &Context) {
  const SourceManager &SM = Context.getSourceManager();
  SourceLocation Loc = SM.getFileLoc(Call->getBeginLoc());
  if (!firstAt(Loc))
    return;
  const bool Default = Origin.Kind == AmbientDevice::Source::DefaultDevice;
  if (!Inner) {
    Check.diag(Loc,
               "'%0' loads pretrained weights while %select{a meta-device "
               "scope is active|the default device is meta}1, so the loaded "
               "tensors would be left on the meta device without data; build "
               "the empty model with from_config/Model(config) there instead, "
               "%select{move the load out of the scope|reset the default "
               "device before the load}1, or pass an explicit device map")
        << What << Default << Call->getSourceRange();
  } else {
    Check.diag(Loc,
               "'%0' loads pretrained weights (through '%1') while "
               "%select{a meta-device scope is active|the default device is "
               "meta}2, so the loaded tensors would be left on the meta device "
               "without data; build the empty model with "
               "from_config/Model(config) there instead, %select{move the call "
               "out of the scope|reset the default device before the call}2, "
               "or pass an explicit device map to the inner load")
        << What << Inner->LoaderName << Default << Call->getSourceRange();
  }
  noteAmbientOrigin(Check, Origin, Call, What, Inner.has_value(), SM);
  if (Inner)
    noteInnerLoad(*Inner, Loc);
  else if (llvm::SmallVector<FixItHint, 3> Fixes =
               fromConfigRewrite(Call, Context);
           !Fixes.empty())
    Check.diag(
        Loc,
        "if an empty model is what you want here, build it from its config",
        DiagnosticIDs::Note)
        << Fixes;
}

void MetaScopeLoadReporter::loaderBuildsOnMeta(const CallExpr *Call,
                                               llvm::StringRef Loader,
                                               llvm::StringRef Model,
                                               const InnerLoad &Inner,
                                               ASTContext &Context) {
  SourceLocation Loc =
      Context.getSourceManager().getFileLoc(Call->getBeginLoc());
  if (!firstAt(Loc))
    return;
  Check.diag(Loc, "'%0' builds %1 on the meta device, and building it loads "
                  "pretrained weights (through '%2'), which would be left on "
                  "the meta device without data; build that part from its "
                  "config in the constructor (Model(config)) and load the "
                  "whole model with one call, or pass an explicit device map "
                  "to the inner load")
      << Loader << Model << Inner.LoaderName << Call->getSourceRange();
  noteInnerLoad(Inner, Loc);
}

void MetaScopeLoadReporter::noteInnerLoad(const InnerLoad &Inner,
                                          SourceLocation Call) {
  // A load in another translation unit (an external summary) has no
  // location here: the note names the function instead.
  if (Inner.At.isValid())
    Check.diag(Inner.At, "'%0' loads the weights here, in '%1'",
               DiagnosticIDs::Note)
        << Inner.LoaderName << Inner.In;
  else
    Check.diag(Call, "'%0' loads the weights in '%1'", DiagnosticIDs::Note)
        << Inner.LoaderName << Inner.In;
}

} // namespace clang::tidy::metaguard
