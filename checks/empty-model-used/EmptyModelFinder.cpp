//===--- EmptyModelFinder.cpp - metaguard-tidy -----------------*- C++ -*-===//

#include "EmptyModelFinder.h"
#include "utils/analysis/FunctionBodies.h"
#include "utils/analysis/NameList.h"
#include "utils/domain/LibraryCode.h"
#include "utils/domain/MemberModels.h"
#include "utils/domain/ModelProducers.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/StmtCXX.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"

namespace clang::tidy::metaguard {

using namespace emptymodel;

namespace {

/// The origin a fact keeps of a building in F.
BuiltOrigin originOf(const Building &B, const FunctionDecl *F,
                     const SummaryTable &Table) {
  if (B.Inner)
    return *B.Inner;
  BuiltOrigin O;
  O.BuiltAt = Table.refOf(B.At->getBeginLoc());
  O.BuiltIn = displayName(F);
  if (!B.Ambient)
    return O;
  const AmbientDevice::Origin &A = *B.Ambient;
  switch (A.Kind) {
  case AmbientDevice::Source::ScopeGuard:
    O.Scope = EmptyScope::Guard;
    O.ScopeAt = Table.refOf(A.OriginDecl->getLocation());
    O.ScopeName = cast<NamedDecl>(A.OriginDecl)->getNameAsString();
    break;
  case AmbientDevice::Source::ScopeFunction: {
    O.Scope = EmptyScope::ScopeFunction;
    O.ScopeAt = Table.refOf(A.OriginStmt->getBeginLoc());
    const auto *Call = cast<CallExpr>(A.OriginStmt);
    if (const FunctionDecl *Fn = Call->getDirectCallee())
      O.ScopeName = displayName(Fn);
    break;
  }
  case AmbientDevice::Source::DefaultDevice:
    O.Scope = EmptyScope::DefaultDevice;
    O.ScopeAt = A.InnerSetter.isValid()
                    ? Table.refOf(A.InnerSetter)
                    : Table.refOf(A.OriginStmt->getBeginLoc());
    break;
  }
  return O;
}

/// The origin a fact keeps of a gen in F: for a model given memory here,
/// where, and how it was built empty before that (when it was, here).
BuiltOrigin originOf(const Gen &G, const Events &Ev, const CfgReachability &Cfg,
                     const FunctionDecl *F, const SummaryTable &Table) {
  if (G.How.Kind != BuiltModel::Uninitialised || G.How.Inner)
    return originOf(G.How, F, Table);
  const Gen *Before = Ev.emptyBefore(G, Cfg);
  BuiltOrigin O = Before ? originOf(Before->How, F, Table) : BuiltOrigin{};
  O.MemoryAt = Table.refOf(G.How.At->getBeginLoc());
  O.MemoryIn = displayName(F);
  return O;
}

/// Whether Var is declared by a statement of F's outermost block.
bool declaredInOutermostBlock(const VarDecl *Var, const FunctionDecl *F) {
  const auto *Body = dyn_cast_or_null<CompoundStmt>(F->getBody());
  if (!Body)
    return false;
  for (const Stmt *S : Body->body())
    if (const auto *DS = dyn_cast<DeclStmt>(S))
      for (const Decl *D : DS->decls())
        if (D == Var)
          return true;
  return false;
}

} // namespace

//===----------------------------------------------------------------------===//
// The facet: what callers see
//===----------------------------------------------------------------------===//

/// Empty-model facts: the model a function returns, what it does to the
/// models given as arguments, and to the member models of its object.
class EmptyModelFinder::Facet : public SummaryFacetFor<EmptyModelFacts> {
public:
  explicit Facet(EmptyModelFinder &Finder) : Finder(Finder) {}

  bool follows(const FunctionDecl *FD) const override {
    // Library code neither builds the user's models empty nor loads them
    // (the runtime's loaders are known by name).
    return !FD->isDependentContext() && !Finder.Ambient.isMachinery(FD) &&
           !isLibraryFunction(FD);
  }

