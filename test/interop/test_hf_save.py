"""metaguard -> transformers: what metaguard::save_pretrained writes loads
with transformers' from_pretrained (no missing or unexpected key, equal
tensors, equal outputs) and with safetensors' safe_open (equal tensors,
transformers' metadata)."""
import json

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file

import hf_models as hf

torch.set_num_threads(1)

ARCHS = ("gpt2", "llama", "bert", "bert-mlm")


def state_of(path):
    """Every tensor of a checkpoint folder, read with safe_open, and the
    metadata of each file."""
    tensors, metadata = {}, {}
    for file in sorted(path.glob("*.safetensors")):
        with safe_open(str(file), framework="pt") as f:
            metadata[file.name] = f.metadata()
            for name in f.keys():
                assert name not in tensors, f"{name} is in two files"
                tensors[name] = f.get_tensor(name)
    return tensors, metadata


def check_files(path, sharded):
    """The layout transformers writes: one model.safetensors, or shards named
    by an index whose weight_map matches their contents."""
    tensors, metadata = state_of(path)
    config = json.loads((path / "config.json").read_text())
    for name, meta in metadata.items():
        assert meta.get("format") == "pt", f"{name}: metadata {meta}"
        # metaguard's one addition: the config committed with the weights.
        assert set(meta) <= {"format", "metaguard.config"}, f"{name}: metadata {meta}"
        if "metaguard.config" in meta:
            assert json.loads(meta["metaguard.config"]) == config
    index = path / "model.safetensors.index.json"
    assert index.exists() == sharded
    if sharded:
        weight_map = json.loads(index.read_text())["weight_map"]
        assert set(weight_map) == set(tensors)
        for name, file in weight_map.items():
            with safe_open(str(path / file), framework="pt") as f:
                assert name in f.keys()
    return tensors


def load_with_transformers(arch, path):
    model, info = hf.ARCHS[arch][1].from_pretrained(
        path, dtype=torch.float32, attn_implementation="eager", output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    assert not info["mismatched_keys"], info
    return model.eval()


@pytest.mark.parametrize("sharded", [False, True], ids=["single", "sharded"])
@pytest.mark.parametrize("arch", ARCHS)
def test_resaved_checkpoint_loads_in_transformers(arch, sharded, run_program, tmp_path):
    original = hf.make_model(arch)
    source = hf.save_checkpoint(original, tmp_path / "hf")
    out = tmp_path / "metaguard"
    run_program("metaguard_interop_hf_models", "resave", arch, source, out,
                "20KB" if sharded else "5GB")
    tensors = check_files(out, sharded)
    # The same keys as transformers' own save: tied copies and
    # non-persistent buffers left out.
    expected = hf.read_tensors(source / "model.safetensors")
    assert set(tensors) == set(expected)
    for name, tensor in expected.items():
        assert torch.equal(tensors[name], tensor), name
    assert json.loads((out / "config.json").read_text()) == \
        json.loads((source / "config.json").read_text())

    reloaded = load_with_transformers(arch, out)
    for name, tensor in original.state_dict().items():
        assert torch.equal(reloaded.state_dict()[name], tensor), name
    inputs = hf.inputs(arch, tmp_path / "inputs.safetensors")
    expected_out = hf.reference_outputs(arch, original, inputs)
    for name, value in hf.reference_outputs(arch, reloaded, inputs).items():
        assert torch.equal(value, expected_out[name]), name


@pytest.mark.parametrize("arch", ARCHS)
def test_model_built_in_cpp_runs_the_same_in_transformers(arch, run_program, tmp_path):
    # A model built and initialised by metaguard::from_config: transformers
    # loads what save_pretrained wrote and computes the C++ model's outputs.
    config = hf.make_model(arch).config
    config.save_pretrained(tmp_path / "config")
    inputs = hf.inputs(arch, tmp_path / "inputs.safetensors")
    out = tmp_path / "metaguard"
    run_program("metaguard_interop_hf_models", "random", arch, tmp_path / "config/config.json",
                out, "5GB", tmp_path / "inputs.safetensors", tmp_path / "outputs.safetensors")
    check_files(out, sharded=False)
    model = load_with_transformers(arch, out)
    expected = hf.reference_outputs(arch, model, inputs)
    actual = load_file(str(tmp_path / "outputs.safetensors"))
    for name in actual:
        torch.testing.assert_close(actual[name], expected[name], rtol=hf.RTOL, atol=hf.ATOL)


def transformers_saved_dtype(model, path):
    model.save_pretrained(path)
    return json.loads((path / "config.json").read_text())["dtype"]


@pytest.mark.parametrize("change", [(), ("--to", "bfloat16"), ("--first-to", "float16")],
                         ids=["converting-load", "to-dtype", "mixed"])
def test_saved_config_names_the_dtype_of_the_saved_weights(change, run_program, tmp_path):
    # A float16 checkpoint loaded into the float32 C++ model (then converted
    # as `change` says) and saved: config.json's dtype is the one
    # transformers' own save writes for the same model, so that
    # transformers' from_pretrained of the save builds the model in the
    # dtype of its weights.
    source = hf.save_checkpoint(hf.make_model("gpt2"), tmp_path / "hf", "float16")
    assert json.loads((source / "config.json").read_text())["dtype"] == "float16"
    out = tmp_path / "metaguard"
    run_program("metaguard_interop_hf_models", "resave", "gpt2", source, out, "5GB", *change)

    reference = hf.ARCHS["gpt2"][1].from_pretrained(source, dtype=torch.float32)
    if change and change[0] == "--to":
        reference.to(hf.DTYPES[change[1]])
    elif change:
        first = next(p for p in reference.parameters() if p.is_floating_point())
        first.data = first.data.to(hf.DTYPES[change[1]])
    expected = transformers_saved_dtype(reference, tmp_path / "transformers")
    saved = json.loads((out / "config.json").read_text())
    assert saved["dtype"] == expected
    first_tensor = hf.read_tensors(out / "model.safetensors")["transformer.wte.weight"]
    assert str(first_tensor.dtype) == "torch." + expected
    reloaded = hf.ARCHS["gpt2"][1].from_pretrained(out)
    assert str(reloaded.dtype) == "torch." + expected
