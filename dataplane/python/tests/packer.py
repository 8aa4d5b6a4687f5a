# SPDX-License-Identifier: Apache-2.0
"""Test helper: write the version-1 packed layout (files + manifest + footer) into a
blob, until `pfs blob create --source` does it in C. Tests only: the client never
writes blobs.

Kept independent of the code under test: its own (bitwise, slow, obviously right)
CRC-32C, its own offsets. ``corrupt=`` changes bytes after everything was written
(manifests with bad content but valid CRCs are tested in memory: test_manifest.py).
"""

from __future__ import annotations

import hashlib
import json
import struct

ALIGN = 4096
FOOTER = 64


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def plan(files, kind: str = "dir") -> dict:
    """Offsets and the manifest document for ``files`` (a list of (name, bytes))."""
    entries, off = [], 0
    for name, data in files:
        entries.append({"name": name, "offset": off, "length": len(data),
                        "sha256": hashlib.sha256(data).hexdigest()})
        off = align(off + len(data))
    if kind == "file":
        top_sha, top_bytes = entries[0]["sha256"], entries[0]["length"]
    else:
        # What the top-level digest of a directory means is the C writer's to
        # define; the client does not check it for kind "dir".
        h = hashlib.sha256()
        for _, data in files:
            h.update(data)
        top_sha, top_bytes = h.hexdigest(), sum(len(d) for _, d in files)
    doc = {"version": 1, "kind": kind, "sha256": top_sha, "bytes": top_bytes, "files": entries}
    return {"manifest_offset": off, "doc": doc}


def footer(manifest_offset: int, manifest: bytes, *, version: int = 1, flags: int = 0) -> bytes:
    head = (b"PFSMANIF" + struct.pack("<IIQQI", version, flags, manifest_offset, len(manifest),
                                      crc32c(manifest)) + bytes(24))
    assert len(head) == 60
    return head + struct.pack("<I", crc32c(head))


def write(view, files, kind: str = "dir", *, corrupt=None) -> dict:
    """Write ``files`` into the writable buffer ``view`` (the whole blob, zero-filled
    by `pfs blob create --fill zero`) and return the plan: offsets, the manifest
    document, where the manifest and the footer went."""
    p = plan(files, kind)
    mbytes = json.dumps(p["doc"]).encode()
    size = len(view)
    moff = p["manifest_offset"]
    if moff + len(mbytes) > size - FOOTER:
        raise ValueError(f"{moff + len(mbytes) + FOOTER} bytes do not fit in a blob of {size}")
    for (name, data), e in zip(files, p["doc"]["files"]):
        view[e["offset"] : e["offset"] + len(data)] = data
    view[moff : moff + len(mbytes)] = mbytes
    view[size - FOOTER :] = footer(moff, mbytes)
    p.update(manifest_bytes=mbytes, manifest_length=len(mbytes), footer_offset=size - FOOTER)
    if corrupt is not None:
        corrupt(view, p)
    return p


def write_dir(root, files, size: int, *, offsets=None, manifest_offset=None,
              tail_from=None) -> dict:
    """Write the files layout of ``files`` into ``root`` (a holder's N.d, created):
    ``files/<name>`` with each file's exact bytes and ``tail`` with the bytes from the
    manifest offset to ``size`` (manifest, zeros, footer), as a files-layout holder
    keeps them. ``offsets`` (name -> offset) and ``manifest_offset`` override the
    packed ones, to make layouts a holder never writes; ``tail_from`` (the whole flat
    blob's bytes) copies the tail from a flat blob instead of writing it."""
    import os
    from pathlib import Path

    root = Path(root)
    p = plan(files, "dir")
    if offsets:
        for e in p["doc"]["files"]:
            e["offset"] = offsets.get(e["name"], e["offset"])
    if offsets or manifest_offset:
        p["manifest_offset"] = manifest_offset or max(
            align(e["offset"] + e["length"]) for e in p["doc"]["files"])
    moff = p["manifest_offset"]
    for name, data in files:
        f = root / "files" / name
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(data)
        os.chmod(f, 0o444)
    if tail_from is not None:
        tail = bytes(tail_from[moff:size])
    else:
        mbytes = json.dumps(p["doc"]).encode()
        tail = mbytes + bytes(size - moff - len(mbytes) - FOOTER) + footer(moff, mbytes)
    (root / "tail").write_bytes(tail)
    p.update(size=size, root=root)
    return p
