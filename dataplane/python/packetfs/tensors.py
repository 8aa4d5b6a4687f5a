# SPDX-License-Identifier: Apache-2.0
"""Read a safetensors file where it lies (a blob's mapping): arrays point into it.

Named ``packetfs.tensors`` so that it never stands in for the real ``safetensors``
package: ``from packetfs import tensors`` and ``import safetensors`` read side by side.
(Until 0.2 ``packetfs.safetensors`` is a deprecated alias of this module.)

Format: u64 little-endian header length H, H bytes of JSON header, then the data::

    {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
     "__metadata__": {"key": "value"}}

``data_offsets`` are relative to the first byte after the header. The checks are those
of the reference implementation (safetensors' Rust crate): header length within the
buffer and at most 100 MB, a JSON object that starts with '{', known dtypes,
``end - begin == prod(shape) * itemsize``, tensors that tile the data exactly (no
overlap, no gap, nothing after the last one). Each failure is a SafetensorsError that
says which tensor and which rule.

``load(buf)`` returns numpy arrays made with ``np.frombuffer(buf, dtype, count,
offset)``: no copy, their memory is the buffer's. They are read-only unless
``writable=True`` and the buffer is writable (a read-write blob is shared by every
consumer on the node: a write is seen by all of them).

BF16 and FP8 (F8_E4M3, F8_E5M2): numpy has no such dtypes. With ``ml_dtypes``
importable they load as ``ml_dtypes.bfloat16`` / ``float8_e4m3fn`` / ``float8_e5m2``;
without it, as the raw bits (``uint16`` for BF16, ``uint8`` for FP8).
``bf16_dtype()`` tells which one this process gets; ``raw_bits=True`` forces the
raw bits.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass

from .errors import SafetensorsError

__all__ = ["TensorInfo", "header", "metadata", "load", "bf16_dtype"]

MAX_HEADER = 100_000_000  # the reference implementation's limit

# safetensors dtype -> (numpy dtype string, bytes per element)
_NUMPY = {
    "F64": ("<f8", 8),
    "F32": ("<f4", 4),
    "F16": ("<f2", 2),
    "I64": ("<i8", 8),
    "I32": ("<i4", 4),
    "I16": ("<i2", 2),
    "I8": ("i1", 1),
    "U64": ("<u8", 8),
    "U32": ("<u4", 4),
    "U16": ("<u2", 2),
    "U8": ("u1", 1),
    "BOOL": ("?", 1),
    "C64": ("<c8", 8),
}
# dtypes numpy lacks: (ml_dtypes attribute, raw-bits dtype, bytes per element)
_EXTENDED = {
    "BF16": ("bfloat16", "<u2", 2),
    "F8_E4M3": ("float8_e4m3fn", "u1", 1),
    "F8_E5M2": ("float8_e5m2", "u1", 1),
}


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of the header; ``start``/``end`` are absolute offsets in the buffer."""

    name: str
    dtype: str
    shape: tuple
    start: int
    end: int


def _itemsize(dtype: str) -> int:
    if dtype in _NUMPY:
        return _NUMPY[dtype][1]
    if dtype in _EXTENDED:
        return _EXTENDED[dtype][2]
    raise SafetensorsError(f"safetensors: unsupported dtype {dtype!r} (this reader knows "
                           f"{', '.join(sorted([*_NUMPY, *_EXTENDED]))})")


