# SPDX-License-Identifier: Apache-2.0
"""CRC-32C and the blob fingerprint against their definitions and the C data plane."""

from __future__ import annotations

import pytest

from conftest import MiB, SILERO_ST, run_pfs
from packetfs import crc32c as c

# RFC 3720 (iSCSI) B.4 and the check value of the CRC catalogue.
VECTORS = [
    (b"123456789", 0xE3069283),
    (bytes(32), 0x8A9136AA),
    (b"\xff" * 32, 0x62A8AB43),
    (bytes(range(32)), 0x46DD794E),
    (bytes(range(31, -1, -1)), 0x113FDB5C),
    (b"", 0),
]


@pytest.mark.parametrize("data, want", VECTORS)
def test_vectors(data, want):
    assert c.crc32c(data) == want
    assert c.crc32c_fast(data) == want


def test_continue_and_combine(real_files):
    data = dict(real_files)[SILERO_ST][:300_000]
    whole = c.crc32c(data)
    for cut in (0, 1, 4095, 65536, 123_457, len(data)):
        a, b = data[:cut], data[cut:]
        assert c.crc32c(b, c.crc32c(a)) == whole
        assert c.crc32c_combine(c.crc32c(a), c.crc32c(b), len(b)) == whole


def test_numpy_lanes_equal_the_table(real_files):
    data = dict(real_files)[SILERO_ST]
    for n in (64 << 10, (64 << 10) + 1, 1 << 20, len(data)):
        assert c.crc32c_fast(data[:n]) == c.crc32c(data[:n]), n


def test_fingerprint_backends_agree_on_odd_sizes(real_files):
    data = b"".join(d for _, d in real_files)  # ~5.8 MB of real bytes
    for n in (1, 63, 64, 65, MiB - 1, MiB, MiB + 1, 3 * MiB + 12345):
        assert c.fingerprint(data[:n], "numpy") == c.fingerprint(data[:n], "python"), n
    assert c.fingerprint(b"") == 0


@pytest.mark.parametrize("backend", ["numpy", "python"])
def test_fingerprint_equals_pfs(env, backend):
    b = env.blob("4k", 4 * MiB, fill="seed")
    info = run_pfs(env.pfs, "blob", "info", "--name", b.name, "--dir", b.dir)
    with open(b.path, "rb") as f:
        assert c.fingerprint(f.read(), backend) == int(info["blob"]["fingerprint"], 16)


def test_unknown_backend():
    with pytest.raises(ValueError, match="unknown fingerprint backend"):
        c.fingerprint(b"x", "sse")
