# SPDX-License-Identifier: Apache-2.0
"""packetfs.tensors on real weights in a real blob: equal to what the safetensors
library loads, and pointing into the mapping."""

from __future__ import annotations

import gc
import json
import struct
import sys
import weakref

import pytest

import packetfs
from conftest import SILERO_ST
from packetfs import tensors as pst

import numpy as np  # noqa: E402  (pinned in requirements-test.txt: missing is a failure)
import safetensors.numpy as st_numpy  # noqa: E402


def test_every_tensor_equals_the_safetensors_library(packed, silero_path):
    ref = st_numpy.load_file(str(silero_path))
    with packed.attach() as blob:
        got = pst.load(blob.file(SILERO_ST))
        assert sorted(got) == sorted(ref) and len(ref) == 15
        for name, want in ref.items():
            a = got[name]
            assert a.dtype == want.dtype and a.shape == want.shape, name
            assert np.array_equal(a, want), name
        del got, a


def test_arrays_point_into_the_mapping(packed):
    with packed.attach() as blob:
        whole = np.frombuffer(blob.view, dtype=np.uint8)
        base = whole.__array_interface__["data"][0]
        entry = blob.manifest()[SILERO_ST]
        tensors = pst.load(blob.file(SILERO_ST))
        for info in pst.header(blob.file(SILERO_ST)):
            a = tensors[info.name]
            assert not a.flags.owndata and not a.flags.writeable
            assert np.shares_memory(a, whole)
            # Exactly where the header says, inside the file, inside the mapping.
            assert a.__array_interface__["data"][0] == base + entry.offset + info.start
            assert entry.offset + info.end <= entry.offset + entry.length <= blob.size
        del whole, tensors, a


def test_closing_the_blob_under_live_arrays_is_safe(packed):
    blob = packed.attach()
    mm = weakref.ref(blob.view.obj)
    w = pst.load(blob.file(SILERO_ST))["lstm_cell.weight_ih"]
    total = float(w.sum())
    blob.close()  # the arrays still point into the pages: they stay mapped
    assert blob.closed and mm() is not None
    assert float(w.sum()) == total
    del w
    gc.collect()
    assert mm() is None  # the last array gone: unmapped


def test_metadata(env, real_files):
    ref = st_numpy.load(dict(real_files)[SILERO_ST])
    data = st_numpy.save(ref, metadata={"source": "silero-vad 6.2.3", "format": "pt"})
    assert pst.metadata(data) == {"source": "silero-vad 6.2.3", "format": "pt"}
    assert pst.metadata(dict(real_files)[SILERO_ST]) == {}
    assert set(pst.load(data)) == set(ref)


def _dtype_zoo(w):
    """Every numpy dtype safetensors writes, made from a real weight matrix."""
    return {
        "f64": w.astype(np.float64), "f32": w, "f16": w.astype(np.float16),
        "i64": (w * 1e6).astype(np.int64), "i32": (w * 1e6).astype(np.int32),
        "i16": (w * 1e4).astype(np.int16), "i8": (w * 100).astype(np.int8),
        "u64": np.abs(w * 1e6).astype(np.uint64), "u32": np.abs(w * 1e6).astype(np.uint32),
        "u16": np.abs(w * 1e4).astype(np.uint16), "u8": np.abs(w * 100).astype(np.uint8),
        "bool": w > 0, "c64": (w + 1j * w[::-1]).astype(np.complex64),
        "scalar": np.array(w[3, 4]), "empty": np.zeros((0, 7), np.float32),
    }


def test_every_dtype_written_by_the_safetensors_library(env, real_files):
    w = st_numpy.load(dict(real_files)[SILERO_ST])["lstm_cell.weight_ih"]
    data = st_numpy.save(_dtype_zoo(w))
    ref = st_numpy.load(data)
    p = env.pack([("zoo.safetensors", data)])
    with p.attach() as blob:
        got = pst.load(blob.file("zoo.safetensors"))
        for name, want in ref.items():
            assert got[name].dtype == want.dtype and got[name].shape == want.shape, name
            assert np.array_equal(got[name], want), name
        del got


