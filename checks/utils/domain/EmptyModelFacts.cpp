//===--- EmptyModelFacts.cpp - metaguard-tidy ------------------*- C++ -*-===//

#include "utils/domain/EmptyModelFacts.h"
#include "utils/summaries/FactJson.h"

namespace clang::tidy::metaguard {

namespace {

constexpr std::pair<BuiltModel, const char *> BuiltNames[] = {
    {BuiltModel::None, "none"},
    {BuiltModel::Empty, "empty"},
    {BuiltModel::CallersDevice, "callers_device"},
    {BuiltModel::Unknown, "unknown"},
    {BuiltModel::Uninitialised, "uninitialised"},
};

constexpr std::pair<EmptyScope, const char *> ScopeNames[] = {
    {EmptyScope::Guard, "guard"},
    {EmptyScope::ScopeFunction, "scope_function"},
    {EmptyScope::DefaultDevice, "default_device"},
};

/// The keys of an origin, each with Prefix ("returned_" or none).
void writeOrigin(FactJson &J, const BuiltOrigin &O, BuiltModel Kind,
                 const std::string &Prefix) {
  if (O.BuiltAt.valid())
    J[Prefix + "built_at"] = refToJson(O.BuiltAt);
  if (!O.BuiltIn.empty())
    J[Prefix + "built_in"] = O.BuiltIn;
  if (O.MemoryAt.valid())
    J[Prefix + "memory_at"] = refToJson(O.MemoryAt);
  if (!O.MemoryIn.empty())
    J[Prefix + "memory_in"] = O.MemoryIn;
  if (Kind != BuiltModel::Empty && !O.ScopeAt.valid())
    return;
  J[Prefix + "scope"] = enumName(O.Scope, ScopeNames).str();
  if (O.ScopeAt.valid())
    J[Prefix + "scope_at"] = refToJson(O.ScopeAt);
  if (!O.ScopeName.empty())
    J[Prefix + "scope_name"] = O.ScopeName;
}

void readOrigin(FactReader &R, BuiltOrigin &O, const std::string &Prefix) {
  R.ref((Prefix + "built_at").c_str(), O.BuiltAt);
  R.string((Prefix + "built_in").c_str(), O.BuiltIn);
  R.enumeration((Prefix + "scope").c_str(), O.Scope, ScopeNames);
  R.ref((Prefix + "scope_at").c_str(), O.ScopeAt);
  R.string((Prefix + "scope_name").c_str(), O.ScopeName);
  R.ref((Prefix + "memory_at").c_str(), O.MemoryAt);
  R.string((Prefix + "memory_in").c_str(), O.MemoryIn);
}

/// The keys of a slot (an argument or a member) shared by both lists.
void writeSlot(FactJson &J, const ModelSlotFacts &S) {
  J["gives_weights"] = S.GivesWeights;
  J["uses"] = S.Uses;
  // Written only when they hold: facts files without them mean the same.
  if (S.Initialises)
    J["initialises"] = true;
  if (S.UsesUninitialised)
    J["uses_uninitialised"] = true;
  if (!S.Uses && !S.UsesUninitialised)
    return;
  if (S.Use.At.valid())
    J["use_at"] = refToJson(S.Use.At);
  if (!S.Use.What.empty())
    J["use_what"] = S.Use.What;
  if (!S.Use.In.empty())
    J["use_in"] = S.Use.In;
}

void readSlot(FactReader &R, ModelSlotFacts &S) {
  R.boolean("gives_weights", S.GivesWeights);
  R.boolean("uses", S.Uses);
  R.boolean("initialises", S.Initialises);
  R.boolean("uses_uninitialised", S.UsesUninitialised);
  R.ref("use_at", S.Use.At);
  R.string("use_what", S.Use.What);
  R.string("use_in", S.Use.In);
}

/// The rule of a "how is it left" fact, with the keys of its origin.
MergeRule builtRule(const std::string &Key, const std::string &Prefix) {
  MergeRule Rule = MergeRule::agree(Key, "none", "unknown");
  for (const char *Detail : {"built_at", "built_in", "scope", "scope_at",
                             "scope_name", "memory_at", "memory_in"})
    Rule.Details.push_back(Prefix + Detail);
  return Rule;
}

/// The rules of a slot's yes/no facts.
std::vector<MergeRule> slotRules() {
  MergeRule Gives;
  Gives.Key = "gives_weights";
  MergeRule Initialises;
  Initialises.Key = "initialises";
  MergeRule Uses;
  Uses.Key = "uses";
  Uses.Details = {"use_at", "use_what", "use_in"};
  MergeRule UsesUninitialised;
  UsesUninitialised.Key = "uses_uninitialised";
  UsesUninitialised.Details = Uses.Details;
  return {Gives, Initialises, Uses, UsesUninitialised};
}

} // namespace

METAGUARD_REGISTER_FACET(EmptyModelFacts);

bool EmptyModelFacts::same(const EmptyModelFacts &O) const {
  auto SameSlots = [](const std::map<unsigned, ModelSlotFacts> &A,
                      const std::map<unsigned, ModelSlotFacts> &B) {
    if (A.size() != B.size())
      return false;
    for (const auto &[Index, Slot] : A) {
      auto It = B.find(Index);
      if (It == B.end() || !It->second.sameFacts(Slot))
        return false;
    }
    return true;
  };
  return Returns == O.Returns && SameSlots(Args, O.Args) &&
         SameSlots(Members, O.Members);
}

void EmptyModelFacts::write(FactJson &J) const {
  J["returns_model"] = enumName(Returns, BuiltNames).str();
  if (Returns != BuiltModel::None)
    writeOrigin(J, ReturnsOrigin, Returns, "returned_");
  FactJson ArgsJson = FactJson::array();
  for (const auto &[Index, Slot] : Args) {
    FactJson A = FactJson::object();
    A["index"] = Index;
    if (Slot.Left != BuiltModel::None) {
      A["left"] = enumName(Slot.Left, BuiltNames).str();
      writeOrigin(A, Slot.Origin, Slot.Left, "");
    }
    writeSlot(A, Slot);
    ArgsJson.push_back(std::move(A));
  }
  J["model_args"] = std::move(ArgsJson);
  FactJson MembersJson = FactJson::array();
  for (const auto &[Index, Slot] : Members) {
    FactJson M = FactJson::object();
    M["field"] = Index;
    M["member"] = Slot.Member;
    M["left"] = enumName(Slot.Left, BuiltNames).str();
    if (Slot.Left != BuiltModel::None)
      writeOrigin(M, Slot.Origin, Slot.Left, "");
    writeSlot(M, Slot);
    MembersJson.push_back(std::move(M));
  }
  J["member_models"] = std::move(MembersJson);
}

void EmptyModelFacts::read(FactReader &R) {
  R.enumeration("returns_model", Returns, BuiltNames);
  readOrigin(R, ReturnsOrigin, "returned_");
  R.objects("model_args", [&](FactReader &Item) {
    unsigned Index = 0;
    ModelSlotFacts Slot;
    Item.unsignedNumber("index", Index, /*Required=*/true);
    Item.enumeration("left", Slot.Left, BuiltNames);
    readOrigin(Item, Slot.Origin, "");
    readSlot(Item, Slot);
    if (Item.ok() && Slot.any())
      Args[Index] = Slot;
  });
  R.objects("member_models", [&](FactReader &Item) {
    unsigned Index = 0;
    ModelSlotFacts Slot;
    Item.unsignedNumber("field", Index, /*Required=*/true);
    Item.string("member", Slot.Member);
    Item.enumeration("left", Slot.Left, BuiltNames);
    readOrigin(Item, Slot.Origin, "");
    readSlot(Item, Slot);
    if (Item.ok() && Slot.any())
      Members[Index] = Slot;
  });
}

std::vector<MergeRule> EmptyModelFacts::mergeRules() {
  MergeRule ArgsRule;
  ArgsRule.Key = "model_args";
  ArgsRule.How = MergeRule::Kind::Each;
  ArgsRule.By = "index";
  ArgsRule.Items = slotRules();
  ArgsRule.Items.insert(ArgsRule.Items.begin(), builtRule("left", ""));
  MergeRule MembersRule;
  MembersRule.Key = "member_models";
  MembersRule.How = MergeRule::Kind::Each;
  MembersRule.By = "field";
  MembersRule.Items = slotRules();
  MembersRule.Items.insert(MembersRule.Items.begin(), builtRule("left", ""));
  return {builtRule("returns_model", "returned_"), ArgsRule, MembersRule};
}

} // namespace clang::tidy::metaguard
