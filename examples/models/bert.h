// BERT in LibTorch, with the module names of transformers' BertModel and
// BertForMaskedLM, so their checkpoints load with metaguard::from_pretrained
// (and what metaguard::save_pretrained writes loads in transformers).
// Inference only (no dropout). Used by examples/minilm_embeddings.cpp and the
// interop tests (test/interop/).
#pragma once

#include "layers.h"

namespace models {

struct BertSettings {
  explicit BertSettings(const metaguard::Config &c)
      : vocab_size(c.at("vocab_size")), hidden_size(c.at("hidden_size")),
        num_hidden_layers(c.at("num_hidden_layers")),
        num_attention_heads(c.at("num_attention_heads")),
        intermediate_size(c.at("intermediate_size")),
        max_position_embeddings(config_int(c, "max_position_embeddings", 512)),
        type_vocab_size(config_int(c, "type_vocab_size", 2)),
        layer_norm_eps(c.value("layer_norm_eps", 1e-12)),
        hidden_act(c.value("hidden_act", std::string("gelu"))),
        tie_word_embeddings(c.value("tie_word_embeddings", true)) {}
  int64_t vocab_size, hidden_size, num_hidden_layers, num_attention_heads,
      intermediate_size, max_position_embeddings, type_vocab_size;
  double layer_norm_eps;
  std::string hidden_act;
  bool tie_word_embeddings;
};

inline torch::nn::LayerNorm bert_layer_norm(const BertSettings &s) {
  return torch::nn::LayerNorm(
      torch::nn::LayerNormOptions({s.hidden_size}).eps(s.layer_norm_eps));
}

struct BertEmbeddingsImpl : metaguard::Module {
  explicit BertEmbeddingsImpl(const BertSettings &s) {
    word_embeddings = register_module(
        "word_embeddings", torch::nn::Embedding(s.vocab_size, s.hidden_size));
    position_embeddings = register_module(
        "position_embeddings",
        torch::nn::Embedding(s.max_position_embeddings, s.hidden_size));
    token_type_embeddings =
        register_module("token_type_embeddings",
                        torch::nn::Embedding(s.type_vocab_size, s.hidden_size));
    LayerNorm = register_module("LayerNorm", bert_layer_norm(s));
    // Computed, not read: transformers keeps it out of its checkpoints
    // (older ones still hold it; loading ignores it).
    position_ids = register_buffer(
        "position_ids", torch::arange(s.max_position_embeddings).unsqueeze(0),
        /*persistent=*/false);
  }
  torch::Tensor forward(const torch::Tensor &input_ids,
                        const torch::Tensor &token_type_ids) {
    auto positions = position_ids.slice(1, 0, input_ids.size(1));
    auto x = word_embeddings(input_ids) +
             token_type_embeddings(token_type_ids) +
             position_embeddings(positions);
    return LayerNorm(x);
  }
  torch::nn::Embedding word_embeddings{nullptr}, position_embeddings{nullptr},
      token_type_embeddings{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};
  torch::Tensor position_ids;
};
TORCH_MODULE(BertEmbeddings);

struct BertSelfAttentionImpl : torch::nn::Module {
  explicit BertSelfAttentionImpl(const BertSettings &s)
      : heads(s.num_attention_heads) {
    query = register_module("query",
                            torch::nn::Linear(s.hidden_size, s.hidden_size));
    key =
        register_module("key", torch::nn::Linear(s.hidden_size, s.hidden_size));
    value = register_module("value",
                            torch::nn::Linear(s.hidden_size, s.hidden_size));
  }
  torch::Tensor forward(const torch::Tensor &x, const torch::Tensor &bias) {
    return merge_heads(attend(split_heads(query(x), heads),
                              split_heads(key(x), heads),
                              split_heads(value(x), heads), bias));
  }
  int64_t heads;
  torch::nn::Linear query{nullptr}, key{nullptr}, value{nullptr};
};
TORCH_MODULE(BertSelfAttention);

// dense -> residual -> LayerNorm: BertSelfOutput and BertOutput.
struct BertResidualImpl : torch::nn::Module {
  BertResidualImpl(const BertSettings &s, int64_t in) {
    dense = register_module("dense", torch::nn::Linear(in, s.hidden_size));
    LayerNorm = register_module("LayerNorm", bert_layer_norm(s));
  }
  torch::Tensor forward(const torch::Tensor &x, const torch::Tensor &residual) {
    return LayerNorm(dense(x) + residual);
  }
  torch::nn::Linear dense{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};
};
TORCH_MODULE(BertResidual);

struct BertAttentionImpl : torch::nn::Module {
  explicit BertAttentionImpl(const BertSettings &s) {
    self = register_module("self", BertSelfAttention(s));
    output = register_module("output", BertResidual(s, s.hidden_size));
  }
  torch::Tensor forward(const torch::Tensor &x, const torch::Tensor &bias) {
    return output(self(x, bias), x);
  }
  BertSelfAttention self{nullptr};
  BertResidual output{nullptr};
};
TORCH_MODULE(BertAttention);

struct BertIntermediateImpl : torch::nn::Module {
  explicit BertIntermediateImpl(const BertSettings &s) : act(s.hidden_act) {
    dense = register_module(
        "dense", torch::nn::Linear(s.hidden_size, s.intermediate_size));
  }
  torch::Tensor forward(const torch::Tensor &x) {
    return activation(act, dense(x));
  }
  std::string act;
  torch::nn::Linear dense{nullptr};
};
TORCH_MODULE(BertIntermediate);

struct BertLayerImpl : torch::nn::Module {
  explicit BertLayerImpl(const BertSettings &s) {
    attention = register_module("attention", BertAttention(s));
    intermediate = register_module("intermediate", BertIntermediate(s));
    output = register_module("output", BertResidual(s, s.intermediate_size));
  }
  torch::Tensor forward(const torch::Tensor &x, const torch::Tensor &bias) {
    auto attended = attention(x, bias);
    return output(intermediate(attended), attended);
  }
  BertAttention attention{nullptr};
  BertIntermediate intermediate{nullptr};
  BertResidual output{nullptr};
};
TORCH_MODULE(BertLayer);

struct BertEncoderImpl : torch::nn::Module {
  explicit BertEncoderImpl(const BertSettings &s) {
    layer = register_module("layer", torch::nn::ModuleList());
    for (int64_t i = 0; i < s.num_hidden_layers; ++i)
      layer->push_back(BertLayer(s));
  }
  torch::Tensor forward(torch::Tensor x, const torch::Tensor &bias) {
    for (const auto &block : *layer)
      x = block->as<BertLayer>()->forward(x, bias);
    return x;
  }
  torch::nn::ModuleList layer{nullptr};
};
TORCH_MODULE(BertEncoder);

struct BertPoolerImpl : torch::nn::Module {
  explicit BertPoolerImpl(const BertSettings &s) {
    dense = register_module("dense",
                            torch::nn::Linear(s.hidden_size, s.hidden_size));
  }
  torch::Tensor forward(const torch::Tensor &hidden) {
    return torch::tanh(dense(hidden.select(1, 0)));
  }
  torch::nn::Linear dense{nullptr};
};
TORCH_MODULE(BertPooler);

// transformers' BertModel. forward returns the last hidden state
// [batch, seq, hidden]; pooled() the pooler's output.
struct BertModelImpl : metaguard::PreTrainedModel {
  explicit BertModelImpl(const metaguard::Config &config,
                         bool add_pooling_layer = true)
      : BertModelImpl(BertSettings(config), add_pooling_layer) {}
  BertModelImpl(const BertSettings &s, bool add_pooling_layer) {
    embeddings = register_module("embeddings", BertEmbeddings(s));
    encoder = register_module("encoder", BertEncoder(s));
    if (add_pooling_layer)
      pooler = register_module("pooler", BertPooler(s));
  }
  std::string base_model_prefix() const override { return "bert"; }

