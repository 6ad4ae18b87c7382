#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into fuzz/corpus/<target>/.

Each seed is a known attack shape (or a valid input for the fuzzer to mutate
from), named after what it is. Python standard library only; deterministic,
so running it again rewrites the same files.
"""
import json
import pathlib
import shutil
import struct

ROOT = pathlib.Path(__file__).resolve().parent / "corpus"
LFS = (b"version https://git-lfs.github.com/spec/v1\n"
       b"oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
       b"size 12345\n")


def st_file(header, data=b"", length=None, pad=True):
    """A safetensors file: 8-byte little-endian header length, header, data."""
    text = header if isinstance(header, bytes) else json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    n = len(text) if length is None else length
    return struct.pack("<Q", n) + text + data


def f32(*values):
    return struct.pack("<%df" % len(values), *values)


def small_model(emb=None, weight=None, bias=None, mask=b"\x01\x01\x01", extra=None, dtype="F32"):
    """model.safetensors for the load_weights target's model (emb 6x4, fc 4->3, mask[3])."""
    emb = emb if emb is not None else f32(*[i / 10 for i in range(24)])
    weight = weight if weight is not None else f32(*[(i - 6) / 7 for i in range(12)])
    bias = bias if bias is not None else f32(0.5, -0.5, 0.25)
    tensors = [("emb.weight", dtype, [6, 4], emb), ("fc.weight", dtype, [3, 4], weight),
               ("fc.bias", dtype, [3], bias), ("mask", "BOOL", [3], mask)]
    if extra:
        tensors += extra
    header, data = {"__metadata__": {"format": "pt"}}, b""
    for name, dt, shape, raw in tensors:
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    return st_file(header, data)


