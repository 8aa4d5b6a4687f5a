# SPDX-License-Identifier: Apache-2.0
"""WAITING FOR THE C WRITER: `pfs blob create --source FILE|DIR` writes the packed
layout itself. Skipped ("pfs has no --source yet") while `pfs blob create --help` does
not list --source; runs, unchanged, the day it does. It checks the C writer against
the contract this client reads (docs/guides/consumers.md): manifest, offsets, sha256 of the
source bytes, and the tensors of a real safetensors file.
"""

from __future__ import annotations

import hashlib
import os

import pytest

from conftest import MiB, BlobFile, SILERO_ST, run_pfs

import numpy as np  # noqa: E402  (pinned in requirements-test.txt: missing is a failure)
import safetensors.numpy as st_numpy  # noqa: E402

from packetfs import tensors as pst  # noqa: E402


@pytest.fixture
def source_blob(env):
    def create(source) -> BlobFile:
        b = BlobFile(f"pyt-src-{os.getpid()}-{len(env.blobs)}", env.blob_dir("4k"), "4k", 0)
        env.blobs.append(b)
        res = run_pfs(env.pfs, "blob", "create", "--name", b.name, "--dir", b.dir, "--page",
                      "4k", "--size", 16 * MiB, "--source", source)
        assert res.get("ok"), res
        b.size = res["blob"]["size"]
        return b

    return create


def test_source_file(env, source_blob, silero_path):
    data = silero_path.read_bytes()
    h = env.holder(source_blob(silero_path)).start()
    with h.attach() as blob:
        m = blob.manifest()
        assert m.kind == "file" and len(m.files) == 1
        assert m.sha256 == hashlib.sha256(data).hexdigest() and m.bytes == len(data)
        name = m.files[0].name
        assert blob.file(name) == data and blob.verify(name) == m.sha256
        ref = st_numpy.load_file(str(silero_path))
        got = pst.load(blob.file(name))
        assert all(np.array_equal(got[k], ref[k]) and got[k].dtype == ref[k].dtype for k in ref)
        del got


def test_source_dir(env, source_blob, real_files):
    root = env.workdir / "src-dir"
    for name, data in real_files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    h = env.holder(source_blob(root)).start()
    with h.attach() as blob:
        m = blob.manifest()
        assert m.kind == "dir" and sorted(m.names()) == sorted(dict(real_files))
        for name, data in real_files:
            assert blob.file(name) == data and blob.verify(name) == hashlib.sha256(data).hexdigest()
        assert len(pst.load(blob.file(SILERO_ST))) == 15