  // attention_mask: [batch, seq], 1 for tokens, 0 for padding (undefined:
  // all tokens); token_type_ids: undefined means all zeros.
  torch::Tensor forward(const torch::Tensor &input_ids,
                        torch::Tensor attention_mask = {},
                        torch::Tensor token_type_ids = {}) {
    if (!attention_mask.defined())
      attention_mask = torch::ones_like(input_ids);
    if (!token_type_ids.defined())
      token_type_ids = torch::zeros_like(input_ids);
    auto x = embeddings(input_ids, token_type_ids);
    return encoder(x, padding_bias(attention_mask, x.scalar_type()));
  }
  torch::Tensor pooled(const torch::Tensor &hidden) { return pooler(hidden); }

  BertEmbeddings embeddings{nullptr};
  BertEncoder encoder{nullptr};
  BertPooler pooler{nullptr};
};
TORCH_MODULE(BertModel);

struct BertPredictionHeadTransformImpl : torch::nn::Module {
  explicit BertPredictionHeadTransformImpl(const BertSettings &s)
      : act(s.hidden_act) {
    dense = register_module("dense",
                            torch::nn::Linear(s.hidden_size, s.hidden_size));
    LayerNorm = register_module("LayerNorm", bert_layer_norm(s));
  }
  torch::Tensor forward(const torch::Tensor &x) {
    return LayerNorm(activation(act, dense(x)));
  }
  std::string act;
  torch::nn::Linear dense{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};
};
TORCH_MODULE(BertPredictionHeadTransform);

// cls.predictions: the decoder's weight is the word embeddings (tied) and
// its bias is the head's `bias` (tied as well).
struct BertLMPredictionHeadImpl : torch::nn::Module {
  BertLMPredictionHeadImpl(const BertSettings &s,
                           const torch::Tensor &word_embeddings) {
    transform = register_module("transform", BertPredictionHeadTransform(s));
    bias = register_parameter("bias", torch::zeros({s.vocab_size}));
    decoder = register_module("decoder",
                              Projection(s.hidden_size, s.vocab_size,
                                         /*with_bias=*/false, word_embeddings));
    decoder->bias = decoder->register_parameter("bias", bias);
  }
  torch::Tensor forward(const torch::Tensor &x) {
    return decoder(transform(x));
  }
  BertPredictionHeadTransform transform{nullptr};
  Projection decoder{nullptr};
  torch::Tensor bias;
};
TORCH_MODULE(BertLMPredictionHead);

struct BertOnlyMLMHeadImpl : torch::nn::Module {
  BertOnlyMLMHeadImpl(const BertSettings &s,
                      const torch::Tensor &word_embeddings) {
    predictions = register_module("predictions",
                                  BertLMPredictionHead(s, word_embeddings));
  }
  torch::Tensor forward(const torch::Tensor &x) { return predictions(x); }
  BertLMPredictionHead predictions{nullptr};
};
TORCH_MODULE(BertOnlyMLMHead);

// transformers' BertForMaskedLM: forward returns the logits [batch, seq,
// vocab].
struct BertForMaskedLMImpl : metaguard::PreTrainedModel {
  explicit BertForMaskedLMImpl(const metaguard::Config &config)
      : settings(config) {
    bert = register_module("bert",
                           BertModel(settings, /*add_pooling_layer=*/false));
    cls = register_module(
        "cls", BertOnlyMLMHead(settings,
                               settings.tie_word_embeddings
                                   ? bert->embeddings->word_embeddings->weight
                                   : torch::Tensor()));
  }
  std::string base_model_prefix() const override { return "bert"; }
  metaguard::TiedWeights tied_weights_keys() const override {
    metaguard::TiedWeights tied{
        {"cls.predictions.decoder.bias", "cls.predictions.bias"}};
    if (settings.tie_word_embeddings)
      tied.emplace("cls.predictions.decoder.weight",
                   "bert.embeddings.word_embeddings.weight");
    return tied;
  }
  torch::Tensor forward(const torch::Tensor &input_ids,
                        const torch::Tensor &attention_mask = {}) {
    return cls(bert(input_ids, attention_mask));
  }
  BertSettings settings;
  BertModel bert{nullptr};
  BertOnlyMLMHead cls{nullptr};
};
TORCH_MODULE(BertForMaskedLM);

} // namespace models
