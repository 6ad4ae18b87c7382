// The C++ side of test_hf_checkpoints.py and test_hf_save.py: loads
// transformers checkpoints into the C++ models of test/interop/models/ (and
// examples/models/bert.h), runs them, and saves them.
//
//   interop_hf_models logits <arch> <checkpoint> <inputs> <out> [--no-strict]
//                            [--dtype D]
//   interop_hf_models resave <arch> <checkpoint> <out_dir> <max_shard_size>
//                            [--to D] [--first-to D]
//   interop_hf_models random <arch> <config.json> <out_dir> <max_shard_size>
//                            <inputs> <out>
//   interop_hf_models dispatch <arch> <checkpoint> <inputs> <out> <device_map>
//
// dispatch builds the model empty (from_config under init_empty_weights) and
// gives it the checkpoint with load_checkpoint_and_dispatch and <device_map>,
// a JSON object of module prefix -> "cpu" / "disk", as accelerate's recipe
// for big models does; it prints the offloaded parameters' names (JSON).
//
// resave --to converts the loaded model to D before saving; --first-to only
// its first floating-point parameter (mixed dtypes).
//
// <arch>: bert (BertModel), bert-mlm (BertForMaskedLM), gpt2 (GPT2LMHeadModel),
// llama (LlamaForCausalLM), mistral (MistralForCausalLM, read by the Llama
// model; its tie_word_embeddings is read from the config). <inputs>: a safetensors file with input_ids
// (int64 [batch, seq]) and optionally attention_mask. <out>: a safetensors
// file with the outputs (logits, hidden, pooled). Exit status: 0 done,
// 3 FormatError, 4 MetaDeviceError, 1 anything else (message on stderr).
#include "models/bert.h"
#include "models/gpt2.h"
#include "models/llama.h"

#include <cstring>
#include <iostream>

namespace {

using metaguard::NamedTensors;

struct Inputs {
  torch::Tensor ids, mask;
};

Inputs read_inputs(const std::string &path) {
  metaguard::SafetensorsFile file(path);
  Inputs inputs{file.private_tensor("input_ids"), {}};
  if (file.contains("attention_mask"))
    inputs.mask = file.private_tensor("attention_mask");
  return inputs;
}

NamedTensors run(models::BertModel &m, const Inputs &in) {
  auto hidden = m->forward(in.ids, in.mask);
  NamedTensors out{{"hidden", hidden}};
  if (m->pooler)
    out.emplace_back("pooled", m->pooled(hidden));
  return out;
}
NamedTensors run(models::BertForMaskedLM &m, const Inputs &in) {
  return {{"logits", m->forward(in.ids, in.mask)},
          {"hidden", m->bert->forward(in.ids, in.mask)}};
}
NamedTensors run(models::GPT2LMHeadModel &m, const Inputs &in) {
  return {{"logits", m->forward(in.ids)}};
}
NamedTensors run(models::LlamaForCausalLM &m, const Inputs &in) {
  return {{"logits", m->forward(in.ids)}};
}

template <class Model>
void save_outputs(Model &model, const std::string &inputs,
                  const std::string &out) {
  torch::NoGradGuard no_grad;
  NamedTensors outputs = run(model, read_inputs(inputs));
  for (auto &[name, tensor] : outputs)
    tensor = tensor.to(torch::kFloat32).contiguous();
  metaguard::save_safetensors(out, outputs);
}

torch::Dtype dtype_named(const std::string &name) {
  if (name == "float32")
    return torch::kFloat32;
  if (name == "float16")
    return torch::kFloat16;
  if (name == "bfloat16")
    return torch::kBFloat16;
  throw std::invalid_argument("unknown dtype '" + name + "'");
}

void convert_first_floating(torch::nn::Module &model, torch::Dtype dtype) {
  torch::NoGradGuard no_grad;
  for (auto &parameter : model.parameters())
    if (parameter.is_floating_point()) {
      parameter.set_data(parameter.to(dtype));
      return;
    }
}

metaguard::SaveOptions shards_of(const std::string &size) {
  metaguard::SaveOptions options;
  options.max_shard_size = size;
  return options;
}

// A JSON object of module prefix -> placement ("cpu", "disk").
metaguard::DeviceMap device_map_of(const std::string &text) {
  metaguard::DeviceMap map;
  const auto entries = nlohmann::json::parse(text);
  for (const auto &[prefix, placement] : entries.items())
    map.set(prefix, placement.get<std::string>());
  return map;
}

template <class Model> int command(const std::vector<std::string> &args) {
  const std::string &what = args.at(0);
  if (what == "logits") {
    metaguard::LoadOptions options;
    for (std::size_t i = 5; i < args.size(); ++i) {
      if (args[i] == "--no-strict")
        options.strict = false;
      else if (args[i] == "--dtype" && i + 1 < args.size())
        options.dtype = dtype_named(args[++i]);
    }
    Model model = metaguard::from_pretrained<Model>(args.at(2), options);
    save_outputs(model, args.at(3), args.at(4));
  } else if (what == "resave") {
    Model model = metaguard::from_pretrained<Model>(args.at(2));
    for (std::size_t i = 5; i + 1 < args.size(); i += 2) {
      if (args[i] == "--to")
        model->to(dtype_named(args[i + 1]));
      else if (args[i] == "--first-to")
        convert_first_floating(*model, dtype_named(args[i + 1]));
    }
    metaguard::save_pretrained(*model, args.at(3), shards_of(args.at(4)));
  } else if (what == "random") {
    torch::manual_seed(0);
    Model model =
        metaguard::from_config<Model>(metaguard::load_config(args.at(2)));
    metaguard::save_pretrained(*model, args.at(3), shards_of(args.at(4)));
    save_outputs(model, args.at(5), args.at(6));
  } else if (what == "dispatch") {
    metaguard::LoadOptions options;
    options.device_map = device_map_of(args.at(5));
    Model model{nullptr};
    {
      auto scope = metaguard::init_empty_weights();
      model = metaguard::from_config<Model>(metaguard::load_config(args.at(2)));
    }
    metaguard::load_checkpoint_and_dispatch(*model, args.at(2), options);
    save_outputs(model, args.at(3), args.at(4));
    std::cout << nlohmann::json(metaguard::offloaded_parameter_names(*model)).dump() << '\n';
  } else {
    throw std::invalid_argument("unknown command '" + what + "'");
  }
  return 0;
}

int dispatch(const std::vector<std::string> &args) {
  const std::string &arch = args.at(1);
  if (arch == "bert")
    return command<models::BertModel>(args);
  if (arch == "bert-mlm")
    return command<models::BertForMaskedLM>(args);
  if (arch == "gpt2")
    return command<models::GPT2LMHeadModel>(args);
  // Mistral is Llama's architecture plus a sliding attention window, which
  // sequences shorter than the window (every test's) never reach.
  if (arch == "llama" || arch == "mistral")
    return command<models::LlamaForCausalLM>(args);
  throw std::invalid_argument("unknown architecture '" + arch + "'");
}

} // namespace

int main(int argc, char **argv) {
  torch::set_num_threads(1);
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() < 4)
      throw std::invalid_argument(
          "usage: see the comment at the top of interop_hf_models.cpp");
    return dispatch(args);
  } catch (const metaguard::FormatError &e) {
    std::cerr << "FormatError: " << e.what() << '\n';
    return 3;
  } catch (const metaguard::MetaDeviceError &e) {
    std::cerr << "MetaDeviceError: " << e.what() << '\n';
    return 4;
  } catch (const std::exception &e) {
    std::cerr << "error: " << e.what() << '\n';
    return 1;
  }
}
