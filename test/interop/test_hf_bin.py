"""torch.save -> metaguard: legacy `pytorch_model.bin` checkpoints (one file,
and shards listed by pytorch_model.bin.index.json; the zip format and the one
before PyTorch 1.6) as transformers 5 still reads them. Each folder holds config.json and state dicts written by the real
torch.save (float32, float16, bfloat16; ties saved as one storage, views
saved as views); metaguard::from_pretrained loads every tensor bit-identical
to transformers' from_pretrained of the same folder, and its outputs match.
A folder holding both formats loads its safetensors, on both sides; a pickle
holding anything but a state dict is refused, as torch.load(weights_only=True)
refuses it."""
import json
import os

import pytest
import torch
from safetensors.torch import load_file

import hf_models as hf

torch.set_num_threads(1)

ARCHS = ("gpt2", "llama", "bert-mlm")


def write_bin(model, path, dtype="float32", shards=1, change=None, legacy=False):
    """config.json and the model's state dict as torch.save writes it, in
    `shards` files with transformers' index when more than one; `legacy`
    writes the format of PyTorch before 1.6."""
    path.mkdir()
    model.config.save_pretrained(path)
    state = model.state_dict()
    if dtype != "float32":
        state = {k: v.to(hf.DTYPES[dtype]) for k, v in state.items()}
    if change:
        state = change(state)
    if shards == 1:
        torch.save(state, path / "pytorch_model.bin", _use_new_zipfile_serialization=not legacy)
        return path
    keys = list(state)
    weight_map = {}
    for i in range(shards):
        name = f"pytorch_model-{i + 1:05d}-of-{shards:05d}.bin"
        part = {k: state[k] for k in keys[i::shards]}
        torch.save(part, path / name)
        weight_map.update({k: name for k in part})
    total = sum(v.numel() * v.element_size() for v in state.values())
    (path / "pytorch_model.bin.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2))
    return path


def resave(run_program, arch, path, out):
    """metaguard's load of `path`, saved back as safetensors: the tensors it
    loaded, one entry per tie."""
    run_program("metaguard_interop_hf_models", "resave", arch, path, out, "5GB")
    return load_file(str(out / "model.safetensors"))


def assert_loaded_as_transformers(run_program, arch, path, tmp_path):
    reference = hf.load_reference(arch, path).state_dict()
    loaded = resave(run_program, arch, path, tmp_path / "resaved")
    assert loaded, "metaguard saved no tensor"
    for name, tensor in loaded.items():
        assert name in reference, f"{name}: not in transformers' model"
        assert tensor.dtype == reference[name].dtype, name
        assert torch.equal(tensor, reference[name]), f"{name}: differs from transformers' load"
    for name in set(reference) - set(loaded):
        assert any(reference[name].data_ptr() == reference[kept].data_ptr() for kept in loaded), \
            f"{name}: neither saved by metaguard nor tied to a tensor it saved"


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dtype", ("float32", "float16", "bfloat16"))
def test_single_file_loads_as_transformers_loads_it(arch, dtype, run_program, tmp_path):
    path = write_bin(hf.make_model(arch), tmp_path / "ckpt", dtype)
    assert_loaded_as_transformers(run_program, arch, path, tmp_path)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dtype", ("float32", "bfloat16"))
def test_legacy_format_loads_as_transformers_loads_it(arch, dtype, run_program, tmp_path):
    # What PyTorch before 1.6 wrote, and many published checkpoints still are.
    path = write_bin(hf.make_model(arch), tmp_path / "ckpt", dtype, legacy=True)
    assert not (path / "pytorch_model.bin").read_bytes().startswith(b"PK")
    assert_loaded_as_transformers(run_program, arch, path, tmp_path)


@pytest.mark.parametrize("arch", ARCHS)
def test_shards_load_as_transformers_loads_them(arch, run_program, tmp_path):
    path = write_bin(hf.make_model(arch), tmp_path / "ckpt", shards=3)
    assert_loaded_as_transformers(run_program, arch, path, tmp_path)
    tensors = hf.inputs(arch, tmp_path / "inputs.safetensors")
    expected = hf.reference_outputs(arch, hf.load_reference(arch, path), tensors)
    run_program("metaguard_interop_hf_models", "logits", arch, path, tmp_path / "inputs.safetensors",
                tmp_path / "out.safetensors")
    actual = load_file(str(tmp_path / "out.safetensors"))
    for name in expected:
        hf.assert_close(actual[name], expected[name], f"{arch} sharded .bin {name}")


def test_views_and_ties_saved_as_views(run_program, tmp_path):
    # A transposed view (strides not contiguous) and a view at an offset into
    # a storage another entry shares, as torch.save writes them.
    model = hf.make_model("llama")

    def views(state):
        w = state["model.layers.0.mlp.down_proj.weight"]
        state["model.layers.0.mlp.down_proj.weight"] = w.t().contiguous().t()
        both = torch.cat([state["model.norm.weight"], state["model.layers.1.input_layernorm.weight"]])
        n = state["model.norm.weight"].numel()
        state["model.norm.weight"], state["model.layers.1.input_layernorm.weight"] = both[:n], both[n:]
        return state

    path = write_bin(model, tmp_path / "ckpt", change=views)
    assert not torch.load(path / "pytorch_model.bin", weights_only=True)[
        "model.layers.0.mlp.down_proj.weight"].is_contiguous()
    assert_loaded_as_transformers(run_program, "llama", path, tmp_path)


def test_a_folder_with_both_formats_loads_its_safetensors(run_program, tmp_path):
    path = write_bin(hf.make_model("gpt2", seed=1), tmp_path / "ckpt")
    hf.make_model("gpt2", seed=0).save_pretrained(tmp_path / "st")
    os.replace(tmp_path / "st" / "model.safetensors", path / "model.safetensors")
    reference = hf.load_reference("gpt2", path).state_dict()
    assert torch.equal(reference["transformer.wte.weight"],
                       load_file(str(path / "model.safetensors"))["transformer.wte.weight"])
    assert_loaded_as_transformers(run_program, "gpt2", path, tmp_path)


def refused(run_program, path):
    proc = run_program("metaguard_interop_hf_models", "logits", "gpt2", path, path / "none",
                       path / "out", check=False)
    assert proc.returncode == 3, proc.stderr
    assert "FormatError" in proc.stderr and str(path / "pytorch_model.bin") in proc.stderr
    return proc.stderr


def test_a_pickle_that_runs_code_is_refused_as_weights_only_refuses_it(run_program, tmp_path):
    path = write_bin(hf.make_model("gpt2"), tmp_path / "ckpt",
                     change=lambda state: {**state, "payload": os.system})
    with pytest.raises(Exception, match="Weights only load failed"):
        torch.load(path / "pytorch_model.bin", weights_only=True)
    error = refused(run_program, path)
    assert "'posix.system'" in error and "weights_only=True" in error


def test_a_training_checkpoint_is_not_a_state_dict(run_program, tmp_path):
    path = write_bin(hf.make_model("gpt2"), tmp_path / "ckpt",
                     change=lambda state: {"model": state, "epoch": 3})
    error = refused(run_program, path)
    assert "'model' holds a dict, not a tensor" in error and "model.state_dict()" in error
