//===--- ModelFacts.cpp - metaguard-tidy -----------------------*- C++ -*-===//

#include "utils/domain/ModelFacts.h"
#include "utils/summaries/FactJson.h"

namespace clang::tidy::metaguard {

namespace {

constexpr std::pair<DispatchKind, const char *> DispatchNames[] = {
    {DispatchKind::Call, "dispatch"},
    {DispatchKind::Loader, "loader"},
    {DispatchKind::Factory, "factory"},
};

} // namespace

METAGUARD_REGISTER_FACET(ModelFacts);

void ArgumentEffects::add(const ArgumentEffects &O) {
  if (!Moves && !MutatesParameters && !RemovesHooks) {
    At = O.At;
    What = O.What;
    In = O.In;
  }
  if (!NeedsHooks && !NeedsRemovedHooks) {
    NeedsAt = O.NeedsAt;
    NeedsWhat = O.NeedsWhat;
    NeedsIn = O.NeedsIn;
  }
  Moves |= O.Moves;
  MutatesParameters |= O.MutatesParameters;
  RemovesHooks |= O.RemovesHooks;
  NeedsHooks |= O.NeedsHooks;
  NeedsRemovedHooks |= O.NeedsRemovedHooks;
}

bool ModelFacts::same(const ModelFacts &O) const {
  if (ReturnsDispatchedModel != O.ReturnsDispatchedModel ||
      Args.size() != O.Args.size())
    return false;
  for (const auto &[Index, Effects] : Args) {
    auto It = O.Args.find(Index);
    if (It == O.Args.end() || !It->second.sameEffects(Effects))
      return false;
  }
  return true;
}

void ModelFacts::write(FactJson &J) const {
  J["returns_dispatched_model"] = ReturnsDispatchedModel;
  if (DispatchedAt.valid())
    J["dispatched_at"] = refToJson(DispatchedAt);
  if (!DispatchChain.empty()) {
    FactJson Chain = FactJson::array();
    for (const DispatchStep &Step : DispatchChain) {
      FactJson StepJson = FactJson::object();
      StepJson["how"] = enumName(Step.How, DispatchNames).str();
      StepJson["with"] = Step.With;
      StepJson["at"] = refToJson(Step.At);
      Chain.push_back(std::move(StepJson));
    }
    J["dispatch_chain"] = std::move(Chain);
  }
  FactJson ArgsJson = FactJson::array();
  for (const auto &[Index, Effects] : Args) {
    FactJson A = FactJson::object();
    A["index"] = Index;
    A["moves"] = Effects.Moves;
    A["mutates_parameters"] = Effects.MutatesParameters;
    A["removes_hooks"] = Effects.RemovesHooks;
    if (Effects.At.valid())
      A["at"] = refToJson(Effects.At);
    if (!Effects.What.empty())
      A["what"] = Effects.What;
    if (!Effects.In.empty())
      A["in"] = Effects.In;
    // Written only when set, as files from before these facts lack them.
    if (Effects.NeedsHooks || Effects.NeedsRemovedHooks) {
      A["needs_hooks"] = Effects.NeedsHooks;
      A["needs_removed_hooks"] = Effects.NeedsRemovedHooks;
      if (Effects.NeedsAt.valid())
        A["needs_at"] = refToJson(Effects.NeedsAt);
      A["needs_what"] = Effects.NeedsWhat;
      A["needs_in"] = Effects.NeedsIn;
    }
    ArgsJson.push_back(std::move(A));
  }
  J["args"] = std::move(ArgsJson);
}

void ModelFacts::read(FactReader &R) {
  R.boolean("returns_dispatched_model", ReturnsDispatchedModel);
  R.ref("dispatched_at", DispatchedAt);
  R.objects("dispatch_chain", [&](FactReader &Item) {
    DispatchStep Step;
    Item.enumeration("how", Step.How, DispatchNames);
    Item.string("with", Step.With);
    Item.ref("at", Step.At);
    DispatchChain.push_back(std::move(Step));
  });
  R.objects("args", [&](FactReader &Item) {
    unsigned Index = 0;
    ArgumentEffects Effects;
    Item.unsignedNumber("index", Index, /*Required=*/true);
    Item.boolean("moves", Effects.Moves);
    Item.boolean("mutates_parameters", Effects.MutatesParameters);
    Item.boolean("removes_hooks", Effects.RemovesHooks);
    Item.ref("at", Effects.At);
    Item.string("what", Effects.What);
    Item.string("in", Effects.In);
    Item.boolean("needs_hooks", Effects.NeedsHooks);
    Item.boolean("needs_removed_hooks", Effects.NeedsRemovedHooks);
    Item.ref("needs_at", Effects.NeedsAt);
    Item.string("needs_what", Effects.NeedsWhat);
    Item.string("needs_in", Effects.NeedsIn);
    if (Item.ok() && Effects.any())
      Args[Index] = Effects;
  });
}

std::vector<MergeRule> ModelFacts::mergeRules() {
  MergeRule Returns;
  Returns.Key = "returns_dispatched_model";
  Returns.Details = {"dispatched_at", "dispatch_chain"};
  MergeRule ArgsRule;
  ArgsRule.Key = "args";
  ArgsRule.How = MergeRule::Kind::Each;
  ArgsRule.By = "index";
  for (const char *Fact : {"moves", "mutates_parameters", "removes_hooks"}) {
    MergeRule Item;
    Item.Key = Fact;
    ArgsRule.Items.push_back(Item);
  }
  for (const char *Fact : {"needs_hooks", "needs_removed_hooks"}) {
    MergeRule Item;
    Item.Key = Fact;
    Item.Details = {"needs_at", "needs_what", "needs_in"};
    ArgsRule.Items.push_back(Item);
  }
  return {Returns, ArgsRule};
}

} // namespace clang::tidy::metaguard
