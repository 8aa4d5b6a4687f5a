# SPDX-License-Identifier: Apache-2.0
"""attach() on a files-layout blob: a holder that keeps one file per manifest entry
and passes their directory (PFS_SHARE_F_DIR) instead of one blob file.

The directories here are written by tests/packer.py from a flat blob that a real
`pfs blob serve` holds, and served by a small holder of our own (tests/dirholder.py)
on a real socket that passes a real directory fd, so that they can be broken in ways
the C holder refuses to serve: the fingerprint it announces is the C holder's record
of the flat blob, so the rebuilt region must be byte for byte that blob. The real C
holder of the files layout (`pfs blob create --layout files`, `pfs blob serve`) is
tested in test_model_dir.py.
"""

from __future__ import annotations

import gc
import hashlib
import os
import shutil
import subprocess
import sys

import pytest

import packer
import packetfs
from conftest import HERE, MiB, SILERO_ST
from dirholder import DirHolder
from packetfs import share

import numpy as np  # noqa: E402  (pinned in requirements-test.txt: missing is a failure)
import safetensors.numpy as st_numpy  # noqa: E402

from packetfs import tensors as pt  # noqa: E402


@pytest.fixture(scope="module")
def flat(env, real_files):
    """The real files in a flat blob held by `pfs blob serve`: its bytes and the C
    holder's fingerprint record."""
    p = env.pack(real_files, size=8 * MiB)
    with p.attach() as b:
        return {"bytes": bytes(b.view), "fingerprint": b.fingerprint, "size": b.size,
                "plan": p.plan, "files": real_files}


_n = iter(range(1_000_000))


@pytest.fixture
def split(env, flat):
    """A files-layout directory of the flat blob, served by a DirHolder; removed after."""
    made = []

    def make(edit=None, **holder_kw):
        root = env.workdir / f"split-{next(_n)}.d"
        packer.write_dir(root, flat["files"], flat["size"], tail_from=flat["bytes"])
        if edit is not None:
            edit(root)
        h = DirHolder(env.workdir / f"{root.name}.sock", root, flat["size"], flat["fingerprint"],
                      **holder_kw)
        made.append((h, root))
        return h, root

    yield make
    for h, root in made:
        h.close()
        for p in root.rglob("*"):
            if p.is_dir() and not p.is_symlink():
                os.chmod(p, 0o755)
        shutil.rmtree(root)


def _maps_of(root) -> dict:
    """path -> [(start, end)] of this process's mappings of files under ``root``."""
    out = {}
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(maxsplit=5)
            if len(parts) == 6 and parts[5].strip().startswith(str(root)):
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                out.setdefault(parts[5].strip(), []).append((lo, hi))
    return out


def test_the_region_is_the_flat_blob(split, flat, silero_path):
    h, root = split()
    with h.attach() as blob:
        assert blob.layout == "files" and blob.read_only and blob.view.readonly
        assert blob.size == flat["size"] == len(blob.view)
        assert blob.verified_with == "numpy"  # the C holder's fingerprint, recomputed
        assert hashlib.sha256(blob.view).digest() == hashlib.sha256(flat["bytes"]).digest()
        assert blob.manifest().names() == [n for n, _ in flat["files"]]
        blob.verify()
        ref = st_numpy.load_file(str(silero_path))
        got = pt.load(blob.file(SILERO_ST))
        assert sorted(got) == sorted(ref)
        assert all(np.array_equal(got[k], ref[k]) for k in ref)
        with pytest.raises(TypeError):
            blob.view[0] = 1
        del got


def test_the_pages_are_the_holders_files(split, flat):
    """Each file is mapped at its offset in the region and the tail at the manifest
    offset: the region's pages are the files' pages, nothing was copied."""
    h, root = split()
    with h.attach() as blob:
        base = np.frombuffer(blob.view, np.uint8).__array_interface__["data"][0]
        maps = _maps_of(root)
        m = blob.manifest()
        for e in m.files:
            want = (base + e.offset, base + packer.align(e.offset + e.length))
            assert maps.pop(str(root / "files" / e.name)) == [want], e.name
        assert maps.pop(str(root / "tail")) == [(base + m.offset, base + blob.size)]
        assert maps == {}
    gc.collect()
    assert _maps_of(root) == {}  # closed: the whole region is unmapped


def test_no_fd_is_left_open(split):
    h, _ = split()

    def attach_and_close():
        with h.attach():
            pass

    before, after = h.fds_after(attach_and_close)
    assert after == before


def _symlink_file(root):
    f = root / "files" / SILERO_ST
    real = root.parent / f"{root.name}-real.safetensors"
    shutil.copyfile(f, real)
    f.unlink()
    f.symlink_to(real)


def _symlink_dir(root):
    d = root / "files" / "5.1.2"
    os.rename(d, root.parent / f"{root.name}-5.1.2")
    d.symlink_to(root.parent / f"{root.name}-5.1.2")