def safetensors_seeds():
    ok = {"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
          "b": {"dtype": "I64", "shape": [1], "data_offsets": [16, 24]}}
    data = f32(1, 2, 3, 4) + struct.pack("<q", 7)
    yield "valid", st_file(ok, data)
    yield "valid_metadata", st_file(dict(ok, __metadata__={"format": "pt"}), data)
    yield "valid_empty", st_file({})
    yield "valid_zero_dim", st_file({"e": {"dtype": "F32", "shape": [0, 3], "data_offsets": [0, 0]}})
    yield "valid_bf16_bool", st_file({"h": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]},
                                      "m": {"dtype": "BOOL", "shape": [2], "data_offsets": [4, 6]}},
                                     b"\x80\x3f\x00\x40\x01\x00")
    yield "misaligned_unpadded", st_file({"x": {"dtype": "F64", "shape": [1], "data_offsets": [0, 8]}},
                                         struct.pack("<d", 1.5), pad=False)
    yield "header_length_bomb", struct.pack("<Q", 0xFFFFFFFFFFFFFFF0) + b"{}"
    yield "header_length_under_limit_past_eof", struct.pack("<Q", 99_999_999) + b"{}"
    yield "header_length_past_eof", st_file(ok, data, length=4096)
    yield "header_length_zero", st_file(b"", data)
    yield "too_short", b"\x02\x00\x00"
    yield "empty_file", b""
    yield "overlap", st_file({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                              "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, f32(1, 2, 3))
    yield "gap", st_file({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                          "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}}, f32(1, 2, 3))
    yield "end_before_begin", st_file({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}}, f32(1))
    yield "offset_out_of_range", st_file({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                                          "b": {"dtype": "F32", "shape": [1024], "data_offsets": [4, 4100]}},
                                         f32(1))
    yield "offset_above_2_63", st_file(b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[18446744073709551615,0]}}')
    yield "trailing_bytes", st_file(ok, data + b"junk")
    yield "shape_overflow_64", st_file({"a": {"dtype": "F32", "shape": [4294967296, 4294967296, 16],
                                              "data_offsets": [0, 0]}})
    yield "shape_overflow_bits", st_file({"a": {"dtype": "F64", "shape": [2305843009213693952],
                                                "data_offsets": [0, 0]}})
    yield "shape_overflow_with_zero", st_file({"a": {"dtype": "F32", "shape": [0, 9223372036854775807, 4],
                                                     "data_offsets": [0, 0]}})
    yield "shape_negative", st_file(b'{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}', f32(1))
    yield "shape_fractional", st_file(b'{"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}}', f32(1))
    yield "offset_negative", st_file(b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}}', f32(1))
    yield "offset_fractional", st_file(b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4.0]}}', f32(1))
    yield "offset_exponent", st_file(b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4e0]}}', f32(1))
    yield "unknown_dtype", st_file({"a": {"dtype": "F128", "shape": [1], "data_offsets": [0, 16]}}, b"\0" * 16)
    yield "unloadable_dtype_u16", st_file({"a": {"dtype": "U16", "shape": [2], "data_offsets": [0, 4]}}, b"\1\0\2\0")
    yield "sub_byte_dtype_f4", st_file({"a": {"dtype": "F4", "shape": [3], "data_offsets": [0, 2]}}, b"\0\0")
    yield "bool_bad_byte", st_file({"a": {"dtype": "BOOL", "shape": [2], "data_offsets": [0, 2]}}, b"\x01\x07")
    yield "duplicate_names", st_file(b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
                                     b'"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}', b"\1\2")
    yield "non_utf8_name", st_file(b'{"\xff\xfe":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"\1")
    yield "overlong_utf8", st_file(b'{"\xc0\xaf":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"\1")
    yield "nul_in_name", st_file(b'{"a\\u0000b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"\1")
    yield "raw_nul_in_header", st_file(b'{"a\x00":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"\1")
    yield "deeply_nested", st_file(b'{"__metadata__":' + b"[" * 5000 + b"]" * 5000 + b"}")
    yield "metadata_not_strings", st_file({"__metadata__": {"format": 3}})
    yield "header_not_object", st_file(b"[1,2,3]")
    yield "entry_not_object", st_file({"a": [1]})
    yield "missing_fields", st_file({"a": {"dtype": "F32"}})
    yield "git_lfs_pointer", LFS
    yield "truncated_json", st_file(b'{"a":{"dtype":"F32","sha', pad=False)


def index_seeds():
    def index(weight_map, **extra):
        return json.dumps(dict({"metadata": {"total_size": 28}, "weight_map": weight_map}, **extra)).encode()
    s1, s2 = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
    good = {"a": s1, "b": s1, "c": s2}
    yield "valid", index(good)
    yield "wrong_shard", index({"a": s2, "b": s1, "c": s2})
    yield "missing_tensor", index({"a": s1, "c": s2})
    yield "extra_tensor", index(dict(good, d=s2))
    yield "missing_shard_file", index(dict(good, c="model-00003-of-00003.safetensors"))
    yield "dotdot_path", index(dict(good, c="../outside.safetensors"))
    yield "dotdot_inner", index(dict(good, c="sub/../../outside.safetensors"))
    yield "absolute_path", index(dict(good, c="/etc/passwd"))
    yield "nul_in_file_name", index(dict(good, c="model-00002-of-00002.safetensors\u0000.txt"))
    yield "empty_file_name", index(dict(good, c=""))
    yield "folder_as_shard", index(dict(good, c="."))
    yield "not_a_string", index(dict(good, c=2))
    yield "weight_map_array", index([s1, s2])
    yield "no_weight_map", json.dumps({"metadata": {}}).encode()
    yield "duplicate_keys", b'{"weight_map":{"a":"%s","a":"%s","b":"%s","c":"%s"}}' % (
        s1.encode(), s2.encode(), s1.encode(), s2.encode())
    yield "non_utf8", b'{"weight_map":{"a\xff":"x"}}'
    yield "deeply_nested", b'{"metadata":' + b"[" * 5000 + b"]" * 5000 + b',"weight_map":{}}'
    yield "git_lfs_pointer", LFS
    yield "not_json", b"\x00\x01 garbage"
    yield "empty", b""


def offload_seeds():
    def folder(index, dat):
        return (index if isinstance(index, bytes) else json.dumps(index).encode()) + b"\n@@\n" + dat
    w = {"dtype": "float32", "shape": [2, 2]}
    b = {"dtype": "float32", "shape": [2]}
    yield "valid", folder({"w": w, "b": b}, f32(1, 2, 3, 4))
    yield "valid_bf16", folder({"w": {"dtype": "bfloat16", "shape": [4]}, "b": {"dtype": "int16", "shape": [2]}},
                               b"\x80\x3f" * 4)
    yield "valid_bool", folder({"w": {"dtype": "bool", "shape": [2]}}, b"\x01\x00")
    yield "bool_bad_byte", folder({"w": {"dtype": "bool", "shape": [2]}}, b"\x01\x09")
    yield "scalar", folder({"w": {"dtype": "float64", "shape": []}}, struct.pack("<d", 2.5))
    yield "empty_tensor", folder({"w": {"dtype": "float32", "shape": [0, 5]}}, b"")
    yield "truncated_dat", folder({"w": w}, f32(1, 2))
    yield "long_dat", folder({"w": w}, f32(1, 2, 3, 4, 5))
    yield "missing_dat", folder({"w": w, "nothere": b}, f32(1, 2, 3, 4))
    yield "shape_overflow_64", folder({"w": {"dtype": "float32", "shape": [4294967296, 4294967296]}}, b"")
    yield "shape_bytes_overflow", folder({"w": {"dtype": "float32", "shape": [4611686018427387904]}}, b"")
    yield "shape_negative", folder({"w": {"dtype": "float32", "shape": [-1]}}, b"")
    yield "shape_fractional", folder({"w": {"dtype": "float32", "shape": [1.5]}}, f32(1, 2))
    yield "shape_huge_unsigned", folder(b'{"w":{"dtype":"float32","shape":[18446744073709551615]}}', b"")
    yield "unknown_dtype", folder({"w": {"dtype": "float128", "shape": [1]}}, b"\0" * 16)
    yield "dtype_not_string", folder({"w": {"dtype": 4, "shape": [1]}}, f32(1))
    yield "dotdot_name", folder({"../w": w, "..": w}, f32(1, 2, 3, 4))
    yield "absolute_name", folder({"/etc/passwd": w}, f32(1, 2, 3, 4))
    yield "nul_in_name", folder({"w\u0000x": w}, f32(1, 2, 3, 4))
    yield "duplicate_keys", folder(b'{"w":{"dtype":"float32","shape":[2,2]},"w":{"dtype":"int8","shape":[1]}}',
                                   f32(1, 2, 3, 4))
    yield "non_utf8", folder(b'{"w\xff":{"dtype":"float32","shape":[1]}}', f32(1))
    yield "deeply_nested", folder(b'{"w":' + b"[" * 5000 + b"]" * 5000 + b"}", b"")
    yield "index_not_object", folder(b"[1]", b"")
    yield "git_lfs_pointer", folder(LFS, b"")
    yield "empty", b""


def config_seeds():
    yield "valid", json.dumps({"vocab_size": 50, "hidden_size": 16, "architectures": ["Tiny"]}).encode()
    yield "array", b"[1, 2]"
    yield "scalar", b"42"
    yield "empty", b""
    yield "truncated", b'{"vocab_size": 5'
    yield "non_utf8", b'{"name": "\xff\xfe"}'
    yield "nul_bytes", b'{"a"\x00: 1}'
    yield "escaped_nul", b'{"a\\u0000": 1}'
    yield "lone_surrogate", b'{"a": "\\ud800"}'
    yield "deeply_nested_arrays", b"[" * 10000 + b"]" * 10000
    yield "deeply_nested_objects", b'{"a":' * 3000 + b"1" + b"}" * 3000
    yield "duplicate_keys", b'{"a": 1, "a": 2}'
    yield "huge_number", b'{"a": 1e999999}'
    yield "negative_fraction", b'{"hidden_size": -1.5}'
    yield "bom", b'\xef\xbb\xbf{"a": 1}'
    yield "git_lfs_pointer", LFS


def size_seeds():
    yield "valid_units", b"5GB\n10GiB\n512MiB\n100KB\n1234\n1.5GB\n 7 kib "
    yield "placements", b"disk\ncpu\ncuda:0\nmeta\ncuda\nlayers.1\ndisk"
    yield "overflow", b"9223372036854775807\n9223372036854775808TB\n99999999999999999999999999TiB"
    yield "long_digits", b"1" * 400 + b"GB"
    yield "dot_only", b".\n.GB\n..\n1.2.3"
    yield "negative", b"-5GB\n-1\n- 3"
    yield "exponent", b"1e9\n1E400GB\ninf\nnan\n0x10"
    yield "bad_units", b"5XB\n5 G B\nGB\n5gbb"
    yield "bad_devices", b"cuda:-1\ncuda:99999999999999999999\ncpu:0:1\n\xff\xfe\ncuda:\n:0\nCUDA:0"
    yield "nul_bytes", b"5\x00GB\ndisk\x00\ncpu\x00:0"
    yield "empty_lines", b"\n\n\n"


def load_weights_seeds():
    yield "valid", small_model()
    yield "valid_f16", small_model(emb=b"\0\x3c" * 24, weight=b"\0\x3c" * 12, bias=b"\0\x3c" * 3, dtype="F16")
    yield "mask_bad_byte", small_model(mask=b"\x01\x05\x00")
    yield "missing_key", st_file({"fc.bias": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]}},
                                 f32(1, 2, 3))
    yield "unexpected_key", small_model(extra=[("extra", "F32", [1], f32(9))])
    yield "wrong_shape", st_file({"fc.bias": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}},
                                 f32(1, 2, 3, 4))
    yield "unloadable_dtype", small_model(extra=[("fc.extra", "U32", [1], b"\0\0\0\0")])
    yield "bias_u16", st_file({"fc.bias": {"dtype": "U16", "shape": [3], "data_offsets": [0, 6]}}, b"\0" * 6)
    yield "nan_inf", small_model(bias=f32(float("nan"), float("inf"), float("-inf")))
    yield "int_weights", small_model(emb=struct.pack("<24q", *range(24)), weight=struct.pack("<12q", *range(12)),
                                     bias=struct.pack("<3q", 1, 2, 3), dtype="I64")
    yield "git_lfs_pointer", LFS
    yield "header_length_bomb", struct.pack("<Q", 1 << 62)


def pk_text(text):
    data = text.encode()
    return b"X" + struct.pack("<I", len(data)) + data


def pk_int(n):
    return b"J" + struct.pack("<i", n)


def pk_tuple(values):
    return b"(" + b"".join(pk_int(v) for v in values) + b"t"


def state_dict_pickle(entries, extra=b"", legacy=False):
    """torch.save's pickle (protocol 2) of an OrderedDict of tensors; entries:
    (name, storage class, storage key, numel, offset, sizes, strides)."""
    out = b"\x80\x02ccollections\nOrderedDict\nq\x00)R("
    for name, storage, key, numel, offset, sizes, strides in entries:
        out += pk_text(name) + b"ctorch._utils\n_rebuild_tensor_v2\n(("
        out += pk_text("storage") + b"ctorch\n" + storage.encode() + b"\n" + pk_text(key)
        out += pk_text("cpu") + pk_int(numel) + (b"N" if legacy else b"") + b"tQ" + pk_int(offset)
        out += pk_tuple(sizes) + pk_tuple(strides) + b"\x89h\x00)RtR"
    return out + extra + b"u."


def torch_zip(pickle, storages, byteorder=b"little"):
    """The zip archive torch.save writes (stored, a top folder per file)."""
    import io
    import zipfile
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        def put(name, data):
            info = zipfile.ZipInfo("archive/" + name, date_time=(2020, 1, 1, 0, 0, 0))
            archive.writestr(info, data)
        put("data.pkl", pickle)
        put("byteorder", byteorder)
        for key, data in storages.items():
            put("data/" + key, data)
        put("version", b"3\n")
    return buffer.getvalue()


LEGACY_MAGIC = b"\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19"


def legacy_file(entries, storages, little_endian=True):
    """torch.save's format before PyTorch 1.6: magic number, protocol
    version, system information, the state dict, the storage keys, then each
    storage as an 8-byte element count and its bytes."""
    out = b"\x80\x02" + LEGACY_MAGIC + b"."
    out += b"\x80\x02M\xe9\x03."
    out += (b"\x80\x02}(" + pk_text("protocol_version") + b"M\xe9\x03" + pk_text("little_endian") +
            (b"\x88" if little_endian else b"\x89") + b"u.")
    out += state_dict_pickle(entries, legacy=True)
    out += b"\x80\x02](" + b"".join(pk_text(key) for key in storages) + b"e."
    for key, (numel, data) in storages.items():
        out += struct.pack("<q", numel) + data
    return out


def pytorch_bin_seeds():
    weight = f32(*[i / 4 for i in range(6)])
    entries = [("fc.weight", "FloatStorage", "0", 6, 0, [2, 3], [3, 1]),
               ("fc.bias", "FloatStorage", "1", 2, 0, [2], [1])]
    storages = {"0": weight, "1": f32(0.5, -0.5)}
    valid = torch_zip(state_dict_pickle(entries), storages)
    transposed = [("t", "FloatStorage", "0", 6, 0, [3, 2], [1, 3])]
    yield "valid", valid
    yield "transposed_view", torch_zip(state_dict_pickle(transposed), storages)
    yield "shared_storage_offset", torch_zip(state_dict_pickle(
        [("a", "FloatStorage", "0", 6, 2, [4], [1]), ("b", "FloatStorage", "0", 6, 0, [2], [1])]),
        storages)
    yield "bfloat16_and_bool", torch_zip(state_dict_pickle(
        [("h", "BFloat16Storage", "0", 2, 0, [2], [1]), ("m", "BoolStorage", "1", 3, 0, [3], [1])]),
        {"0": b"\x80\x3f\x00\x40", "1": b"\x01\x00\x02"})
    yield "view_past_storage", torch_zip(state_dict_pickle(
        [("a", "FloatStorage", "0", 6, 4, [3], [1])]), storages)
    yield "storage_larger_than_record", torch_zip(state_dict_pickle(
        [("a", "FloatStorage", "0", 1 << 30, 0, [1 << 30], [1])]), storages)
    yield "missing_storage", torch_zip(state_dict_pickle(
        [("a", "FloatStorage", "7", 6, 0, [6], [1])]), storages)
    yield "os_system", torch_zip(b"\x80\x02cposix\nsystem\nq\x00" + pk_text("true") +
                                 b"\x85R.", {})
    yield "training_checkpoint", torch_zip(state_dict_pickle(
        entries, extra=pk_text("epoch") + pk_int(3)), storages)
    yield "not_a_dict", torch_zip(b"\x80\x02" + pk_int(7) + b".", {})
    yield "truncated_pickle", torch_zip(state_dict_pickle(entries)[:-20], storages)
    yield "big_endian", torch_zip(state_dict_pickle(entries), storages, byteorder=b"big")
    yield "memo_read_before_write", torch_zip(b"\x80\x02h\x05.", {})
    yield "deep_nesting", torch_zip(b"\x80\x02N" + b"\x85" * 300000 + b".", {})
    yield "list_holding_itself", torch_zip(b"\x80\x02]q\x00h\x00a.", {})
    legacy_storages = {"0": (6, weight), "1": (2, f32(0.5, -0.5))}
    yield "legacy_valid", legacy_file(entries, legacy_storages)
    yield "legacy_truncated_header", b"\x80\x02" + LEGACY_MAGIC + b".\x80\x02M\xe9\x03."
    yield "legacy_big_endian", legacy_file(entries, legacy_storages, little_endian=False)
    yield "legacy_count_mismatch", legacy_file(entries, {"0": (5, weight), "1": (2, f32(0.5, -0.5))})
    yield "legacy_truncated_storage", legacy_file(entries, legacy_storages)[:-6]
    yield "git_lfs_pointer", LFS
    yield "truncated_archive", valid[: len(valid) // 2]
    yield "empty_file", b""


TARGETS = {
    # The header parser reads the same files, from memory.
    "safetensors_header": safetensors_seeds,
    "safetensors": safetensors_seeds,
    "sharded_index": index_seeds,
    "offload_folder": offload_seeds,
    "config": config_seeds,
    "sizes": size_seeds,
    "load_weights": load_weights_seeds,
    "pytorch_bin": pytorch_bin_seeds,
}


def main():
    for target, seeds in TARGETS.items():
        out = ROOT / target
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        for name, data in seeds():
            (out / name).write_bytes(data)


if __name__ == "__main__":
    main()
