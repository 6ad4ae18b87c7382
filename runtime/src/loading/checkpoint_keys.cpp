#include "loading/checkpoint_keys.h"

#include <algorithm>

namespace metaguard::detail {
namespace {

bool matches_any(const std::vector<std::regex> &patterns,
                 const std::string &name) {
  return std::any_of(
      patterns.begin(), patterns.end(),
      [&](const std::regex &re) { return std::regex_search(name, re); });
}

bool starts_with(const std::string &name, const std::string &prefix) {
  return name.size() > prefix.size() &&
         name.compare(0, prefix.size(), prefix) == 0 &&
         name[prefix.size()] == '.';
}

// How the model's names and the checkpoint's differ by the base prefix.
enum class PrefixMode { Same, Add, Strip };

struct KeyRule {
  PrefixMode mode = PrefixMode::Same;
  std::string prefix;

  std::string key_of(const std::string &name) const {
    if (mode == PrefixMode::Add && starts_with(name, prefix))
      return name.substr(prefix.size() + 1);
    if (mode == PrefixMode::Strip)
      return prefix + "." + name;
    return name;
  }
};

// transformers' rule: a model that has the base model as a sub-module and a
// checkpoint without it (a base model's) drops the prefix from its names; a
// base model meeting a checkpoint with the prefix (a model with a head)
// adds it.
KeyRule key_rule(const std::string &prefix,
                 const std::vector<std::string> &model_names,
                 const CheckpointReader &checkpoint) {
  if (prefix.empty())
    return {};
  auto has = [&](const std::vector<std::string> &names) {
    return std::any_of(names.begin(), names.end(), [&](const std::string &n) {
      return starts_with(n, prefix);
    });
  };
  const bool model_has = has(model_names),
             checkpoint_has = has(checkpoint.names());
  if (model_has && !checkpoint_has)
    return {PrefixMode::Add, prefix};
  if (!model_has && checkpoint_has)
    return {PrefixMode::Strip, prefix};
  return {};
}

// The key each member of a tie group (a source and the targets tied to it)
// is read from, as transformers' tie_weights decides it during
// from_pretrained: the source's key when the checkpoint has it, else the
// first target's that it has (the tie goes the other way: the source takes
// the target's values). A group of which the checkpoint has nothing is left
// out: its members are missing.
std::map<std::string, std::string> tied_sources(const TiedWeights &tied, const KeyRule &rule,
                                                const CheckpointReader &checkpoint) {
  std::map<std::string, std::vector<std::string>> groups; // source -> targets
  for (const auto &[target, source] : tied)
    groups[source].push_back(target);
  std::map<std::string, std::string> sources;
  for (const auto &[source, targets] : groups) {
    std::string key = rule.key_of(source);
    if (!checkpoint.contains(key)) {
      const auto present = std::find_if(targets.begin(), targets.end(), [&](const std::string &t) {
        return checkpoint.contains(rule.key_of(t));
      });
      if (present == targets.end())
        continue;
      key = rule.key_of(*present);
    }
    sources.emplace(source, key);
    for (const auto &target : targets)
      sources.emplace(target, key);
  }
  return sources;
}

} // namespace

CheckpointKeys::CheckpointKeys(const torch::nn::Module &module,
                               const CheckpointReader &checkpoint) {
  const Declarations declared = declarations_of(module);
  std::vector<std::string>
      names; // persistent tensors, the ones a checkpoint holds
  for (const auto &item : module.named_parameters(/*recurse=*/true))
    if (item.value().defined())
      names.push_back(item.key());
  for (const auto &item : module.named_buffers(/*recurse=*/true))
    if (item.value().defined() && !declared.non_persistent.count(item.key()))
      names.push_back(item.key());

  const KeyRule rule = key_rule(declared.base_model_prefix, names, checkpoint);
  if (rule.mode == PrefixMode::Add)
    prefix_note_ =
        "the checkpoint is of a base model: its keys were read under '" +
        rule.prefix + ".'";
  else if (rule.mode == PrefixMode::Strip)
    prefix_note_ = "the checkpoint is of a model with a head: keys under '" +
                   rule.prefix + ".' were read without that prefix";

  std::set<std::string> used;
  const std::set<std::string> persistent(names.begin(), names.end());
  for (const auto &[name, key] : tied_sources(declared.tied, rule, checkpoint)) {
    if (!persistent.count(name))
      continue;
    sources_.emplace(name, key);
    used.insert(key);
    // A copy of a tied target in the checkpoint is read only when its tie
    // is broken (untie); until then it is no surprise.
    used.insert(rule.key_of(name));
  }
  for (const auto &name : names) {
    if (sources_.count(name))
      continue;
    const std::string own = rule.key_of(name);
    if (checkpoint.contains(own)) {
      sources_.emplace(name, own);
      used.insert(own);
    } else if (!matches_any(declared.ignore_missing, name)) {
      missing_.push_back(name);
    }
  }
  // Compared with the key the group reads, which is a first target's when
  // the source is missing: transformers ties the group the other way and
  // then breaks away every other target whose own copy differs.
  for (const auto &[target, source] : declared.tied) {
    const std::string own = rule.key_of(target);
    const auto read = sources_.find(target);
    if (read != sources_.end() && read->second != own && checkpoint.contains(own))
      both_present_.push_back({target, source, own, read->second});
  }

  // A checkpoint may still hold a buffer the model no longer persists (an
  // older save of a rotary inv_freq or position ids): not a surprise.
  std::set<std::string> computed;
  for (const auto &buffer : declared.non_persistent)
    computed.insert(rule.key_of(buffer));
  for (const auto &key : checkpoint.names()) {
    if (used.count(key) || computed.count(key) ||
        matches_any(declared.ignore_unexpected, key))
      continue;
    if (rule.mode == PrefixMode::Strip && !starts_with(key, rule.prefix))
      head_keys_.push_back(key);
    else
      unexpected_.push_back(key);
  }
}

const std::string *CheckpointKeys::source_of(const std::string &name) const {
  const auto it = sources_.find(name);
  return it == sources_.end() ? nullptr : &it->second;
}

void CheckpointKeys::untie(const std::string &target) {
  for (const auto &tie : both_present_)
    if (tie.target == target)
      sources_[target] = tie.target_key;
}

std::map<std::string, std::string> CheckpointKeys::renamed() const {
  std::map<std::string, std::string> renamed;
  for (const auto &[name, key] : sources_)
    if (name != key)
      renamed.emplace(name, key);
  return renamed;
}

} // namespace metaguard::detail
