"""accelerate's offload folder format, both directions (the C++ side is
interop_accelerate_offload.cpp):

- folders accelerate writes (offload_state_dict, disk_offload) open with
  metaguard's OffloadFolder with equal bytes, dtypes and shapes, and a model
  metaguard puts on "disk" through a device map backed by such a folder
  computes what accelerate's disk-offloaded model computes;
- folders metaguard writes (offload_tensors) load with accelerate's
  OffloadedWeightsLoader and disk_offload, and are byte for byte the folder
  accelerate writes for the same tensors.
"""
import json

import pytest
import torch
from accelerate import disk_offload, init_empty_weights
from accelerate.utils import OffloadedWeightsLoader, offload_state_dict
from safetensors.torch import save_file


class Net(torch.nn.Module):
    """The same layers as Net in interop_accelerate_offload.cpp."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.norm = torch.nn.LayerNorm(8)
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(self.norm(torch.relu(self.fc1(x))))


def net_input():
    # The input interop_accelerate_offload forward uses.
    return torch.arange(8, dtype=torch.float32).reshape(2, 4) / 8.0 - 0.5


def trained_net():
    torch.manual_seed(17)
    net = Net()
    with torch.no_grad():  # LayerNorm starts at ones/zeros: make it matter
        net.norm.weight.uniform_(0.5, 1.5)
        net.norm.bias.uniform_(-0.5, 0.5)
    return net


def every_dtype():
    """One tensor per dtype both sides support, plus a 0-dim one (accelerate
    stores it as one element) and a non-contiguous one."""
    torch.manual_seed(3)
    base = torch.randn(3, 5)
    return {
        "f32": base,
        "f16": base.to(torch.float16),
        "bf16": base.to(torch.bfloat16),
        "f64": base.to(torch.float64)[:2],
        "i64": torch.arange(-6, 6, dtype=torch.int64).reshape(3, 4),
        "i32": torch.arange(7, dtype=torch.int32),
        "i16": torch.tensor([-300, 2, 40], dtype=torch.int16),
        "i8": torch.tensor([-128, 0, 127], dtype=torch.int8),
        "u8": torch.tensor([0, 7, 255], dtype=torch.uint8),
        "flag": torch.tensor([True, False, True]),
        "scalar": torch.tensor(2.5),
        "strided": base.t(),
        "layer.0.weight": base[:1],
    }


def raw(t):
    return t.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


def dtype_name(t):
    return str(t.dtype).removeprefix("torch.")


def read_in_metaguard(run_program, folder, out):
    return json.loads(run_program("metaguard_interop_accelerate_offload", "read", folder, out).stdout)


def test_offload_state_dict_folder_reads_in_metaguard(run_program, tmp_path):
    tensors = every_dtype()
    offload_state_dict(tmp_path / "acc", tensors)
    listing = read_in_metaguard(run_program, tmp_path / "acc", tmp_path / "bytes")
    assert set(listing) == set(tensors)
    for name, t in tensors.items():
        assert listing[name] == {"dtype": dtype_name(t), "shape": list(t.shape)}, name
        assert (tmp_path / "bytes" / f"{name}.bin").read_bytes() == raw(t), name


def test_large_tensors_of_an_offload_state_dict_folder_read_in_metaguard(run_program, tmp_path):
    # From 8 MiB metaguard maps a .dat instead of copying it; these end
    # inside a 2 MiB page, as most real weights do.
    torch.manual_seed(5)
    tensors = {"big": torch.randn(3 * 1024 * 1024 + 5),
               "big_bf16": torch.randn(5 * 1024 * 1024 + 3).to(torch.bfloat16)}
    offload_state_dict(tmp_path / "acc", tensors)
    listing = read_in_metaguard(run_program, tmp_path / "acc", tmp_path / "bytes")
    for name, t in tensors.items():
        assert listing[name] == {"dtype": dtype_name(t), "shape": list(t.shape)}, name
        assert (tmp_path / "bytes" / f"{name}.bin").read_bytes() == raw(t), name


def test_disk_offload_folder_runs_under_a_metaguard_device_map(run_program, tmp_path):
    net = trained_net()
    state = {k: v.clone() for k, v in net.state_dict().items()}
    disk_offload(net, tmp_path / "acc", execution_device="cpu")
    with torch.no_grad():
        expected = net(net_input())

    listing = read_in_metaguard(run_program, tmp_path / "acc", tmp_path / "bytes")
    assert set(listing) == set(state)
    for name, t in state.items():
        assert (tmp_path / "bytes" / f"{name}.bin").read_bytes() == raw(t), name

    out = json.loads(run_program("metaguard_interop_accelerate_offload", "forward", tmp_path / "acc").stdout)
    got = torch.tensor(out).reshape(expected.shape)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)


def write_in_metaguard(run_program, tensors, tmp_path):
    source = tmp_path / "source.safetensors"
    save_file({k: v.contiguous().clone() for k, v in tensors.items()}, source)
    folder = tmp_path / "metaguard"
    run_program("metaguard_interop_accelerate_offload", "write", source, folder)
    return folder


def test_metaguard_folder_loads_with_offloaded_weights_loader(run_program, tmp_path):
    tensors = every_dtype()
    folder = write_in_metaguard(run_program, tensors, tmp_path)
    loader = OffloadedWeightsLoader(save_folder=str(folder))
    assert set(loader) == set(tensors)
    for name, t in tensors.items():
        got = loader[name]
        assert got.dtype == t.dtype and got.shape == t.shape, name
        assert raw(got) == raw(t), name


def test_metaguard_folder_is_the_folder_accelerate_writes(run_program, tmp_path):
    tensors = every_dtype()
    folder = write_in_metaguard(run_program, tensors, tmp_path)
    offload_state_dict(tmp_path / "acc", tensors)
    ours = json.loads((folder / "index.json").read_text())
    theirs = json.loads((tmp_path / "acc" / "index.json").read_text())
    assert ours == theirs
    for name in tensors:
        assert (folder / f"{name}.dat").read_bytes() == (tmp_path / "acc" / f"{name}.dat").read_bytes(), name


def test_metaguard_folder_drives_accelerate_disk_offload(run_program, tmp_path):
    net = trained_net()
    with torch.no_grad():
        expected = net(net_input())
    folder = write_in_metaguard(run_program, net.state_dict(), tmp_path)
    with init_empty_weights():
        empty = Net()
    # disk_offload takes an existing index.json as the weights to use.
    disk_offload(empty, folder, execution_device="cpu")
    with torch.no_grad():
        got = empty(net_input())
    torch.testing.assert_close(got, expected, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2])
def test_float8_entries_are_refused_by_name_and_spare_the_rest(run_program, tmp_path, dtype):
    """A deliberate difference: accelerate stores float8 tensors (as int8 bits
    under their float8 name); the LibTorch metaguard builds against has no
    float8 type, so OffloadFolder refuses that entry with an OffloadError that
    names it, and the other entries still load."""
    tensors = {"w": torch.randn(2, 3).to(dtype), "b": torch.randn(3)}
    offload_state_dict(tmp_path / "acc", tensors)
    listing = read_in_metaguard(run_program, tmp_path / "acc", tmp_path / "bytes")
    assert "error" in listing["w"], listing
    assert "w" in listing["w"]["error"] and str(dtype).removeprefix("torch.") in listing["w"]["error"]
    assert listing["b"] == {"dtype": "float32", "shape": [3]}
    assert (tmp_path / "bytes" / "b.bin").read_bytes() == raw(tensors["b"])
