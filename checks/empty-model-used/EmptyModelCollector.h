//===--- EmptyModelCollector.h - metaguard-tidy ----------------*- C++ -*-===//
//
// The collector of metaguard-empty-model-used: the events of one function
// (EmptyModelEvents.h), statement by statement, with the facts of the
// functions it calls. Building events are collected in
// EmptyModelCollector.cpp, uses, weights and initialisation in
// EmptyModelWeights.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_EMPTY_MODEL_USED_EMPTYMODELCOLLECTOR_H
#define METAGUARD_CHECKS_EMPTY_MODEL_USED_EMPTYMODELCOLLECTOR_H

#include "EmptyModelEvents.h"

#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace clang::tidy::metaguard::emptymodel {

class Collector {
public:
  Collector(const EventKinds &Kinds, const FunctionDecl *F,
            AmbientDevice::InFunction &Here, SummaryTable &Table)
      : Kinds(Kinds), Ambient(Kinds.Ambient), F(F), Here(Here), Table(Table),
        Context(Table.context()) {}

  Events run();

private:
  /// The facts of the functions a call may run, with their names.
  struct TargetFacts {
    std::string Name;
    const EmptyModelFacts *Facts;
  };

  void visit(const Stmt *S);

  // ---- Building -----------------------------------------------------------

  /// How the model a value gives is built, when it is built here or by a
  /// function the value calls.
  std::optional<Building> built(const Expr *Value);

  /// A model built at At: empty when the meta device is ambient there, else
  /// with the caller's device unless a scope of F decides it.
  std::optional<Building> buildingAt(const Expr *At, std::string Through);

  /// What a call hands back, by its callee's facts about how it leaves the
  /// model (Kind, built at Origin).
  std::optional<Building> fromFacts(const Expr *Call, BuiltModel Kind,
                                    const BuiltOrigin &Origin,
                                    const std::string &Name);

  /// with_meta_device(callable): the callable's model, built on meta.
  std::optional<Building> scopeFunctionValue(const CallExpr *Call);

  /// Target gets the value Value (at S): a model built here, members left
  /// built by the constructor it runs, or any other new value.
  void assign(const Expr *S, const ModuleRef &Target, const Expr *Value);

  /// The construction of an object of the user's that is not a module
  /// (Runner r(config), std::make_unique<Runner>(config)).
  const CXXConstructExpr *objectConstruction(const Expr *Value);

  void declaration(const DeclStmt *DS);

  void assignment(const Expr *S, const Expr *Lhs, const Expr *Rhs, bool Plain);

  void returned(const ReturnStmt *Ret);

  // ---- Uses and weights ---------------------------------------------------

  void use(const Stmt *S, const Expr *Model, UseKind Kind,
           llvm::StringRef Function);

  void giveWeights(const Stmt *S, const Expr *Model,
                   KillKind Kind = KillKind::Weights);

  /// A MemoryGivers call: the model has memory but no values after it, if
  /// it was empty before.
  void giveMemory(const CallExpr *Call, const FunctionDecl *Callee);

  /// A write that overwrites a parameter's values (Tensor, the object of a
  /// fill method or the argument of a torch::nn::init function). In a loop
  /// over the parameters() of a module, it initialises that module (all of
  /// them, at the loop). A write to a named tensor (`m->fc->weight`) is
  /// initialisation by hand, tensor by tensor: the check does not count the
  /// tensors, so it takes the whole model as initialised rather than guess.
  void initialisedBy(const Stmt *S, const Expr *Tensor);

  /// The range of the outermost range-for loop over the parameters of Owner
  /// that S is in, which every path evaluates (a model has parameters, so
  /// the loop runs); nullptr when there is none.
  const Stmt *loopOver(const Stmt *S, const ModuleRef &Owner);

  /// A method that initialises the module it is called on: Initializers,
  /// or `apply` with a function.
  bool initialiserMethod(const CXXMemberCallExpr *Call,
                         const CXXMethodDecl *Method);

  static bool isFillMethod(const CXXMethodDecl *Method);

  /// A read of a parameter's data, or of a value computed from it.
  bool parameterRead(const Expr *Call);

  void memberCall(const CXXMemberCallExpr *Call);

  void operatorCall(const CXXOperatorCallExpr *Op);

  void call(const CallExpr *Call);

  void construction(const CXXConstructExpr *Construct);

  /// What the callee does to the models given as its arguments: its facts,
  /// or, for a function of the user's that is not known, that it may give
  /// weights to those it may change. FirstArg: the call's argument bound to
  /// the callee's first parameter.
  void callArguments(const Expr *Call, const FunctionDecl *Callee,
                     unsigned FirstArg);

  /// What a callee's facts about one model it is given (an argument, or a
  /// member of its object) make happen at Call: uses, and memory without
  /// values. Weights are the caller's to decide (every target must agree).
  void slotEvents(const Expr *Call, const ModuleRef &Ref,
                  const ModelSlotFacts &Slot, const std::string &Name);

  /// What a constructor or method does to the member models of its object
  /// (ObjectRef; none for `this`): builds them, gives them weights, uses
  /// them. Whether the callee's facts are known.
  bool applyMembers(const Expr *Call, const CXXMethodDecl *Method,
                    const std::optional<ModuleRef> &ObjectRef, bool Uses);

  // ---- Callees -------------------------------------------------------------

  static llvm::ArrayRef<const Expr *> arguments(const Expr *Call);

  const EmptyModelFacts *factsOf(const FunctionDecl *FD);

  /// The facts of every function Call may run that has them: overrides of
  /// a virtual one too, those only other translation units define included.
  llvm::SmallVector<TargetFacts, 2> targets(const Expr *Call);

  const EventKinds &Kinds;
  AmbientDevice &Ambient;
  const FunctionDecl *F;
  AmbientDevice::InFunction &Here;
  SummaryTable &Table;
  ASTContext &Context;
  Events Ev;
};

} // namespace clang::tidy::metaguard::emptymodel

#endif // METAGUARD_CHECKS_EMPTY_MODEL_USED_EMPTYMODELCOLLECTOR_H
