# SPDX-License-Identifier: Apache-2.0
"""CRC-32C (Castagnoli) and the blob fingerprint, as the data plane defines them.

``crc32c(data, crc=0)`` has the semantics of the C ``pfs_crc32c(crc, buf, len)``:
``crc32c(b"123456789") == 0xE3069283`` and ``crc32c(b, crc32c(a)) == crc32c(a + b)``.

``fingerprint(buf)`` is ``pfs_fingerprint_mem`` (dataplane/include/pfs/blob.h): the
buffer is cut into 1 MiB chunks, ``c[j] = crc32c(chunk j)``; the low 32 bits are the
CRC-32C of the whole buffer (the ``c[]`` merged with ``crc32c_combine``), the high 32
bits are ``crc32c(le64(size) || le32(c[0]) || le32(c[1]) || ...)``.

Two implementations of the chunk CRCs:

- ``numpy`` (when numpy imports): the 16,384 64-byte lanes of a 1 MiB chunk advance
  in lockstep, four bytes per step (slicing-by-4 folded into two 64 Ki-entry tables:
  two vectorised lookups per step), then the lanes are merged pairwise with "shift by
  n zero bytes" tables. 0.3-0.7 GB/s here (noisy); the temporaries are a few hundred
  KiB, so a fingerprint of a large blob does not grow anonymous memory.
- ``python``: a byte-at-a-time table, ~10 MB/s. Fine for a manifest; slow for a blob.

The C data plane uses the crc32 instruction (several GB/s); this module exists so a
consumer pod needs nothing but Python to check what it maps.
"""

from __future__ import annotations

import struct

__all__ = ["crc32c", "crc32c_fast", "crc32c_combine", "fingerprint", "fingerprint_backend", "FP_CHUNK"]

POLY = 0x82F63B78  # Castagnoli, bit-reflected
FP_CHUNK = 1 << 20  # PFS_BLOB_FP_CHUNK
_LANE = 64  # bytes per numpy lane (a multiple of 4): 16384 lanes per 1 MiB chunk


def _make_table() -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ POLY if c & 1 else c >> 1
        table.append(c)
    return table


_T0 = _make_table()


def _raw_update(crc: int, data) -> int:
    """Feed bytes to the bare CRC register (no pre- or post-inversion)."""
    t = _T0
    for b in bytes(data) if not isinstance(data, (bytes, bytearray)) else data:
        crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


def crc32c(data, crc: int = 0) -> int:
    """CRC-32C of ``data`` (any bytes-like object), continuing from ``crc``."""
    return _raw_update(crc ^ 0xFFFFFFFF, data) ^ 0xFFFFFFFF


# --- GF(2) arithmetic modulo the CRC polynomial (as zlib's crc32_combine) ---


def _multmodp(a: int, b: int) -> int:
    """a * b modulo P, both in the reflected representation."""
    m = 1 << 31
    p = 0
    while True:
        if a & m:
            p ^= b
            if (a & (m - 1)) == 0:
                break
        m >>= 1
        b = (b >> 1) ^ POLY if b & 1 else b >> 1
    return p


def _make_x2n() -> list[int]:
    p = 1 << 30  # x^1
    table = [p]
    for _ in range(1, 32):
        p = _multmodp(p, p)
        table.append(p)
    return table


_X2N = _make_x2n()  # _X2N[k] = x^(2^k) mod P


def _x8nmodp(n: int) -> int:
    """x^(8 n) mod P: the operator that feeds n zero bytes to a CRC register."""
    p = 1 << 31  # x^0
    k = 3
    while n:
        if n & 1:
            p = _multmodp(_X2N[k & 31], p)
        n >>= 1
        k += 1
    return p


def crc32c_combine(crc_a: int, crc_b: int, len_b: int) -> int:
    """CRC-32C of A||B from crc32c(A), crc32c(B) and len(B) (pfs_crc32c_combine)."""
    if len_b == 0:
        return crc_a
    return _multmodp(_x8nmodp(len_b), crc_a) ^ crc_b


def _shift_tables(nbytes: int) -> list[list[int]]:
    """Four byte tables of the linear map c -> c * x^(8 nbytes) mod P."""
    op = _x8nmodp(nbytes)
    tables = []
    for k in range(4):
        bits = [_multmodp(op, 1 << (8 * k + i)) for i in range(8)]
        t = [0] * 256
        for v in range(1, 256):
            low = v & -v
            t[v] = t[v ^ low] ^ bits[low.bit_length() - 1]
        tables.append(t)
    return tables


# --- numpy lanes ---

_np_state: dict = {}


def _numpy():
    try:
        import numpy as np
    except ImportError:  # numpy is optional
        return None
    if not _np_state:
        t = [_T0]
        for _ in range(3):
            t.append([(v >> 8) ^ _T0[v & 0xFF] for v in t[-1]])
        t0, t1, t2, t3 = (np.array(x, dtype=np.uint32) for x in t)
        v = np.arange(65536, dtype=np.uint32)
        # One step consumes a little-endian u32: bytes 0-1 go through t3/t2,
        # bytes 2-3 through t1/t0 (slicing-by-4), merged into 16-bit tables.
        _np_state["lo16"] = t3[v & 0xFF] ^ t2[v >> 8]
        _np_state["hi16"] = t1[v & 0xFF] ^ t0[v >> 8]
        _np_state["shift"] = {}
        _np_state["np"] = np
    return _np_state["np"]