  void summarise(const FunctionDecl *F, FunctionSummary &Summary,
                 SummaryTable &Table) override {
    ASTContext &Context = Table.context();
    AmbientDevice::InFunction Here =
        Finder.Ambient.inFunction(F, nullptr, Table, Context);
    Events Ev = collectEvents(F, Here, Table, Finder.kinds());
    if (Ev.Gens.empty() && Ev.Kills.empty() && Ev.Uses.empty() &&
        Ev.Returns.empty())
      return;
    const CfgReachability *Cfg =
        Finder.Ambient.cfgs().get(F, F->getBody(), Context);
    if (!Cfg)
      return;
    EmptyModelFacts &Out = Summary.edit<EmptyModelFacts>();
    returns(F, Ev, *Cfg, Table, Out);
    // The parameters and members the events are about, in order.
    llvm::SetVector<const ValueDecl *> Roots;
    for (const Gen &G : Ev.Gens)
      Roots.insert(G.Ref.Root);
    for (const Kill &K : Ev.Kills)
      Roots.insert(K.Ref.Root);
    for (const Use &U : Ev.Uses)
      Roots.insert(U.Ref.Root);
    for (const ValueDecl *Root : Roots)
      if (const auto *Param = dyn_cast<ParmVarDecl>(Root);
          Param && Param->getDeclContext() == F) {
        ModelSlotFacts Slot = slot(F, Param, Ev, *Cfg, Table,
                                   Param->getType()->isReferenceType());
        if (Slot.any())
          Out.Args[Param->getFunctionScopeIndex()] = Slot;
      }
    const auto *Method = dyn_cast<CXXMethodDecl>(F);
    if (!Method || Method->isStatic())
      return;
    for (const ValueDecl *Root : Roots) {
      ModuleRef Member;
      Member.Root = Root;
      if (!isMemberModel(Member, Method))
        continue;
      const auto *Field = cast<FieldDecl>(Root);
      ModelSlotFacts Slot = slot(F, Field, Ev, *Cfg, Table, true);
      ModuleRef Ref;
      Ref.Root = Field;
      if (const Gen *G = Ev.leftAtReturn(Ref, *Cfg)) {
        Slot.Left = G->How.Kind;
        Slot.Origin = originOf(*G, Ev, *Cfg, F, Table);
      }
      if (!Slot.any())
        continue;
      Slot.Member = Field->getNameAsString();
      Out.Members[Field->getFieldIndex()] = Slot;
    }
  }

private:
  /// How the model F returns is built, on some path: an empty one first.
  static void returns(const FunctionDecl *F, const Events &Ev,
                      const CfgReachability &Cfg, const SummaryTable &Table,
                      EmptyModelFacts &Out) {
    for (const Returned &R : Ev.Returns) {
      if (!Cfg.contains(R.S))
        continue;
      const Building *B = R.Built ? &*R.Built : nullptr;
      const Gen *G = nullptr;
      if (!B && R.Ref)
        if ((G = Ev.reachingGen(R.S, *R.Ref, Cfg)))
          B = &G->How;
      // An uninitialised model given as an argument is the caller's.
      if (!B ||
          (B->Kind == BuiltModel::Uninitialised && B->IfEmptyBefore &&
           (!G || !Ev.emptyBefore(*G, Cfg))) ||
          (Out.Returns == BuiltModel::Uninitialised &&
           B->Kind == BuiltModel::CallersDevice) ||
          (Out.Returns == BuiltModel::CallersDevice &&
           B->Kind != BuiltModel::Empty &&
           B->Kind != BuiltModel::Uninitialised))
        continue;
      Out.Returns = B->Kind;
      Out.ReturnsOrigin =
          G ? originOf(*G, Ev, Cfg, F, Table) : originOf(*B, F, Table);
      if (B->Kind == BuiltModel::Empty)
        return;
    }
  }

