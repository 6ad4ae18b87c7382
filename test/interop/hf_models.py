"""Tiny random transformers models and their checkpoints, written by
transformers' own save_pretrained: the inputs of the test_hf_* modules.

Weights are drawn with a fixed seed and a large spread (std 0.3, not the
0.02 of transformers' initialisation), so logits are of order one and a
wrong layer in the C++ model changes them far beyond the tolerance."""
import pathlib

import torch
import transformers
from safetensors import safe_open
from safetensors.torch import save_file

# Tolerance of every logits comparison: both sides compute in float32 and
# differ by about 1e-6 (summation order); a GELU variant swapped for another
# already differs by 2e-4.
RTOL = 1e-5
ATOL = 1e-5

ARCHS = {
    "gpt2": (transformers.GPT2Config, transformers.GPT2LMHeadModel,
             dict(vocab_size=64, n_positions=32, n_embd=32, n_layer=2, n_head=4)),
    "llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM,
              dict(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)),
    # Llama's layers with a sliding window (wider than any test sequence) and
    # the head tied to the embeddings, as Mistral-7B-like small models have it.
    "mistral": (transformers.MistralConfig, transformers.MistralForCausalLM,
                dict(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                     tie_word_embeddings=True)),
    "bert": (transformers.BertConfig, transformers.BertModel,
             dict(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                  intermediate_size=48, max_position_embeddings=32)),
    "bert-mlm": (transformers.BertConfig, transformers.BertForMaskedLM,
                 dict(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                      intermediate_size=48, max_position_embeddings=32)),
}

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def make_model(arch, seed=0, **overrides):
    config_class, model_class, settings = ARCHS[arch]
    config = config_class(**{**settings, **overrides})
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = model_class(config).eval()
    with torch.no_grad():
        for name, param in model.named_parameters():
            param.normal_(0.0, 0.3)
    model.tie_weights()
    return model


def save_checkpoint(model, path, dtype="float32", max_shard_size=None):
    path = pathlib.Path(path)
    kwargs = {} if max_shard_size is None else {"max_shard_size": max_shard_size}
    model.to(DTYPES[dtype]).save_pretrained(path, **kwargs)
    model.to(torch.float32)
    return path


def load_reference(arch, path):
    """transformers' own load of a checkpoint, computing in float32."""
    model_class = ARCHS[arch][1]
    return model_class.from_pretrained(path, dtype=torch.float32,
                                       attn_implementation="eager").eval()


def inputs(arch, path):
    """Token ids (and for BERT a padding mask with one padded position),
    written where the C++ program reads them."""
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 64, (2, 7), generator=generator, dtype=torch.int64)
    tensors = {"input_ids": ids}
    if arch.startswith("bert"):
        mask = torch.ones_like(ids)
        mask[1, -1] = 0
        tensors["attention_mask"] = mask
    save_file(tensors, str(path))
    return tensors


@torch.no_grad()
def reference_outputs(arch, model, tensors):
    ids = tensors["input_ids"]
    if arch == "bert":
        out = model(input_ids=ids, attention_mask=tensors["attention_mask"])
        return {"hidden": out.last_hidden_state, "pooled": out.pooler_output}
    if arch == "bert-mlm":
        out = model(input_ids=ids, attention_mask=tensors["attention_mask"],
                    output_hidden_states=True)
        return {"logits": out.logits, "hidden": out.hidden_states[-1]}
    return {"logits": model(input_ids=ids).logits}


def read_tensors(path):
    with safe_open(str(path), framework="pt") as f:
        return {name: f.get_tensor(name) for name in f.keys()}


def checkpoint_keys(path):
    """Every tensor name of a checkpoint folder, single file or sharded."""
    keys = set()
    for file in pathlib.Path(path).glob("*.safetensors"):
        with safe_open(str(file), framework="pt") as f:
            keys.update(f.keys())
    return keys


def assert_close(actual, expected, what):
    assert expected.abs().max() > 0.5, f"{what}: reference too small to tell models apart"
    torch.testing.assert_close(actual, expected.to(actual.dtype), rtol=RTOL, atol=ATOL,
                               msg=lambda m: f"{what}: {m}")
