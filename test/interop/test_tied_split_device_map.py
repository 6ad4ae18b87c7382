"""A device map that splits a tie between the CPU and disk: a tiny
Mistral-like model with tied embeddings (lm_head.weight is
model.embed_tokens.weight), saved by transformers (one copy of the tied
tensor), loaded with a map that puts one side of the tie on "cpu" and the
other on "disk".

accelerate warns ("Tied parameters are on different devices") and loads;
metaguard warns, naming the tie, and keeps the one tensor in memory on the
CPU for both names (runtime/src/loading/tied_placements.h says why). What each
library does with these maps, as measured with the pinned versions
(transformers 5.23, accelerate 1.15):

| map | accelerate's load_checkpoint_and_dispatch | transformers' from_pretrained | metaguard |
|---|---|---|---|
| embed_tokens cpu, lm_head disk (the only disk entry) | warns, loads, logits as without a map (with another module on disk too, its forward raises KeyError 'lm_head.weight') | loads, then its forward raises KeyError 'lm_head.weight' (the offload index has no tied copy) | warns, loads, logits as accelerate's |
| lm_head cpu, embed_tokens disk | warns, then raises ValueError ("weight is on the meta device, we need a `value`") | raises the same ValueError | warns, loads, logits as transformers' load without a map |

The failures are pinned: when a later version loads these maps, the test
says so and its comparison can move to that load."""
import json

import pytest
import torch
from accelerate import init_empty_weights, load_checkpoint_and_dispatch
from safetensors.torch import load_file

import hf_models as hf

torch.set_num_threads(1)

ARCH = "mistral"
REST = {"model.layers.0": "cpu", "model.layers.1": "disk", "model.norm": "cpu", "model.rotary_emb": "cpu"}
# accelerate loads this split only when the head is the one disk entry: with
# a decoder layer on disk too, its offload folder gets no copy of the tied
# head and its forward raises KeyError 'lm_head.weight'.
EMBED_CPU_HEAD_DISK = {"model.embed_tokens": "cpu", "model.layers": "cpu", "model.norm": "cpu",
                       "model.rotary_emb": "cpu", "lm_head": "disk"}
HEAD_CPU_EMBED_DISK = {"model.embed_tokens": "disk", **REST, "lm_head": "cpu"}
META_VALUE_ERROR = "weight is on the meta device, we need a `value`"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    path = hf.save_checkpoint(hf.make_model(ARCH), tmp_path_factory.mktemp("tied") / "ckpt")
    assert "lm_head.weight" not in hf.checkpoint_keys(path), "transformers saves a tie once"
    return path


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    path = tmp_path_factory.mktemp("inputs") / "inputs.safetensors"
    return path, hf.inputs(ARCH, path)


def accelerate_model(path, device_map, offload_folder):
    config_class, model_class, _ = hf.ARCHS[ARCH]
    config = config_class.from_pretrained(path)
    config._attn_implementation = "eager"
    with init_empty_weights():
        model = model_class(config)
    model.tie_weights()  # accelerate's guide: the checkpoint holds a tied head once
    return load_checkpoint_and_dispatch(model, str(path), device_map=device_map,
                                        offload_folder=str(offload_folder)).eval()


def transformers_model(path, device_map, offload_folder):
    return hf.ARCHS[ARCH][1].from_pretrained(path, dtype=torch.float32, attn_implementation="eager",
                                             device_map=device_map, offload_folder=str(offload_folder)).eval()


def metaguard_logits(run_program, path, inputs_path, out, device_map):
    proc = run_program("metaguard_interop_hf_models", "dispatch", ARCH, path, inputs_path, out,
                       json.dumps(device_map))
    offloaded = json.loads(proc.stdout)
    return load_file(str(out))["logits"], offloaded, proc.stderr


def expect_tie_warning(stderr, head, embed):
    assert (f"the device map puts tied parameters 'lm_head.weight' on {head} and "
            f"'model.embed_tokens.weight' on {embed}") in stderr, stderr
    assert "it stays in memory on cpu for all of them" in stderr, stderr


def test_embeddings_on_cpu_head_on_disk_computes_what_accelerate_computes(
        checkpoint, inputs, run_program, tmp_path, caplog):
    inputs_path, tensors = inputs
    with caplog.at_level("WARNING"):
        model = accelerate_model(checkpoint, EMBED_CPU_HEAD_DISK, tmp_path / "offload")
    assert "Tied parameters are on different devices" in caplog.text
    expected = hf.reference_outputs(ARCH, model, tensors)["logits"]
    reference = hf.reference_outputs(ARCH, hf.load_reference(ARCH, checkpoint), tensors)["logits"]
    hf.assert_close(expected, reference, "accelerate")

    # transformers' own load of the map: it loads, and its forward cannot find
    # the head's offloaded copy.
    split = transformers_model(checkpoint, EMBED_CPU_HEAD_DISK, tmp_path / "offload_tf")
    with pytest.raises(KeyError, match="lm_head.weight"):
        hf.reference_outputs(ARCH, split, tensors)

    logits, offloaded, stderr = metaguard_logits(run_program, checkpoint, inputs_path, tmp_path / "out.safetensors",
                                                 EMBED_CPU_HEAD_DISK)
    expect_tie_warning(stderr, head="disk", embed="cpu")
    assert offloaded == [], "the head's one tensor is the embeddings', kept in memory"
    hf.assert_close(logits, expected, "metaguard")


def test_head_on_cpu_embeddings_on_disk_loads_where_transformers_raises(
        checkpoint, inputs, run_program, tmp_path):
    inputs_path, tensors = inputs
    with pytest.raises(ValueError, match=META_VALUE_ERROR):
        transformers_model(checkpoint, HEAD_CPU_EMBED_DISK, tmp_path / "offload_tf")
    with pytest.raises(ValueError, match=META_VALUE_ERROR):
        accelerate_model(checkpoint, HEAD_CPU_EMBED_DISK, tmp_path / "offload")
    reference = hf.reference_outputs(ARCH, hf.load_reference(ARCH, checkpoint), tensors)["logits"]

    logits, offloaded, stderr = metaguard_logits(run_program, checkpoint, inputs_path, tmp_path / "out.safetensors",
                                                 HEAD_CPU_EMBED_DISK)
    expect_tie_warning(stderr, head="cpu", embed="disk")
    assert offloaded and all(name.startswith("model.layers.1.") for name in offloaded), offloaded
    hf.assert_close(logits, reference, "metaguard")
