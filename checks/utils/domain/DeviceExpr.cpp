//===--- DeviceExpr.cpp - metaguard-tidy -----------------------*- C++ -*-===//

#include "utils/domain/DeviceExpr.h"
#include "utils/analysis/ExprPlumbing.h"
#include "utils/analysis/FunctionBodies.h"
#include "utils/analysis/LocalVariables.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"
#include "clang/AST/ExprCXX.h"
#include "clang/Basic/SourceManager.h"
#include "llvm/ADT/STLExtras.h"

#include <optional>

namespace clang::tidy::metaguard {

namespace {

constexpr unsigned MaxVariableHops = 8;

DeviceKind classify(const Expr *E, const ASTContext *Ctx, unsigned Hops);

DeviceKind classifyEnumerator(const EnumConstantDecl *ECD) {
  const auto *Enum = dyn_cast<EnumDecl>(ECD->getDeclContext());
  if (!Enum || Enum->getName() != "DeviceType")
    return DeviceKind::Unknown;
  return ECD->getName() == "Meta" ? DeviceKind::Meta : DeviceKind::NonMeta;
}

/// The DeviceType enumeration T is, or nullptr.
const EnumDecl *deviceTypeEnum(QualType T) {
  // getAsTagDecl is spelled the same on every LLVM major; the definition
  // holds the enumerators.
  const auto *Enum = dyn_cast_or_null<EnumDecl>(T->getAsTagDecl());
  if (Enum)
    Enum = Enum->getDefinition();
  return Enum && Enum->getIdentifier() && Enum->getName() == "DeviceType"
             ? Enum
             : nullptr;
}

/// The kind of the string a constant pointer points into: a string literal,
/// read from the offset the pointer has.
std::optional<DeviceKind> classifyStringPointer(const APValue &Value) {
  if (!Value.isLValue() || Value.isNullPointer())
    return std::nullopt;
  const auto *Base = Value.getLValueBase().dyn_cast<const Expr *>();
  const auto *Literal = dyn_cast_or_null<StringLiteral>(Base);
  if (!Literal || Literal->getCharByteWidth() != 1)
    return std::nullopt;
  uint64_t Offset = Value.getLValueOffset().getQuantity();
  llvm::StringRef Text = Literal->getString();
  if (Offset > Text.size())
    return std::nullopt;
  return classifyDeviceString(Text.drop_front(Offset));
}

/// The kind of E's value when the compiler can compute it (Clang's constant
/// evaluator, as for a constant expression): a DeviceType value or a string
/// pointer given by constexpr and const variables, constexpr functions and
/// conditionals with a constant condition. nullopt when E has another type
/// (a torch::Device or std::string is looked into by its construction) or
/// its value is not constant.
std::optional<DeviceKind> evaluateConstant(const Expr *E,
                                           const ASTContext &Ctx) {
  if (E->isValueDependent() || E->isTypeDependent())
    return std::nullopt;
  QualType T = E->getType();
  const EnumDecl *Enum = deviceTypeEnum(T);
  bool IsString = T->isPointerType() && T->getPointeeType()->isCharType();
  if (!Enum && !IsString)
    return std::nullopt;
  Expr::EvalResult Result;
  if (!E->EvaluateAsRValue(Result, Ctx) || Result.HasSideEffects)
    return std::nullopt;
  if (IsString)
    return classifyStringPointer(Result.Val);
  if (!Result.Val.isInt())
    return std::nullopt;
  for (const EnumConstantDecl *ECD : Enum->enumerators())
    if (llvm::APSInt::isSameValue(ECD->getInitVal(), Result.Val.getInt()))
      return classifyEnumerator(ECD);
  return DeviceKind::Unknown; // A value no enumerator has.
}

/// The kind of a local variable that is not const: the kind every value it
/// is given has (its initialiser and each plain assignment), provided
/// nothing else may change it. Default-constructed (an empty std::string)
/// it counts only its assignments.
DeviceKind classifyLocalVariable(const VarDecl *VD, const ASTContext *Ctx,
                                 unsigned Hops) {
  const auto *F = dyn_cast_or_null<FunctionDecl>(VD->getDeclContext());
  if (!F || !F->getBody() || VD->getType()->isReferenceType())
    return DeviceKind::Unknown;
  std::optional<DeviceKind> Kind;
  auto Add = [&](DeviceKind K) {
    if (Kind && *Kind != K)
      K = DeviceKind::Unknown;
    Kind = K;
    return K != DeviceKind::Unknown;
  };
  if (const Expr *Init = VD->getInit()) {
    const auto *Construct = dyn_cast<CXXConstructExpr>(Init->IgnoreImplicit());
    const bool DefaultConstructed = Construct && Construct->getNumArgs() == 0;
    if (!DefaultConstructed && !Add(classify(Init, Ctx, Hops + 1)))
      return DeviceKind::Unknown;
  }
  // Every assignment gives the same kind, and nothing else may change it.
  if (!forEachAssignment(VD, [&](const Expr *Assigned) {
        return Add(classify(Assigned, Ctx, Hops + 1));
      }))
    return DeviceKind::Unknown;
  return Kind ? *Kind : DeviceKind::Unknown;
}

/// The kind every return statement of a helper gives, when they agree.
DeviceKind classifyReturned(const FunctionDecl *Callee, const ASTContext *Ctx,
                            unsigned Hops) {
  const FunctionDecl *Def = definitionWithBody(Callee);
  if (!Def || Hops >= MaxVariableHops)
    return DeviceKind::Unknown;
  std::optional<DeviceKind> Kind;
  forEachEvaluatedStmt(Def, [&](const Stmt *S) {
    const auto *Ret = dyn_cast<ReturnStmt>(S);
    if (!Ret)
      return;
    DeviceKind K = classify(Ret->getRetValue(), Ctx, Hops + 1);
    Kind = Kind && *Kind != K ? DeviceKind::Unknown : K;
  });
  return Kind ? *Kind : DeviceKind::Unknown;
}

DeviceKind classifyVariable(const VarDecl *VD, const ASTContext *Ctx,
                            unsigned Hops) {
  if (Hops >= MaxVariableHops)
    return DeviceKind::Unknown;
  QualType T = VD->getType();
  bool IsConst =
      VD->isConstexpr() || T.isConstQualified() ||
      (T->isReferenceType() && T->getPointeeType().isConstQualified());
  if (isa<ParmVarDecl>(VD))
    return DeviceKind::Unknown;
  if (!IsConst)
    return VD->hasLocalStorage() ? classifyLocalVariable(VD, Ctx, Hops)
                                 : DeviceKind::Unknown;
  const VarDecl *Def = VD->getDefinition();
  const Expr *Init = Def ? Def->getInit() : VD->getAnyInitializer();
  if (!Init)
    Init = VD->getAnyInitializer();
  if (!Init)
    return DeviceKind::Unknown;
  return classify(Init, Ctx, Hops + 1);
}

DeviceKind classify(const Expr *E, const ASTContext *Ctx, unsigned Hops) {
  if (!E)
    return DeviceKind::Unknown;
  E = E->IgnoreParenImpCasts();
  if (Ctx)
    if (std::optional<DeviceKind> Kind = evaluateConstant(E, *Ctx))
      return *Kind;
  if (const auto *Default = dyn_cast<CXXDefaultArgExpr>(E))
    return classify(Default->getExpr(), Ctx, Hops);
  if (const auto *Materialize = dyn_cast<MaterializeTemporaryExpr>(E))
    return classify(Materialize->getSubExpr(), Ctx, Hops);
  if (const auto *Bind = dyn_cast<CXXBindTemporaryExpr>(E))
    return classify(Bind->getSubExpr(), Ctx, Hops);
  if (const auto *Cleanups = dyn_cast<ExprWithCleanups>(E))
    return classify(Cleanups->getSubExpr(), Ctx, Hops);
  if (const auto *Cast = dyn_cast<CastExpr>(E))
    return classify(Cast->getSubExpr(), Ctx, Hops);
  if (const auto *Literal = dyn_cast<StringLiteral>(E))
    return classifyDeviceString(Literal->getString());
  if (const auto *UDL = dyn_cast<UserDefinedLiteral>(E)) {
    if (UDL->getLiteralOperatorKind() == UserDefinedLiteral::LOK_String)
      if (const Expr *Cooked = UDL->getCookedLiteral())
        return classify(Cooked, Ctx, Hops);
    return DeviceKind::Unknown;
  }
  if (const auto *Construct = dyn_cast<CXXConstructExpr>(E)) {
    // torch::Device(kMeta), torch::Device("meta"), Device(kCUDA, 0),
    // std::string("meta"), and copies of any of these.
    if (Construct->getNumArgs() == 0)
      return DeviceKind::Unknown;
    return classify(Construct->getArg(0), Ctx, Hops);
  }
  if (const auto *List = dyn_cast<InitListExpr>(E)) {
    if (List->getNumInits() == 0)
      return DeviceKind::Unknown;
    return classify(List->getInit(0), Ctx, Hops);
  }
  if (const auto *Ref = dyn_cast<DeclRefExpr>(E)) {
    if (const auto *ECD = dyn_cast<EnumConstantDecl>(Ref->getDecl()))
      return classifyEnumerator(ECD);
    if (const auto *VD = dyn_cast<VarDecl>(Ref->getDecl()))
      return classifyVariable(VD, Ctx, Hops);
    return DeviceKind::Unknown;
  }
  if (const auto *Member = dyn_cast<MemberExpr>(E)) {
    // A static data member: Devices::kEmpty.
    if (const auto *VD = dyn_cast<VarDecl>(Member->getMemberDecl()))
      return classifyVariable(VD, Ctx, Hops);
    return DeviceKind::Unknown;
  }
  if (const auto *Cond = dyn_cast<AbstractConditionalOperator>(E)) {
    // A constant condition picks its branch, as the compiler does; a
    // torch::Device or std::string built in each branch is looked into.
    bool Taken = false;
    const Expr *Condition = Cond->getCond();
    if (Ctx && isa<ConditionalOperator>(Cond) &&
        !Condition->isValueDependent() &&
        Condition->EvaluateAsBooleanCondition(Taken, *Ctx))
      return classify(Taken ? Cond->getTrueExpr() : Cond->getFalseExpr(), Ctx,
                      Hops);
    DeviceKind True = classify(Cond->getTrueExpr(), Ctx, Hops);
    DeviceKind False = classify(Cond->getFalseExpr(), Ctx, Hops);
    return True == False ? True : DeviceKind::Unknown;
  }
  // A helper of the user's that returns a constant device: every return
  // statement gives the same kind.
  if (const auto *Call = dyn_cast<CallExpr>(E);
      Call && !isa<CXXOperatorCallExpr>(E)) {
    const FunctionDecl *Callee = Call->getDirectCallee();
    const auto *Method = dyn_cast_or_null<CXXMethodDecl>(Callee);
    if (Callee && (!Method || Method->isStatic()) &&
        !Callee->getASTContext().getSourceManager().isInSystemHeader(
            Callee->getLocation()))
      return classifyReturned(Callee, Ctx, Hops);
  }
  return DeviceKind::Unknown;
}

// The device types LibTorch parses besides "meta" (c10::DeviceType's names).
constexpr llvm::StringLiteral NonMetaDeviceTypes[] = {
    "cpu",    "cuda",   "mps",  "xpu",    "xla",   "hip",          "ipu",
    "hpu",    "ve",     "lazy", "vulkan", "mtia",  "ideep",        "mkldnn",
    "opengl", "opencl", "fpga", "maia",   "metal", "privateuseone"};

} // namespace

DeviceKind classifyDeviceString(llvm::StringRef Text) {
  llvm::StringRef Type = Text.trim();
  llvm::StringRef Index;
  std::tie(Type, Index) = Type.split(':');
  if (!Index.empty() &&
      Index.find_first_not_of("0123456789") != llvm::StringRef::npos)
    return DeviceKind::Unknown;
  if (Type == "meta")
    return DeviceKind::Meta;
  return llvm::is_contained(NonMetaDeviceTypes, Type) ? DeviceKind::NonMeta
                                                      : DeviceKind::Unknown;
}

DeviceKind classifyDeviceExpr(const Expr *E, const ASTContext &Context) {
  return classify(E, &Context, 0);
}

namespace {

/// A braced map reaches its constructor through a std::initializer_list.
const Expr *stripMapExpr(const Expr *E) {
  ExprPlumbing Map;
  Map.InitializerLists = true;
  return ignoreExprPlumbing(E, Map);
}

/// A placement that is a known device (a "disk" string is Unknown).
bool isDevicePlacement(const Expr *E) {
  return classify(E, nullptr, 0) != DeviceKind::Unknown;
}

/// Whether Entry is a map entry written `{"prefix", dev}` (or constructed
/// from those two) whose placement is a known device, not "disk".
bool isInMemoryEntry(const Expr *Entry) {
  Entry = stripMapExpr(Entry);
  const Expr *Key = nullptr, *Value = nullptr;
  if (const auto *List = dyn_cast_or_null<InitListExpr>(Entry)) {
    if (List->getNumInits() != 2)
      return false;
    Key = List->getInit(0);
    Value = List->getInit(1);
  } else if (const auto *Construct =
                 dyn_cast_or_null<CXXConstructExpr>(Entry)) {
    if (Construct->getNumArgs() != 2)
      return false;
    Key = Construct->getArg(0);
    Value = Construct->getArg(1);
  } else {
    return false;
  }
  const auto *KeyText =
      dyn_cast<StringLiteral>(stripMapExpr(Key)->IgnoreParenImpCasts());
  if (const auto *C = dyn_cast<CXXConstructExpr>(stripMapExpr(Key));
      C && C->getNumArgs() >= 1)
    KeyText = dyn_cast<StringLiteral>(C->getArg(0)->IgnoreParenImpCasts());
  return KeyText && isDevicePlacement(Value);
}

/// A braced map whose entries all keep their weights in memory: the map's
/// own list, or the initializer_list array inside it.
bool isInMemoryList(const InitListExpr *List, unsigned Depth) {
  if (List->getNumInits() == 0)
    return false;
  if (llvm::all_of(List->inits(),
                   [](const Expr *Entry) { return isInMemoryEntry(Entry); }))
    return true;
  if (List->getNumInits() != 1 || Depth > 2)
    return false;
  const auto *Inner =
      dyn_cast_or_null<InitListExpr>(stripMapExpr(List->getInit(0)));
  return Inner && isInMemoryList(Inner, Depth + 1);
}

} // namespace

/// The value the constructor In gives the data member Member names
/// (`dev_(std::move(d))`), when its body leaves that member as it is; or
/// nullptr.
static const Expr *memberValueInConstructor(const MemberExpr *Member,
                                            const FunctionDecl *In) {
  const auto *Ctor = dyn_cast_or_null<CXXConstructorDecl>(In);
  const auto *Field = dyn_cast<FieldDecl>(Member->getMemberDecl());
  if (!Ctor || !Field ||
      !isa<CXXThisExpr>(Member->getBase()->IgnoreParenImpCasts()) ||
      Field->getParent() != Ctor->getParent())
    return nullptr;
  for (const CXXCtorInitializer *Init : Ctor->inits())
    if (Init->isWritten() && Init->getMember() == Field)
      return constructorKeepsMember(Ctor, Field) ? Init->getInit() : nullptr;
  return nullptr;
}

/// Whether Call is std::move or std::forward (which pass their argument on).
static bool isMoveOrForward(const CallExpr *Call) {
  const FunctionDecl *Callee = Call->getDirectCallee();
  return Callee && Call->getNumArgs() == 1 && Callee->isInStdNamespace() &&
         Callee->getIdentifier() &&
         (Callee->getName() == "move" || Callee->getName() == "forward");
}

const ParmVarDecl *deviceParameter(const Expr *E, const FunctionDecl *In) {
  ExprPlumbing What;
  What.Copies = ExprPlumbing::CopyMoves::AnyArguments;
  for (unsigned Steps = 0; E && Steps < 16; ++Steps) {
    E = ignoreExprPlumbing(E, What);
    if (const auto *Ref = dyn_cast<DeclRefExpr>(E)) {
      if (const auto *P = dyn_cast<ParmVarDecl>(Ref->getDecl()))
        return P;
      // A local copy that nothing changes holds what it was copied from.
      const auto *Local = dyn_cast<VarDecl>(Ref->getDecl());
      if (!Local || !Local->hasLocalStorage() ||
          Local->getType()->isReferenceType() || !keepsItsInitialiser(Local))
        return nullptr;
      E = Local->getInit();
    } else if (const auto *Member = dyn_cast<MemberExpr>(E)) {
      E = memberValueInConstructor(Member, In);
    } else if (const auto *Call = dyn_cast<CallExpr>(E);
               Call && isMoveOrForward(Call)) {
      E = Call->getArg(0);
    } else if (const auto *Cast = dyn_cast<ExplicitCastExpr>(E)) {
      // A device keeps its value through explicit casts and conversions
      // too: std::string(d), torch::Device(d).
      E = Cast->getSubExpr();
    } else if (const auto *Construct = dyn_cast<CXXConstructExpr>(E);
               Construct && Construct->getNumArgs() >= 1) {
      E = Construct->getArg(0);
    } else {
      return nullptr;
    }
  }
  return nullptr;
}

bool isInMemoryDeviceMap(const Expr *E) {
  E = stripMapExpr(E);
  if (const auto *Designated = dyn_cast_or_null<DesignatedInitExpr>(E))
    E = stripMapExpr(Designated->getInit());
  if (!E)
    return false;
  if (const auto *Call = dyn_cast<CallExpr>(E)) {
    const auto *Method =
        dyn_cast_or_null<CXXMethodDecl>(Call->getDirectCallee());
    if (!Method || !Method->isStatic() || !Method->getIdentifier() ||
        Method->getName() != "on" || Call->getNumArgs() != 1)
      return false;
    const CXXRecordDecl *RD = Method->getParent();
    return RD->getIdentifier() && RD->getName() == "DeviceMap" &&
           isDevicePlacement(Call->getArg(0));
  }
  if (const auto *List = dyn_cast<InitListExpr>(E))
    return isInMemoryList(List, 0);
  return false;
}

} // namespace clang::tidy::metaguard