  /// What F does to the model Root (a parameter or a member) names.
  static ModelSlotFacts slot(const FunctionDecl *F, const ValueDecl *Root,
                             const Events &Ev, const CfgReachability &Cfg,
                             const SummaryTable &Table, bool NewValues) {
    ModelSlotFacts Slot;
    ModuleRef Ref;
    Ref.Root = Root;
    Slot.GivesWeights = Ev.givesWeights(Ref, NewValues, Cfg);
    Slot.Initialises = !Slot.GivesWeights && Ev.initialises(Ref, Cfg);
    auto Concerns = [Root](const ModuleRef &R) {
      return R.Root->getCanonicalDecl() == Root->getCanonicalDecl();
    };
    const Use *U = Ev.useBeforeWeights(Concerns, UseOf::Empty, Cfg);
    Slot.Uses = U != nullptr;
    if (const Use *Uninit =
            Ev.useBeforeWeights(Concerns, UseOf::Uninitialised, Cfg)) {
      Slot.UsesUninitialised = true;
      U = U ? U : Uninit;
    }
    // Through a helper, notes point at the innermost place.
    if (U)
      Slot.Use = U->Via ? *U->Via
                        : ModelUse{Table.refOf(U->S->getBeginLoc()),
                                   U->Function, displayName(F)};
    if (isa<ParmVarDecl>(Root))
      if (const Gen *G = Ev.leftAtReturn(Ref, Cfg);
          G && G->How.Kind == BuiltModel::Uninitialised) {
        Slot.Left = G->How.Kind;
        Slot.Origin = originOf(*G, Ev, Cfg, F, Table);
      }
    return Slot;
  }