def _parse(buf):
    mv = memoryview(buf).cast("B")
    n = len(mv)
    if n < 8:
        raise SafetensorsError(f"safetensors: {n} bytes, too short for the 8-byte header length")
    (hlen,) = struct.unpack("<Q", mv[:8])
    if hlen > MAX_HEADER:
        raise SafetensorsError(f"safetensors: header length {hlen} exceeds the limit of "
                               f"{MAX_HEADER} bytes (not a safetensors file?)")
    if hlen > n - 8:
        raise SafetensorsError(f"safetensors: header length {hlen} runs past the buffer "
                               f"({n} bytes; not a safetensors file, or truncated?)")
    raw = bytes(mv[8 : 8 + hlen])
    if not raw.startswith(b"{"):
        raise SafetensorsError(f"safetensors: the header does not start with '{{' "
                               f"(starts with {raw[:8]!r})")
    try:
        doc = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise SafetensorsError(f"safetensors: header is not UTF-8 ({e.reason} at byte "
                               f"{8 + e.start})") from None
    except json.JSONDecodeError as e:
        raise SafetensorsError(f"safetensors: header is not JSON: {e.msg} at line {e.lineno} "
                               f"column {e.colno}") from None
    if not isinstance(doc, dict):
        raise SafetensorsError(f"safetensors: header is a JSON {type(doc).__name__}, "
                               f"not an object")
    meta = doc.pop("__metadata__", None)
    if meta is None:
        meta = {}
    if not isinstance(meta, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                             for k, v in meta.items()):
        raise SafetensorsError("safetensors: __metadata__ must map strings to strings")
    base = 8 + hlen
    data_len = n - base
    infos = []
    for name, t in doc.items():
        if not isinstance(t, dict):
            raise SafetensorsError(f"safetensors: {name!r}: not an object")
        dtype, shape, offs = t.get("dtype"), t.get("shape"), t.get("data_offsets")
        if not isinstance(dtype, str):
            raise SafetensorsError(f"safetensors: {name!r}: dtype missing or not a string")
        size = _itemsize(dtype)
        if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
            raise SafetensorsError(f"safetensors: {name!r}: shape {shape!r} is not a list of "
                                   f"non-negative integers")
        if (not isinstance(offs, list) or len(offs) != 2
                or not all(type(o) is int and o >= 0 for o in offs)):
            raise SafetensorsError(f"safetensors: {name!r}: data_offsets {offs!r} is not "
                                   f"[begin, end]")
        begin, end = offs
        if begin > end:
            raise SafetensorsError(f"safetensors: {name!r}: data_offsets [{begin}, {end}] "
                                   f"end before begin")
        if end > data_len:
            raise SafetensorsError(f"safetensors: {name!r}: data_offsets [{begin}, {end}] run "
                                   f"past the data ({data_len} bytes after the header)")
        want = math.prod(shape) * size
        if end - begin != want:
            raise SafetensorsError(f"safetensors: {name!r}: {end - begin} bytes for shape "
                                   f"{shape} of {dtype}, which needs {want}")
        infos.append(TensorInfo(name, dtype, tuple(shape), base + begin, base + end))
    pos = base
    for t in sorted(infos, key=lambda t: (t.start, t.end)):
        if t.start < pos:
            raise SafetensorsError(f"safetensors: {t.name!r} [{t.start - base}, {t.end - base}) "
                                   f"overlaps the tensor before it (which ends at {pos - base})")
        if t.start > pos:
            raise SafetensorsError(f"safetensors: a gap of {t.start - pos} bytes before "
                                   f"{t.name!r} (tensors must tile the data)")
        pos = t.end
    if pos != n:
        raise SafetensorsError(f"safetensors: {n - pos} bytes after the last tensor (pass the "
                               f"file's exact bytes, e.g. Blob.file(name), not a larger buffer)")
    return mv, infos, meta


def header(buf) -> list:
    """The validated tensor list (TensorInfo, header order)."""
    return _parse(buf)[1]


def metadata(buf) -> dict:
    """The ``__metadata__`` strings ({} when absent)."""
    return _parse(buf)[2]


def bf16_dtype():
    """The numpy dtype BF16 tensors load as: ml_dtypes.bfloat16 when importable,
    else uint16 (the raw bits)."""
    import numpy as np

    try:
        import ml_dtypes
    except ImportError:
        return np.dtype("<u2")
    return np.dtype(ml_dtypes.bfloat16)


def _np_dtype(np, dtype: str, raw_bits: bool):
    if dtype in _NUMPY:
        return np.dtype(_NUMPY[dtype][0])
    attr, raw, _ = _EXTENDED[dtype]
    if not raw_bits:
        try:
            import ml_dtypes
        except ImportError:
            pass
        else:
            return np.dtype(getattr(ml_dtypes, attr))
    return np.dtype(raw)


def load(buf, *, writable: bool = False, raw_bits: bool = False) -> dict:
    """name -> numpy array over ``buf`` (no copy), in header order."""
    import numpy as np

    mv, infos, _ = _parse(buf)
    out = {}
    for t in infos:
        dt = _np_dtype(np, t.dtype, raw_bits)
        count = math.prod(t.shape)
        if count:
            a = np.frombuffer(mv, dtype=dt, count=count, offset=t.start)
        else:
            a = np.frombuffer(mv[t.start : t.start], dtype=dt)
        a = a.reshape(t.shape)
        if not writable and a.flags.writeable:
            a.flags.writeable = False
        out[t.name] = a
    return out