def test_bf16_and_fp8(real_files, monkeypatch):
    import ml_dtypes as ml  # pinned in requirements-test.txt
    w = st_numpy.load(dict(real_files)[SILERO_ST])["conv1.weight"]
    want = {"bf16": w.astype(ml.bfloat16), "e4m3": w.astype(ml.float8_e4m3fn),
            "e5m2": w.astype(ml.float8_e5m2)}
    data = st_numpy.save(want)  # the library writes them; its numpy loader cannot read BF16
    assert b'"BF16"' in data and b'"F8_E4M3"' in data and b'"F8_E5M2"' in data
    got = pst.load(data)
    assert pst.bf16_dtype() == np.dtype(ml.bfloat16)
    for k in want:
        assert got[k].dtype == want[k].dtype and got[k].shape == want[k].shape
        assert np.array_equal(got[k].view(np.uint8), want[k].view(np.uint8))
    raw = pst.load(data, raw_bits=True)
    assert raw["bf16"].dtype == np.uint16 and raw["e4m3"].dtype == np.uint8
    assert np.array_equal(raw["bf16"], want["bf16"].view(np.uint16))
    # Without ml_dtypes: the raw bits, and bf16_dtype() says so.
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)
    assert pst.bf16_dtype() == np.dtype("<u2")
    assert pst.load(data)["bf16"].dtype == np.uint16


def _rewrite(data: bytes, edit) -> bytes:
    """The file with its header edited (and re-padded to 8 bytes)."""
    (n,) = struct.unpack("<Q", data[:8])
    head = json.loads(data[8 : 8 + n])
    edit(head)
    raw = json.dumps(head).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + data[8 + n :]


def _set(name, key, value):
    def edit(h):
        h[name][key] = value
    return edit


BAD = {
    "too-short": (lambda d: d[:7], "too short"),
    "length-past-end": (lambda d: struct.pack("<Q", len(d)) + d[8:], "runs past the buffer"),
    "length-huge": (lambda d: struct.pack("<Q", 1 << 40) + d[8:], "exceeds the limit"),
    "not-an-object": (lambda d: d[:8] + b"[" + d[9:], "does not start with"),
    "not-json": (lambda d: d[:8] + d[8:40].replace(b'"', b"#", 1) + d[40:], "not JSON"),
    "not-utf8": (lambda d: d[:10] + b"\xff" + d[11:], "not UTF-8"),
    "unknown-dtype": (lambda d: d.replace(b'"F32"', b'"X32"', 1), "unsupported dtype 'X32'"),
    "truncated-data": (lambda d: d[:-4], "run past the data"),
    "trailing-bytes": (lambda d: d + bytes(8), "bytes after the last tensor"),
    "size-vs-shape": (lambda d: _rewrite(d, _set("conv1.bias", "shape", [127])), "needs 508"),
    "overlap": (lambda d: _rewrite(d, _set("conv1.bias", "data_offsets", [264192, 264704])),
                "overlaps"),
    "gap": (lambda d: _rewrite(d, lambda h: h.pop("final_conv.weight")), "a gap of 512 bytes"),
    "end-before-begin": (lambda d: _rewrite(d, _set("conv1.bias", "data_offsets", [10, 4])),
                         "end before begin"),
    "bad-shape": (lambda d: _rewrite(d, _set("conv1.bias", "shape", [-128])), "shape"),
    "metadata-not-strings": (lambda d: _rewrite(d, lambda h: h.update(__metadata__={"a": 1})),
                             "__metadata__"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_files_are_refused_like_the_reference(real_files, case):
    make, words = BAD[case]
    data = make(dict(real_files)[SILERO_ST])
    with pytest.raises(packetfs.SafetensorsError, match=words):
        pst.load(data)
    with pytest.raises(Exception):  # the safetensors library refuses it too
        st_numpy.load(data)


def test_corrupted_header_through_the_holder(env, real_files):
    good = dict(real_files)[SILERO_ST]
    bad = struct.pack("<Q", len(good)) + good[8:]
    p = env.pack([("bad.safetensors", bad), ("good.safetensors", good)])
    with p.attach() as blob:
        blob.verify()  # the bytes are what was packed: the file itself is bad
        with pytest.raises(packetfs.SafetensorsError, match="runs past the buffer"):
            pst.load(blob.file("bad.safetensors"))
        assert len(pst.load(blob.file("good.safetensors"))) == 15


def test_whole_blob_is_not_a_file(packed):
    """Passing the whole (padded) blob instead of the file's bytes says so."""
    with packed.attach() as blob:
        e = blob.manifest()[SILERO_ST]
        padded = blob.view[e.offset : e.offset + e.length + 4096]
        with pytest.raises(packetfs.SafetensorsError, match="Blob.file"):
            pst.load(padded)
        del padded
