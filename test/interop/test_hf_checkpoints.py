"""transformers -> metaguard: checkpoints written by transformers'
save_pretrained (tied GPT-2, Llama with rotary buffers, BERT with and without
its masked-LM head; one file and sharded with transformers' max_shard_size;
float32, float16, bfloat16) load with metaguard::from_pretrained into the C++
models, whose outputs equal transformers' within hf_models.RTOL/ATOL."""
import json

import pytest
import torch
from safetensors.torch import load_file, save_file

import hf_models as hf

torch.set_num_threads(1)

CASES = [(arch, dtype, shard)
         for arch in ("gpt2", "llama", "bert", "bert-mlm")
         for dtype in ("float32", "float16", "bfloat16")
         for shard in (None, "20KB")
         if dtype == "float32" or shard is None or arch == "gpt2"]


def case_id(case):
    arch, dtype, shard = case
    return f"{arch}-{dtype}-{'sharded' if shard else 'single'}"


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """Each case's checkpoint, written once, with its reference outputs."""
    cache = {}

    def get(arch, dtype="float32", shard=None):
        key = (arch, dtype, shard)
        if key not in cache:
            root = tmp_path_factory.mktemp(case_id(key))
            path = hf.save_checkpoint(hf.make_model(arch), root / "ckpt", dtype, shard)
            tensors = hf.inputs(arch, root / "inputs.safetensors")
            expected = hf.reference_outputs(arch, hf.load_reference(arch, path), tensors)
            cache[key] = (path, root / "inputs.safetensors", expected)
        return cache[key]

    return get


def run_logits(run_program, arch, checkpoint, inputs, out, *flags, check=True):
    return run_program("metaguard_interop_hf_models", "logits", arch, checkpoint, inputs, out,
                       *flags, check=check)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_outputs_equal_transformers(case, written, run_program, tmp_path):
    arch, dtype, shard = case
    path, inputs, expected = written(arch, dtype, shard)
    assert (path / "model.safetensors.index.json").exists() == bool(shard)
    run_logits(run_program, arch, path, inputs, tmp_path / "out.safetensors")
    actual = load_file(str(tmp_path / "out.safetensors"))
    assert set(actual) == set(expected)
    for name in expected:
        hf.assert_close(actual[name], expected[name], f"{case_id(case)} {name}")


def test_tied_checkpoint_has_no_lm_head(written):
    # What makes the GPT-2 cases a test of tying: the head is not in the file.
    path, _, _ = written("gpt2")
    keys = hf.checkpoint_keys(path)
    assert "transformer.wte.weight" in keys and "lm_head.weight" not in keys


def test_rotary_buffers_not_in_checkpoint(written):
    path, _, _ = written("llama")
    assert not any("inv_freq" in key for key in hf.checkpoint_keys(path))


def test_persisted_buffer_of_an_older_save_is_ignored(written, run_program, tmp_path):
    # Older transformers versions saved inv_freq; both loaders skip it.
    path, inputs, expected = written("llama")
    tensors = load_file(str(path / "model.safetensors"))
    tensors["model.rotary_emb.inv_freq"] = torch.full((4,), 7.0)
    old = tmp_path / "old"
    old.mkdir()
    save_file(tensors, str(old / "model.safetensors"), metadata={"format": "pt"})
    (old / "config.json").write_text((path / "config.json").read_text())
    hf.assert_close(hf.reference_outputs("llama", hf.load_reference("llama", old),
                                         load_file(str(inputs)))["logits"],
                    expected["logits"], "transformers")
    run_logits(run_program, "llama", old, inputs, tmp_path / "out.safetensors")
    hf.assert_close(load_file(str(tmp_path / "out.safetensors"))["logits"], expected["logits"],
                    "metaguard")


def test_bf16_compute_close_to_transformers(written, run_program, tmp_path):
    # LoadOptions.dtype: computing in bfloat16 on both sides agrees to
    # bfloat16's precision (8 bits of mantissa), not float32's.
    path, inputs, _ = written("llama", "bfloat16")
    model = hf.ARCHS["llama"][1].from_pretrained(path, dtype=torch.bfloat16,
                                                 attn_implementation="eager").eval()
    with torch.no_grad():
        expected = model(input_ids=load_file(str(inputs))["input_ids"]).logits.float()
    run_logits(run_program, "llama", path, inputs, tmp_path / "out.safetensors",
               "--dtype", "bfloat16")
    actual = load_file(str(tmp_path / "out.safetensors"))["logits"]
    torch.testing.assert_close(actual, expected, rtol=0.05, atol=0.1)