def _symlink_tail(root):
    os.rename(root / "tail", root.parent / f"{root.name}-tail")
    (root / "tail").symlink_to(root.parent / f"{root.name}-tail")


def _truncate(root):
    f = root / "files" / SILERO_ST
    os.chmod(f, 0o644)
    os.truncate(f, f.stat().st_size - 1)


def _grow_tail(root):
    """4096 more bytes at the tail's start: its footer still names the old offset."""
    data = (root / "tail").read_bytes()
    (root / "tail").write_bytes(bytes(4096) + data)


def _pad_tail(root):
    with open(root / "tail", "ab") as f:
        f.write(bytes(4096))


def _flip_a_byte(root):
    f = root / "files" / "5.1.2/silero_vad.onnx"
    os.chmod(f, 0o644)
    data = bytearray(f.read_bytes())
    data[1000] ^= 0xFF
    f.write_bytes(bytes(data))


def _fifo(root):
    f = root / "files" / "5.1.2/silero_vad.jit"
    f.unlink()
    os.mkfifo(f)


BROKEN = {
    "missing": (lambda r: (r / "files" / "5.1.2/silero_vad.jit").unlink(), packetfs.PacketfsError,
                "files/5.1.2/silero_vad.jit: does not exist"),
    "symlinked-file": (_symlink_file, packetfs.PacketfsError,
                       f"files/{SILERO_ST}: is a symbolic link"),
    "symlinked-dir": (_symlink_dir, packetfs.PacketfsError, "files/5.1.2: is a symbolic link"),
    "symlinked-tail": (_symlink_tail, packetfs.PacketfsError, "tail: is a symbolic link"),
    "short-file": (_truncate, packetfs.SizeMismatch, "bytes, the manifest says"),
    "long-tail": (_grow_tail, packetfs.SizeMismatch, "the footer puts the manifest at"),
    "no-footer": (_pad_tail, packetfs.NoManifest, "no manifest"),
    "changed-byte": (_flip_a_byte, packetfs.FingerprintMismatch, "differs from the holder's"),
    "fifo": (_fifo, packetfs.PacketfsError, "not a regular file"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_directory_is_refused(split, case):
    edit, cls, words = BROKEN[case]
    h, _ = split(edit)

    def refused():
        with pytest.raises(cls, match=words):
            h.attach()

    before, after = h.fds_after(refused)
    assert after == before


def test_dir_flag_with_a_file_fd(env, split, flat):
    h, root = split(fd_path=None)
    h.fd_path = root / "tail"
    with pytest.raises(packetfs.ProtocolError, match="fd is not a directory"):
        h.attach()


def test_a_directory_without_the_flag(split):
    h, _ = split(flags=share.F_READ_ONLY | share.F_FD)
    with pytest.raises(packetfs.SizeMismatch, match="not a regular non-empty file"):
        h.attach()


UNPACKED = {
    # (file index -> shift of its offset, shift of the manifest offset, words)
    "gap-between-files": ({2: 4096}, 0, "a gap"),
    "gap-before-the-manifest": ({}, 4096, "a gap the holder's files do not cover"),
    "overlap": ({1: -4096}, 0, "overlap"),
}


@pytest.mark.parametrize("case", sorted(UNPACKED))
def test_a_layout_that_is_not_packed_is_refused(env, real_files, case):
    """Offsets a holder of layout v1 never writes, in a manifest that is otherwise
    well formed: mapping them would leave a hole in the region or map files over
    each other."""
    shifts, mshift, words = UNPACKED[case]
    p = packer.plan(real_files)
    offs = {e["name"]: e["offset"] for e in p["doc"]["files"]}
    for i, d in shifts.items():
        offs[real_files[i][0]] += d
    moff = max(packer.align(offs[n] + len(b)) for n, b in real_files) + mshift
    root = env.workdir / f"unpacked-{case}.d"
    size = 8 * MiB
    packer.write_dir(root, real_files, size, offsets=offs, manifest_offset=moff)
    h = DirHolder(env.workdir / f"unpacked-{case}.sock", root, size, 0)
    try:
        with pytest.raises(packetfs.ManifestError, match=words):
            h.attach()
    finally:
        h.close()
        shutil.rmtree(root)


STDLIB_ONLY = """
import sys
sys.modules["numpy"] = None  # as if numpy were not installed
import packetfs
with packetfs.attach(sys.argv[1], token="t") as blob:
    assert blob.layout == "files" and blob.verified_with == "python", blob
    print(blob.verify(sys.argv[2]))
"""


def test_standard_library_only(split, flat):
    """No numpy: the region is built with ctypes and the mmap module, the fingerprint
    is checked in pure Python."""
    h, _ = split()
    name, data = flat["files"][0]
    r = subprocess.run([sys.executable, "-c", STDLIB_ONLY, str(h.sock), name], capture_output=True,
                       text=True, timeout=120,
                       env={"PYTHONPATH": str(HERE.parent), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [hashlib.sha256(data).hexdigest()]
