"""accelerate's recipe for big models in both libraries: a checkpoint that
transformers wrote (one file or sharded) is loaded into a model built empty
(init_empty_weights + from_config) by load_checkpoint_and_dispatch with a
device map that puts some layers on disk. metaguard's C++ model (the program
interop_hf_models, command dispatch) computes what accelerate's transformers
model computes, and what transformers' own load of the checkpoint computes."""
import json

import pytest
import torch
from accelerate import init_empty_weights, load_checkpoint_and_dispatch
from safetensors.torch import load_file, save_file

import hf_models as hf

torch.set_num_threads(1)

# Module prefix -> placement, the same map for both libraries. GPT-2's head
# is tied to the token embeddings, so both stay on one placement.
DEVICE_MAPS = {
    "gpt2": {"transformer.wte": "cpu", "transformer.wpe": "cpu", "transformer.h.0": "disk",
             "transformer.h.1": "cpu", "transformer.ln_f": "disk", "lm_head": "cpu"},
    "llama": {"model.embed_tokens": "cpu", "model.layers.0": "cpu", "model.layers.1": "disk",
              "model.norm": "cpu", "model.rotary_emb": "cpu", "lm_head": "disk"},
}

CASES = [("gpt2", None), ("gpt2", "20KB"), ("llama", None), ("llama", "20KB")]


def case_id(case):
    arch, shard = case
    return f"{arch}-{'sharded' if shard else 'single'}"


def accelerate_outputs(arch, path, tensors, offload_folder):
    config_class, model_class, _ = hf.ARCHS[arch]
    config = config_class.from_pretrained(path)
    config._attn_implementation = "eager"
    with init_empty_weights():
        model = model_class(config)
    model.tie_weights()  # as accelerate's guide says: the checkpoint holds a tied head once
    model = load_checkpoint_and_dispatch(model, str(path), device_map=DEVICE_MAPS[arch],
                                         offload_folder=str(offload_folder))
    return hf.reference_outputs(arch, model.eval(), tensors)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_metaguard_computes_what_accelerate_computes(case, run_program, tmp_path):
    arch, shard = case
    path = hf.save_checkpoint(hf.make_model(arch), tmp_path / "ckpt", "float32", shard)
    assert (path / "model.safetensors.index.json").exists() == bool(shard)
    tensors = hf.inputs(arch, tmp_path / "inputs.safetensors")
    expected = accelerate_outputs(arch, path, tensors, tmp_path / "offload")
    reference = hf.reference_outputs(arch, hf.load_reference(arch, path), tensors)
    hf.assert_close(expected["logits"], reference["logits"], f"{case_id(case)} accelerate")

    proc = run_program("metaguard_interop_hf_models", "dispatch", arch, path, tmp_path / "inputs.safetensors",
                       tmp_path / "out.safetensors", json.dumps(DEVICE_MAPS[arch]))
    on_disk = [prefix + "." for prefix, placement in DEVICE_MAPS[arch].items() if placement == "disk"]
    expected_offloaded = sorted(name for name in hf.checkpoint_keys(path)
                                if any(name.startswith(prefix) for prefix in on_disk))
    assert expected_offloaded and json.loads(proc.stdout) == expected_offloaded
    actual = load_file(str(tmp_path / "out.safetensors"))
    hf.assert_close(actual["logits"], expected["logits"], f"{case_id(case)} metaguard")


def test_missing_layer_is_a_format_error_naming_it(run_program, tmp_path):
    """A checkpoint without a block: accelerate (strict=False) loads the rest
    and fails afterwards, when dispatch_model places the block that stayed on
    meta, naming neither the block nor the checkpoint; metaguard's load is
    strict by default and names the missing tensors before it changes
    anything."""
    path = hf.save_checkpoint(hf.make_model("gpt2"), tmp_path / "ckpt")
    tensors = load_file(str(path / "model.safetensors"))
    save_file({k: v for k, v in tensors.items() if not k.startswith("transformer.h.1.")},
              str(path / "model.safetensors"), metadata={"format": "pt"})
    inputs = hf.inputs("gpt2", tmp_path / "inputs.safetensors")
    with pytest.raises(ValueError, match="weight is on the meta device, we need a `value`"):
        accelerate_outputs("gpt2", path, inputs, tmp_path / "offload")

    proc = run_program("metaguard_interop_hf_models", "dispatch", "gpt2", path, tmp_path / "inputs.safetensors",
                       tmp_path / "out.safetensors", json.dumps(DEVICE_MAPS["gpt2"]), check=False)
    assert proc.returncode == 3, proc.stderr
    assert "missing keys" in proc.stderr and "transformer.h.1.attn.c_attn.weight" in proc.stderr