def test_base_model_from_head_checkpoint(written, run_program, tmp_path):
    # BertModel from a BertForMaskedLM checkpoint: the prefix 'bert.' is
    # stripped and the head's tensors are left out, as in transformers. The
    # checkpoint has no pooler (the masked-LM model has none): transformers
    # initialises it at random with a warning, metaguard's strict load says
    # it is missing; strict = false loads the rest.
    path, inputs, expected = written("bert-mlm")
    proc = run_logits(run_program, "bert", path, inputs, tmp_path / "out.safetensors",
                      check=False)
    assert proc.returncode == 3, proc.stderr
    assert "pooler.dense.weight" in proc.stderr and "'bert.'" in proc.stderr
    proc = run_logits(run_program, "bert", path, inputs, tmp_path / "out.safetensors",
                      "--no-strict")
    assert "cls.predictions.transform.dense.weight" in proc.stderr  # the head: not loaded
    reference = hf.load_reference("bert", path)
    base = hf.reference_outputs("bert", reference, load_file(str(inputs)))
    actual = load_file(str(tmp_path / "out.safetensors"))
    hf.assert_close(actual["hidden"], base["hidden"], "BertModel from BertForMaskedLM")
    hf.assert_close(actual["hidden"], expected["hidden"], "against the masked-LM model")


def test_head_model_from_base_checkpoint(written, run_program, tmp_path):
    # BertForMaskedLM from a BertModel checkpoint: 'bert.' is added. The head
    # is missing (transformers: random with a warning; metaguard strict: a
    # FormatError naming it), the tied decoder is not.
    path, inputs, expected = written("bert")
    proc = run_logits(run_program, "bert-mlm", path, inputs, tmp_path / "out.safetensors",
                      check=False)
    assert proc.returncode == 3, proc.stderr
    assert "cls.predictions.transform.dense.weight" in proc.stderr
    assert "decoder.weight" not in proc.stderr
    assert "pooler" in proc.stderr  # the base checkpoint's pooler: unexpected
    run_logits(run_program, "bert-mlm", path, inputs, tmp_path / "out.safetensors", "--no-strict")
    actual = load_file(str(tmp_path / "out.safetensors"))
    hf.assert_close(actual["hidden"], expected["hidden"], "BertForMaskedLM from BertModel")


def test_shape_mismatch_raises_on_both_sides(written, run_program, tmp_path):
    path, inputs, _ = written("gpt2")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "model.safetensors").write_bytes((path / "model.safetensors").read_bytes())
    config = json.loads((path / "config.json").read_text())
    config["vocab_size"] = 80
    (bad / "config.json").write_text(json.dumps(config))
    with pytest.raises(Exception, match="(?i)size"):
        hf.load_reference("gpt2", bad)
    proc = run_logits(run_program, "gpt2", bad, inputs, tmp_path / "out.safetensors", check=False)
    assert proc.returncode == 3, proc.stderr
    assert "transformer.wte.weight" in proc.stderr and "[64, 32]" in proc.stderr


# Tied checkpoints: (C++ arch, transformers overrides, source key, target key).
TIES = {
    "gpt2": ("gpt2", {}, "transformer.wte.weight", "lm_head.weight"),
    "llama-tied": ("llama", {"tie_word_embeddings": True}, "model.embed_tokens.weight",
                   "lm_head.weight"),
}


@pytest.fixture(scope="module")
def tied(tmp_path_factory):
    """Each tied architecture's checkpoint (transformers' save: the source
    only), its inputs and transformers' outputs."""
    cache = {}

    def get(name):
        if name not in cache:
            arch, overrides, source, target = TIES[name]
            root = tmp_path_factory.mktemp(name)
            path = hf.save_checkpoint(hf.make_model(arch, **overrides), root / "ckpt")
            assert source in hf.checkpoint_keys(path) and target not in hf.checkpoint_keys(path)
            tensors = hf.inputs(arch, root / "inputs.safetensors")
            expected = hf.reference_outputs(arch, hf.load_reference(arch, path), tensors)
            cache[name] = (path, root / "inputs.safetensors", expected)
        return cache[name]

    return get


