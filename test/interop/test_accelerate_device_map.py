"""Automatic device maps: for the same module tree and the same budget,
metaguard's infer_auto_device_map / resolve_device_map place every module
where accelerate's infer_auto_device_map (after get_balanced_memory for the
balanced strategies, as transformers does) places it.

The trees are real transformers models built from tiny configs under
init_empty_weights, untied and tied (GPT-2's and Llama's head tied to the
embeddings, T5's shared embeddings tied into both stacks and the head), plus
a hand-written one with top-level tensors and mixed dtypes. The test dumps
each tree (class names, parameters and buffers with shapes and dtypes, in
registration order, and accelerate's find_tied_parameters groups);
interop_accelerate_device_map rebuilds it in C++ from meta tensors, a tied
group as one tensor. Budgets are fractions of the model's
size, so every case exercises splitting, the room kept for the largest layer
on the main devices, and offloading to disk. GPUs need not exist: both sides
plan with the budgets they are given.
"""
import json

import pytest
import torch
from accelerate import init_empty_weights
from accelerate.utils import compute_module_sizes, get_balanced_memory, infer_auto_device_map
from accelerate.utils import find_tied_parameters
from transformers import (BertConfig, BertForMaskedLM, GPT2Config, GPT2LMHeadModel, LlamaConfig,
                          LlamaForCausalLM, T5Config, T5ForConditionalGeneration)


class Mixed(torch.nn.Module):
    """Top-level parameter and buffer, a float16 block, an int64 buffer and
    a module with no children next to modules with children."""

    class Block(torch.nn.Module):
        def __init__(self, width, dtype):
            super().__init__()
            self.proj = torch.nn.Linear(width, width, dtype=dtype)
            self.gate = torch.nn.Linear(width, width, bias=False, dtype=dtype)
            self.register_buffer("steps", torch.zeros(width, dtype=torch.int64))

    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(64))
        self.embed = torch.nn.Embedding(100, 32)
        self.blocks = torch.nn.ModuleList(
            [Mixed.Block(32, torch.float16 if i % 2 else torch.float32) for i in range(5)])
        self.head = torch.nn.Linear(32, 100)
        self.register_buffer("table", torch.zeros(16, 16))


def gpt2(tie=False):
    return GPT2LMHeadModel(GPT2Config(n_layer=4, n_embd=64, n_head=4, vocab_size=128, n_positions=32,
                                      tie_word_embeddings=tie))


def llama(tie=False):
    return LlamaForCausalLM(LlamaConfig(num_hidden_layers=3, hidden_size=64, intermediate_size=128,
                                        num_attention_heads=4, num_key_value_heads=2, vocab_size=96,
                                        tie_word_embeddings=tie))


def t5():
    # Large embeddings (vocab 512): ties decide where the big tensors go.
    return T5ForConditionalGeneration(T5Config(vocab_size=512, d_model=32, d_kv=8, d_ff=64, num_layers=2,
                                               num_heads=4, tie_word_embeddings=True))


def llama_bf16():
    return llama().to(torch.bfloat16)


def bert():
    return BertForMaskedLM(BertConfig(num_hidden_layers=3, hidden_size=64, intermediate_size=128,
                                      num_attention_heads=4, vocab_size=128, max_position_embeddings=32,
                                      tie_word_embeddings=False))


def mixed():
    return Mixed()


MODELS = {"gpt2": gpt2, "llama": llama, "llama_bf16": llama_bf16, "bert": bert, "mixed": mixed,
          "gpt2_tied": lambda: gpt2(tie=True), "llama_tied": lambda: llama(tie=True), "t5": t5}
TIED = ("gpt2_tied", "llama_tied", "t5")