def _np_shift(nbytes: int):
    cache = _np_state["shift"]
    if nbytes not in cache:
        np = _np_state["np"]
        cache[nbytes] = [np.array(x, dtype=np.uint32) for x in _shift_tables(nbytes)]
    return cache[nbytes]


def _np_apply(tables, c):
    s0, s1, s2, s3 = tables
    return s0[c & 0xFF] ^ s1[(c >> 8) & 0xFF] ^ s2[(c >> 16) & 0xFF] ^ s3[c >> 24]


def _np_chunk_crcs(buf, nchunks: int, chunk: int) -> list[int]:
    """Standard CRC-32C of ``nchunks`` consecutive chunks of ``chunk`` bytes
    each (``chunk`` a power of two times _LANE), one chunk at a time so the
    temporaries stay a few hundred KiB whatever the buffer size."""
    np = _np_state["np"]
    lo16, hi16 = _np_state["lo16"], _np_state["hi16"]
    lanes = chunk // _LANE
    # Conditioning: crc32c(D) = ~(raw(~0 fed |D| zero bytes) ^ raw(0, D)).
    pre = _multmodp(_x8nmodp(chunk), 0xFFFFFFFF) ^ 0xFFFFFFFF
    arr = np.frombuffer(buf, dtype=np.uint8, count=nchunks * chunk)
    crc = np.empty(lanes, dtype=np.uint32)
    a = np.empty(lanes, dtype=np.uint32)
    b = np.empty(lanes, dtype=np.uint32)
    out: list[int] = []
    for j in range(nchunks):
        words = arr[j * chunk : (j + 1) * chunk].view("<u4").reshape(lanes, _LANE // 4)
        crc.fill(0)
        for step in range(_LANE // 4):
            np.bitwise_xor(crc, words[:, step], out=crc)
            np.bitwise_and(crc, 0xFFFF, out=a)
            np.right_shift(crc, 16, out=b)
            np.take(lo16, a, out=a)
            np.take(hi16, b, out=b)
            np.bitwise_xor(a, b, out=crc)
        # Merge neighbouring lanes: raw(A||B) = shift(raw(A), |B|) ^ raw(B).
        c = crc
        span = _LANE
        while len(c) > 1:
            pairs = c.reshape(-1, 2)
            c = _np_apply(_np_shift(span), pairs[:, 0]) ^ pairs[:, 1]
            span *= 2
        out.append(int(c[0]) ^ pre)
    return out


def _chunk_crc_any(buf, backend: str) -> int:
    """Standard CRC-32C of one buffer of any length."""
    n = len(buf)
    if backend != "numpy" or n < _LANE:
        return crc32c(buf)
    # Largest prefix that is a power-of-two number of lanes, then the rest.
    lanes = 1 << ((n // _LANE).bit_length() - 1)
    head = lanes * _LANE
    c = _np_chunk_crcs(buf[:head], 1, head)[0]
    if head < n:
        c = crc32c_combine(c, _chunk_crc_any(buf[head:], backend), n - head)
    return c


def crc32c_fast(data) -> int:
    """crc32c(data) through the numpy lanes when numpy imports and ``data`` is
    large enough for them to pay (a manifest of a directory of many files)."""
    mv = memoryview(data).cast("B")
    if len(mv) >= (64 << 10) and _numpy() is not None:
        return _chunk_crc_any(mv, "numpy")
    return crc32c(mv)


def fingerprint_backend() -> str:
    """'numpy' when numpy is importable (fast path), else 'python'."""
    return "numpy" if _numpy() is not None else "python"


def fingerprint(buf, backend: str | None = None) -> int:
    """The 64-bit blob fingerprint of ``buf`` (a bytes-like object), as
    ``pfs_blob__fingerprint`` computes it."""
    backend = backend or fingerprint_backend()
    if backend == "numpy" and _numpy() is None:
        raise ValueError("backend 'numpy' asked for, but numpy is not importable")
    if backend not in ("numpy", "python"):
        raise ValueError(f"unknown fingerprint backend {backend!r}")
    mv = memoryview(buf).cast("B")
    size = len(mv)
    if size == 0:
        return 0
    nfull = size // FP_CHUNK
    if backend == "numpy":
        crcs = _np_chunk_crcs(mv, nfull, FP_CHUNK) if nfull else []
    else:
        crcs = [crc32c(mv[j * FP_CHUNK : (j + 1) * FP_CHUNK]) for j in range(nfull)]
    if size % FP_CHUNK:
        crcs.append(_chunk_crc_any(mv[nfull * FP_CHUNK :], backend))
    whole = crcs[0]
    full_op = _x8nmodp(FP_CHUNK)
    for j in range(1, len(crcs)):
        n = min(FP_CHUNK, size - j * FP_CHUNK)
        op = full_op if n == FP_CHUNK else _x8nmodp(n)
        whole = _multmodp(op, whole) ^ crcs[j]
    hi = crc32c(struct.pack("<Q", size) + struct.pack(f"<{len(crcs)}I", *crcs))
    return hi << 32 | whole