def rewritten(path, out, change):
    """A copy of the one-file checkpoint folder `path` at `out` whose tensors
    are change(tensors)."""
    out.mkdir()
    tensors = change(load_file(str(path / "model.safetensors")))
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    (out / "config.json").write_text((path / "config.json").read_text())
    return out


def transformers_load(arch, path):
    model, info = hf.ARCHS[arch][1].from_pretrained(
        path, dtype=torch.float32, attn_implementation="eager", output_loading_info=True)
    return model.eval(), info


def transformers_load_complete(arch, path):
    """transformers' model of `path`, which must report no missing or
    unexpected key."""
    model, info = transformers_load(arch, path)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    return model


def metaguard_logits(run_program, arch, path, inputs, tmp_path, *flags):
    proc = run_logits(run_program, arch, path, inputs, tmp_path / "out.safetensors", *flags)
    return load_file(str(tmp_path / "out.safetensors"))["logits"], proc.stderr


@pytest.mark.parametrize("name", TIES)
def test_tie_goes_the_other_way_when_only_the_target_is_saved(name, tied, run_program, tmp_path):
    # The checkpoint holds lm_head.weight and not the embeddings: transformers
    # ties the other way (the embeddings take the head's values) and reports
    # nothing missing; so does metaguard, strict.
    arch, _, source, target = TIES[name]
    path, inputs, expected = tied(name)

    def move(tensors):
        tensors[target] = tensors.pop(source)
        return tensors

    moved = rewritten(path, tmp_path / "moved", move)
    model = transformers_load_complete(arch, moved)
    reference = hf.reference_outputs(arch, model, load_file(str(inputs)))
    hf.assert_close(reference["logits"], expected["logits"], f"{name}: transformers")
    logits, _ = metaguard_logits(run_program, arch, moved, inputs, tmp_path)
    hf.assert_close(logits, reference["logits"], f"{name}: metaguard")


@pytest.mark.parametrize("name", TIES)
def test_equal_copies_of_a_tie_load_tied(name, tied, run_program, tmp_path):
    # What a .bin state dict or an older save holds: both sides, equal.
    arch, _, source, target = TIES[name]
    path, inputs, expected = tied(name)
    both = rewritten(path, tmp_path / "both", lambda t: {**t, target: t[source].clone()})
    transformers_load_complete(arch, both)
    logits, _ = metaguard_logits(run_program, arch, both, inputs, tmp_path)
    hf.assert_close(logits, expected["logits"], f"{name}: metaguard")


@pytest.mark.parametrize("name", TIES)
def test_different_copies_of_a_tie(name, tied, run_program, tmp_path):
    # transformers keeps both copies and breaks the tie (with a warning). The
    # C++ models hold a tie as one tensor, which cannot keep two values:
    # metaguard refuses under strict, naming both keys, and with strict =
    # false loads the tie with the source's values, saying so.
    arch, _, source, target = TIES[name]
    path, inputs, expected = tied(name)
    differ = rewritten(path, tmp_path / "differ", lambda t: {**t, target: t[source] + 0.5})
    model, _ = transformers_load(arch, differ)
    state = model.state_dict()
    saved = load_file(str(differ / "model.safetensors"))
    assert torch.equal(state[source], saved[source]) and torch.equal(state[target], saved[target])
    assert state[source].data_ptr() != state[target].data_ptr()

    proc = run_logits(run_program, arch, differ, inputs, tmp_path / "out.safetensors", check=False)
    assert proc.returncode == 3, proc.stderr
    assert f"'{source}' and '{target}' with different values" in proc.stderr
    assert "tie_word_embeddings: false" in proc.stderr
    logits, stderr = metaguard_logits(run_program, arch, differ, inputs, tmp_path, "--no-strict")
    assert f"with the values of '{source}'" in stderr
    hf.assert_close(logits, expected["logits"], f"{name}: metaguard, strict = false")