# Budgets as fractions of the model's size; integer keys are GPUs.
BUDGETS = {
    "cpu_roomy": {"cpu": 2.0},
    "cpu_most": {"cpu": 0.8},
    "cpu_half": {"cpu": 0.5},
    "cpu_tight": {"cpu": 0.2},
    "cpu_and_disk": {"cpu": 0.35, "disk": 10.0},
    "one_gpu": {0: 0.4, "cpu": 0.3},
    "one_gpu_most": {0: 0.7, "cpu": 0.6},
    "two_gpus": {0: 0.3, 1: 0.3, "cpu": 0.3},
    "two_gpus_roomy": {0: 0.8, 1: 0.8, "cpu": 1.0},
    "mps": {"mps": 0.5, "cpu": 0.3},
    "three_gpus_small": {0: 0.15, 1: 0.15, 2: 0.15, "cpu": 0.2},
}

STRATEGIES = ["infer", "auto", "balanced_low_0", "sequential"]
BALANCING = ("auto", "balanced_low_0")


def dtype_name(dtype):
    return str(dtype).removeprefix("torch.")


def tree(module):
    return {
        "type": type(module).__name__,
        "parameters": [[n, list(p.shape), dtype_name(p.dtype)]
                       for n, p in module.named_parameters(recurse=False)],
        "buffers": [[n, list(b.shape), dtype_name(b.dtype)]
                    for n, b in module.named_buffers(recurse=False)],
        "children": [[n, tree(c)] for n, c in module.named_children()],
    }


def accelerate_map(model, budget, strategy, no_split):
    if strategy in BALANCING:
        budget = get_balanced_memory(model, max_memory=dict(budget), no_split_module_classes=no_split,
                                     low_zero=strategy == "balanced_low_0")
    placed = infer_auto_device_map(model, max_memory=dict(budget), no_split_module_classes=no_split)
    return {name: f"cuda:{d}" if isinstance(d, int) else d for name, d in placed.items()}


def build(name):
    with init_empty_weights():
        model = MODELS[name]()
    # The context re-registers every parameter, which breaks ties; tie them
    # again, as from_pretrained has before it plans a map.
    if hasattr(model, "tie_weights"):
        model.tie_weights()
    return model, list(getattr(model, "_no_split_modules", None) or ["Block"])


@pytest.mark.parametrize("model_name", sorted(MODELS))
def test_metaguard_places_like_accelerate(model_name, run_program, tmp_path):
    model, no_split = build(model_name)
    total = compute_module_sizes(model)[""]
    jobs, expected = [], []
    for budget_name, fractions in BUDGETS.items():
        budget = {device: int(total * f) for device, f in fractions.items()}
        for strategy in STRATEGIES:
            if strategy in BALANCING and "disk" in budget:
                continue  # get_balanced_memory cannot parse a "disk" key
            jobs.append({"label": f"{budget_name}/{strategy}", "strategy": strategy,
                         "max_memory": {str(k): v for k, v in budget.items()}, "no_split": no_split})
            expected.append(accelerate_map(model, budget, strategy, no_split))
    spec = tmp_path / "jobs.json"
    tied = find_tied_parameters(model)
    assert bool(tied) == (model_name in TIED), tied
    spec.write_text(json.dumps({"model": tree(model), "tied": tied, "jobs": jobs}))
    got = json.loads(run_program("metaguard_interop_accelerate_device_map", spec).stdout)
    assert len(got) == len(jobs)
    wrong = [f"{job['label']}:\n  accelerate {want}\n  metaguard  {ours}"
             for job, want, ours in zip(jobs, expected, got) if ours != want]
    assert not wrong, f"{model_name}: {len(wrong)} of {len(jobs)} maps differ\n" + "\n".join(wrong)


def test_the_budgets_reach_every_device(run_program, tmp_path):
    """Guards the test itself: across the budgets, accelerate's maps use a
    GPU, the CPU and the disk, and split at least one no-split parent."""
    model, no_split = build("gpt2")
    total = compute_module_sizes(model)[""]
    devices, split = set(), False
    for fractions in BUDGETS.values():
        budget = {device: int(total * f) for device, f in fractions.items()}
        placed = accelerate_map(model, budget, "infer", no_split)
        devices |= set(placed.values())
        split |= any(name.startswith("transformer.h") for name in placed)
    assert {"cuda:0", "cuda:1", "cpu", "disk"} <= devices
    assert split
