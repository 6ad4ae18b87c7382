"""The Python side of the seed scenarios: for each case of the C++ tables in
test/integration/ (meta_scope_cases.h, offload_cases.h), the same steps with
transformers and accelerate. A case returns the model whose weights must be
real afterwards (or None); its outcome is "raises" when it throws, "empty"
when it returned a model still holding meta parameters (the silent failure
metaguard turns into an error), else "fine"."""
import contextlib
import pathlib

import torch
from accelerate import dispatch_model, init_empty_weights
from accelerate.hooks import remove_hook_from_module
from transformers import BertConfig, BertModel


def tiny_config():
    return BertConfig(vocab_size=32, hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=16, max_position_embeddings=16)


class Paths:
    """A saved tiny BERT (`tiny`), and `scratch`, an empty folder."""

    def __init__(self, work: pathlib.Path):
        self.tiny = work / "tiny"
        self.scratch = work / "scratch"
        self.scratch.mkdir(parents=True)
        torch.manual_seed(0)
        BertModel(tiny_config()).save_pretrained(self.tiny)


@contextlib.contextmanager
def default_device(device):
    torch.set_default_device(device)
    try:
        yield
    finally:
        torch.set_default_device(None)


def load(p, **kwargs):
    return BertModel.from_pretrained(p.tiny, **kwargs)


# --- meta_scope_cases.h -----------------------------------------------------

def load_outside_any_scope(p):
    return load(p)


def load_inside_init_empty_weights(p):
    with init_empty_weights():
        return load(p)


def load_inside_meta_device_scope(p):
    with torch.device("meta"):
        return load(p)


def load_in_cpu_scope_nested_in_meta(p):
    with torch.device("meta"):
        with torch.device("cpu"):
            return load(p)


def load_after_meta_default_device(p):
    with default_device("meta"):
        return load(p)


def load_after_default_device_reset(p):
    torch.set_default_device("meta")
    torch.set_default_device("cpu")
    try:
        return load(p)
    finally:
        torch.set_default_device(None)


def load_with_explicit_device_map_in_scope(p):
    with init_empty_weights():
        return load(p, device_map="cpu")


def from_config_inside_scope(p):
    with init_empty_weights():
        BertModel(BertConfig.from_pretrained(p.tiny))
    return None  # an empty skeleton is what was asked for


def load_in_with_meta_device_lambda(p):
    def with_meta_device(f):
        with torch.device("meta"):
            return f()
    return with_meta_device(lambda: load(p))


def load_after_scope_ended(p):
    with init_empty_weights():
        pass
    return load(p)


def load_after_temporary_guard(p):
    init_empty_weights()  # a context manager never entered
    return load(p)


def load_through_helper_in_scope(p):
    with torch.device("meta"):
        return load(p)


class Composite(torch.nn.Module):
    def __init__(self, encoder_dir):
        super().__init__()
        self.encoder = BertModel.from_pretrained(encoder_dir)
        self.head = torch.nn.Linear(8, 2)


def build_composite_in_scope(p):
    with init_empty_weights():
        return Composite(p.tiny).encoder


def load_weights_into_module_in_scope(p):
    from accelerate import load_checkpoint_in_model
    model = BertModel(tiny_config())
    with torch.device("meta"):
        load_checkpoint_in_model(model, p.tiny)
    return model


def load_composite_checkpoint(p):
    # transformers builds a model under a meta device context, as metaguard
    # does; a pretrained model loaded by the constructor runs inside it.
    from transformers import PreTrainedModel

    class CompositeModel(PreTrainedModel):
        config_class = BertConfig

        def __init__(self, config):
            super().__init__(config)
            self.encoder = BertModel.from_pretrained(config.encoder_dir)
            self.head = torch.nn.Linear(8, 2)
            self.post_init()

    config = BertConfig.from_pretrained(p.tiny)
    config.encoder_dir = str(p.tiny)
    CompositeModel(config).save_pretrained(p.scratch / "composite")
    return CompositeModel.from_pretrained(p.scratch / "composite")


# --- offload_cases.h: fc1 ~ embeddings and pooler, fc2 ~ encoder -----------

def disk_map():
    return {"embeddings": "cpu", "encoder": "disk", "pooler": "cpu"}


def load_with_disk(p):
    return load(p, device_map=disk_map(), offload_folder=p.scratch / "offload")


def move_model_with_disk_map(p):
    load_with_disk(p).to("cpu")


def move_model_with_single_device_map(p):
    return load(p, device_map="cpu").to("cpu")


def move_model_with_map_without_disk(p):
    return load(p, device_map={"embeddings": "cpu", "encoder": "cpu", "pooler": "cpu"}).to("cpu")


def move_model_with_offload_folder_only(p):
    return load(p, offload_folder=p.scratch / "unused").to("cpu")


def move_after_dispatch_without_disk(p):
    m = load(p)
    dispatch_model(m, {"embeddings": "cpu", "encoder": "cpu", "pooler": "cpu"})
    return m.to("cpu")


def move_after_dispatch_to_disk(p):
    m = load(p)
    dispatch_model(m, disk_map(), offload_dir=p.scratch / "offload")
    m.to("cpu")


def back_in_memory_then_move(p):
    m = load_with_disk(p)
    dispatch_model(m, {"": "cpu"})
    return m.to("cpu")


def dtype_only_to(p):
    load_with_disk(p).to(torch.float64)


def save_after_hooks_removed(p):
    m = load_with_disk(p)
    remove_hook_from_module(m, recurse=True)
    m.save_pretrained(p.scratch / "saved")
    return BertModel.from_pretrained(p.scratch / "saved")


def dispatch_again_after_hooks_removed(p):
    m = load_with_disk(p)
    remove_hook_from_module(m, recurse=True)
    dispatch_model(m, {"": "cpu"})
    return m


def read_copy_before_removing_hooks(p):
    m = load_with_disk(p)
    layer = m.encoder.layer[0].attention.self.query
    w = layer._hf_hook.weights_map["weight"].clone()
    remove_hook_from_module(m, recurse=True)
    w.add_(1)


def reload_after_hooks_removed(p):
    m = load_with_disk(p)
    remove_hook_from_module(m, recurse=True)
    m = load_with_disk(p)
    m.save_pretrained(p.scratch / "reloaded")
    return BertModel.from_pretrained(p.scratch / "reloaded")


CASES = {name: f for name, f in globals().items()
         if callable(f) and not name.startswith("_") and f.__module__ == __name__
         and name not in {"tiny_config", "Paths", "default_device", "load", "Composite",
                          "disk_map", "load_with_disk", "outcome"}}


def outcome(name, work: pathlib.Path):
    """Runs case `name` in the fresh folder `work`: "raises", "empty" or "fine",
    and the detail (the exception or the meta parameters)."""
    paths = Paths(work)
    try:
        model = CASES[name](paths)
    except Exception as e:  # the Python stack's errors have no common type
        return "raises", f"{type(e).__name__}: {e}"
    finally:
        torch.set_default_device(None)
    if model is not None:
        meta = [n for n, t in model.state_dict().items() if t.is_meta]
        if meta:
            return "empty", f"{len(meta)} tensors on meta, e.g. {meta[0]}"
    return "fine", ""
