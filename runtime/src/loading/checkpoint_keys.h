// Which checkpoint key each tensor of a model is read from, following the
// model's declarations (metaguard::Module) the way transformers'
// from_pretrained follows its model classes': base_model_prefix added or
// stripped, tied tensors read from one key (the source's, else a target's),
// non-persistent buffers never read, ignore lists applied to the missing /
// unexpected reports.
#pragma once

#include <metaguard/checkpoint_reader.h>

#include "loading/declarations.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace metaguard::detail {

// A tie of which the checkpoint holds both sides, each under its own key:
// tied only when the values are equal (transformers' rule), which takes
// reading them.
struct TieWithTwoCopies {
  std::string target, source;         // model names
  std::string target_key, source_key; // checkpoint keys
};

class CheckpointKeys {
public:
  CheckpointKeys(const torch::nn::Module &module,
                 const CheckpointReader &checkpoint);

  // The checkpoint key the tensor `name` of the model is read from, or
  // nullptr when the checkpoint has none for it.
  const std::string *source_of(const std::string &name) const;
  // Tensors of the model whose key the checkpoint lacks (ignored ones left
  // out).
  const std::vector<std::string> &missing() const { return missing_; }
  // Checkpoint keys nothing in the model reads (ignored ones left out).
  const std::vector<std::string> &unexpected() const { return unexpected_; }
  // Keys of a head a base model has no place for (the prefix was stripped).
  const std::vector<std::string> &head_keys() const { return head_keys_; }
  // Model name -> checkpoint key, for the names that differ.
  std::map<std::string, std::string> renamed() const;
  // "", or what was done with the base model prefix, for messages.
  const std::string &prefix_note() const { return prefix_note_; }
  // Ties whose target is read from its source's key although the checkpoint
  // holds a copy of the target too.
  const std::vector<TieWithTwoCopies> &ties_with_two_copies() const { return both_present_; }
  // Breaks the tie of `target` (one of ties_with_two_copies()): it is read
  // from its own key.
  void untie(const std::string &target);

private:
  std::map<std::string, std::string> sources_;
  std::vector<TieWithTwoCopies> both_present_;
  std::vector<std::string> missing_, unexpected_, head_keys_;
  std::string prefix_note_;
};

} // namespace metaguard::detail