  EmptyModelFinder &Finder;
};

//===----------------------------------------------------------------------===//
// The finder
//===----------------------------------------------------------------------===//

EmptyModelFinder::EmptyModelFinder(AmbientDevice &Ambient,
                                   const EmptyModelOptions &Options,
                                   EmptyModelReporter &Reporter,
                                   SummariesFn Summaries)
    : Ambient(Ambient), Reporter(Reporter), Summaries(std::move(Summaries)),
      WeightGivers(Options.WeightGivers), NeedsWeights(Options.NeedsWeights),
      MemoryGivers(Options.MemoryGivers), Initializers(Options.Initializers),
      Writes(option_default::ParameterMutators,
             option_default::IgnoredInPlaceMethods),
      FacetImpl(std::make_unique<Facet>(*this)) {}

EmptyModelFinder::~EmptyModelFinder() = default;

SummaryFacet *EmptyModelFinder::facet() { return FacetImpl.get(); }

void EmptyModelFinder::clear() { Analyzed.clear(); }

bool EmptyModelFinder::givesEmptyModel(const Expr *Call, ASTContext &Context) {
  // Only a function that returns a model, or a constructor or method of a
  // class that keeps models, can: the others are not summarised for this.
  const FunctionDecl *Callee = calledFunction(Call);
  // std::make_unique<Runner>(config) runs the constructor of the user's.
  const CXXConstructExpr *Inner = Ambient.owning().construction(Call);
  if (Inner)
    Callee = Inner->getConstructor();
  const auto *Method = dyn_cast_or_null<CXXMethodDecl>(Callee);
  if (!Callee ||
      !(returnsModel(Callee) || (Method && !Method->isStatic() &&
                                 hasMemberModels(Method->getParent()))))
    return false;
  SummaryTable &Table = Summaries(Context);
  llvm::SmallVector<const FunctionDecl *, 2> Targets;
  if (Inner)
    Targets.push_back(Callee);
  else
    Targets = Table.callTargets(Call);
  for (const FunctionDecl *Target : Targets) {
    if (!Ambient.canEnter(Target))
      continue;
    const FunctionSummary *S = Table.lookup<EmptyModelFacts>(Target);
    if (!S)
      continue;
    const EmptyModelFacts &Facts = S->get<EmptyModelFacts>();
    if (Facts.Returns == BuiltModel::Empty ||
        Facts.Returns == BuiltModel::Uninitialised)
      return true;
    for (const auto &Member : Facts.Members)
      if (Member.second.Left == BuiltModel::Empty ||
          Member.second.Left == BuiltModel::Uninitialised)
        return true;
  }
  return false;
}

void EmptyModelFinder::analyzeFunction(const FunctionDecl *F,
                                       const LambdaExpr *Lambda,
                                       ASTContext &Context) {
  if (!F || !F->getBody() || F->isDependentContext() ||
      !Analyzed.insert(F).second || Ambient.isInsideMachinery(F) ||
      Context.getSourceManager().isInSystemHeader(F->getLocation()))
    return;
  SummaryTable &Table = Summaries(Context);
  AmbientDevice::InFunction Here =
      Ambient.inFunction(F, Lambda, Table, Context);
  Events Ev = collectEvents(F, Here, Table, kinds());
  if (!Ev.buildsEmpty())
    return;
  const CfgReachability *Cfg = Ambient.cfgs().get(F, F->getBody(), Context);
  if (!Cfg)
    return;
  for (const Use &U : Ev.Uses) {
    const Gen *G = Ev.emptyAt(U, *Cfg);
    if (!G)
      continue;
    if (G->How.Kind == BuiltModel::Uninitialised)
      Reporter.uninitialisedModelUsed(U, *G, Ev.emptyBefore(*G, *Cfg), Table);
    else
      Reporter.emptyModelUsed(U, *G, loadFirst(U, *G, F, Here), Table);
  }
}

std::optional<EmptyModelReporter::LoadFirst>
EmptyModelFinder::loadFirst(const Use &U, const Gen &G, const FunctionDecl *F,
                            AmbientDevice::InFunction &Here) {
  // Certain only for a model this function builds from a config it read
  // from a folder it names: that folder holds its weights.
  const auto *Var = dyn_cast<VarDecl>(G.Ref.Root);
  if (!Var || !G.Ref.isRoot() || !U.Ref.isRoot() || G.How.Inner ||
      !G.How.Through.empty() || G.S->getBeginLoc().isMacroID() ||
      U.S->getBeginLoc().isMacroID())
    return std::nullopt;
  // Loading while the meta device is ambient loads nothing.
  const auto *UseExpr = dyn_cast<Expr>(U.S);
  if (!UseExpr || Here.at(UseExpr))
    return std::nullopt;
  const auto *Built = dyn_cast<Expr>(G.How.At);
  const Expr *Config = nullptr;
  if (const auto *Construct = dyn_cast_or_null<CXXConstructExpr>(Built))
    Config = Construct->getNumArgs() == 1 ? Construct->getArg(0) : nullptr;
  else if (const auto *Call = dyn_cast_or_null<CallExpr>(Built))
    Config = Call->getNumArgs() == 1 ? Call->getArg(0) : nullptr;
  if (!Config)
    return std::nullopt;
  Config = ignoreObjectPlumbing(Config);
  if (const auto *Ref = dyn_cast<DeclRefExpr>(Config))
    if (const auto *ConfigVar = dyn_cast<VarDecl>(Ref->getDecl());
        ConfigVar && ConfigVar->hasLocalStorage() && ConfigVar->getInit())
      Config = ignoreObjectPlumbing(ConfigVar->getInit());
  const auto *LoadConfig = dyn_cast<CallExpr>(Config);
  const FunctionDecl *Reader =
      LoadConfig ? LoadConfig->getDirectCallee() : nullptr;
  if (!Reader || qualifiedNameOf(Reader) != "metaguard::load_config" ||
      LoadConfig->getNumArgs() != 1)
    return std::nullopt;
  // The folder must be a variable the use can see: a parameter of F or a
  // local declared in F's outermost block.
  const auto *DirRef =
      dyn_cast<DeclRefExpr>(LoadConfig->getArg(0)->IgnoreParenImpCasts());
  const auto *DirVar = DirRef ? dyn_cast<VarDecl>(DirRef->getDecl()) : nullptr;
  if (!DirVar || DirVar->getDeclContext() != F ||
      (!isa<ParmVarDecl>(DirVar) && !declaredInOutermostBlock(DirVar, F)))
    return std::nullopt;
  // Insert before the statement of the use, a statement of a block.
  const StmtParents &Parents = Ambient.functions().parents();
  const Stmt *Before = U.S;
  while (Before && !isa_and_nonnull<CompoundStmt>(Parents.parent(Before)))
    Before = Parents.parent(Before);
  if (!Before)
    return std::nullopt;
  EmptyModelReporter::LoadFirst Fix;
  Fix.Before = Before;
  Fix.Dir = DirRef;
  Fix.Qualifier = "metaguard::";
  const QualType T = Var->getType().getNonReferenceType();
  Fix.Model = (isModuleClass(T->getAsCXXRecordDecl()) ? "" : "*") +
              Var->getNameAsString();
  return Fix;
}

} // namespace clang::tidy::metaguard
