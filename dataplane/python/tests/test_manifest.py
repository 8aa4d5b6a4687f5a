# SPDX-License-Identifier: Apache-2.0
"""The packed layout: manifest, files as views, sha256 checks, and every refusal."""

from __future__ import annotations

import hashlib
import json
import struct

import pytest

import packer
import packetfs
from conftest import MiB, SILERO_ST
from packetfs import manifest as pm


def test_manifest_lists_the_real_files(packed):
    with packed.attach() as blob:
        m = blob.manifest()
        assert m.version == 1 and m.kind == "dir"
        assert m.names() == list(packed.files)
        for e in m.files:
            data = packed.files[e.name]
            assert e.offset % 4096 == 0 and e.length == len(data)
            assert e.sha256 == hashlib.sha256(data).hexdigest()
        assert m.offset == packed.plan["manifest_offset"]


def test_file_is_a_view_of_the_mapping_not_a_copy(packed):
    with packed.attach() as blob:
        for name, data in packed.files.items():
            v = blob.file(name)
            assert isinstance(v, memoryview) and v.readonly
            assert v.obj is blob.view.obj  # the mmap itself: a slice, no copy
            assert v == data
            del v


def test_verify_against_the_manifest(packed):
    with packed.attach() as blob:
        for name, data in packed.files.items():
            assert blob.verify(name) == hashlib.sha256(data).hexdigest()
        assert blob.verify() == blob.manifest().sha256


def test_unknown_file(packed):
    with packed.attach() as blob:
        with pytest.raises(packetfs.FileNotInBlob, match="no file 'nope.bin'") as ei:
            blob.file("nope.bin")
        assert isinstance(ei.value, KeyError)
        assert SILERO_ST in str(ei.value)  # says what there is


def test_kind_file(env, real_files):
    name, data = real_files[0]
    p = env.pack([("silero_vad_16k.safetensors", data)], "file")
    with p.attach() as blob:
        m = blob.manifest()
        assert m.kind == "file" and m.bytes == len(data)
        assert m.sha256 == hashlib.sha256(data).hexdigest()
        assert blob.file("silero_vad_16k.safetensors") == data


def test_a_blob_not_loaded_from_files_has_no_manifest(env):
    for fill in ("zero", "seed"):
        h = env.holder(env.blob("4k", 2 * MiB, fill=fill)).start()
        with h.attach() as blob:
            with pytest.raises(packetfs.NoManifest, match="not loaded from files"):
                blob.manifest()
            with pytest.raises(packetfs.NoManifest):
                blob.file("anything")


def _flip(offset_of):
    def corrupt(view, plan):
        off = offset_of(plan)
        view[off] ^= 0x01
    return corrupt


# Corruptions written into a real blob, seen through a real holder.
@pytest.mark.parametrize("corrupt, error, words", [
    (_flip(lambda p: p["footer_offset"] + 20), packetfs.ManifestError, "footer is corrupted"),
    (_flip(lambda p: p["footer_offset"] + 60), packetfs.ManifestError, "footer is corrupted"),
    (_flip(lambda p: p["footer_offset"]), packetfs.NoManifest, "not loaded from files"),
    (_flip(lambda p: p["manifest_offset"] + 5), packetfs.ManifestError, "manifest is corrupted"),
    (_flip(lambda p: p["manifest_offset"] + p["manifest_length"] - 1), packetfs.ManifestError,
     "manifest is corrupted"),
], ids=["footer-offset-field", "footer-crc", "footer-magic", "manifest-head", "manifest-tail"])
def test_corruption_through_the_holder(env, real_files, corrupt, error, words):
    p = env.pack(real_files[:1], corrupt=corrupt)
    with p.attach() as blob:
        with pytest.raises(error, match=words):
            blob.manifest()


def test_file_bytes_changed_after_packing(env, real_files):
    """Data bytes are not under the manifest's CRC: verify() is what catches them."""
    p = env.pack(real_files[:2], corrupt=lambda view, plan: view.__setitem__(
        plan["doc"]["files"][1]["offset"] + 1000, view[plan["doc"]["files"][1]["offset"] + 1000] ^ 0xFF))
    with p.attach() as blob:
        assert blob.verify(real_files[0][0])
        with pytest.raises(packetfs.DigestMismatch, match="differs from the manifest"):
            blob.verify(real_files[1][0])
        with pytest.raises(packetfs.DigestMismatch):
            blob.verify()


# ---- the validation rules, on a buffer in memory (valid CRCs, bad content) ----


def _blob_with(doc, size=1 * MiB, files=(), footer_kw=None, moff=None):
    buf = bytearray(size)
    for off, data in files:
        buf[off : off + len(data)] = data
    body = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    moff = moff if moff is not None else 8192
    if moff + len(body) <= size - 64:
        buf[moff : moff + len(body)] = body
    buf[-64:] = packer.footer(moff, body, **(footer_kw or {}))
    return buf


def _doc(files, kind="dir", **top):
    d = {"version": 1, "kind": kind, "sha256": "0" * 64, "bytes": 0, "files": files}
    d.update(top)
    return d


def _f(name="a.bin", offset=0, length=10, sha="a" * 64):
    return {"name": name, "offset": offset, "length": length, "sha256": sha}


@pytest.mark.parametrize("doc, words", [
    (_doc([_f("../etc/passwd")]), "'..' component"),
    (_doc([_f("a/../../b")]), "'..' component"),
    (_doc([_f("/etc/passwd")]), "absolute"),
    (_doc([_f("a//b")]), "'empty' component"),
    (_doc([_f("./a")]), "'.' component"),
    (_doc([_f("")]), "non-empty string"),
    (_doc([_f("a\0b")]), "NUL"),
    (_doc([_f(), _f()]), "listed twice"),
    (_doc([_f(offset=100)]), "not 4096-aligned"),
    (_doc([_f(offset=4096, length=8192)]), "runs past the manifest"),
    (_doc([_f(offset=1 << 40)]), "runs past the manifest"),
    (_doc([_f("a", 0, 5000), _f("b", 4096, 10)]), "overlap"),
    (_doc([_f(length=-1)]), "non-negative integer"),
    (_doc([_f(length=True)]), "non-negative integer"),
    (_doc([_f(length="10")]), "non-negative integer"),
    (_doc([_f(sha="xyz")]), "64 lowercase hex"),
    (_doc([_f(sha="A" * 64)]), "64 lowercase hex"),
    (_doc([_f()], version=2), "manifest version 2"),
    (_doc([_f()], kind="tar"), "kind 'tar'"),
    (_doc("nope"), "files must be a list"),
    (_doc(["a.bin"]), "files\\[0\\] is not an object"),
    (_doc([_f(), _f("b", 4096)], kind="file"), "exactly one file"),
    (_doc([_f()], kind="file", bytes=11, sha256="a" * 64), "differ from the file's"),
    ([1, 2], "not an object"),
    (b"{not json", "not JSON"),
    (b'{"version": 1, "kind": "\xff"}', "not UTF-8"),
])
def test_manifest_rules(doc, words):
    with pytest.raises(packetfs.ManifestError, match=words):
        pm.parse(_blob_with(doc))


def test_manifest_rules_accept_a_valid_layout():
    m = pm.parse(_blob_with(_doc([_f("a.bin", 0, 10), _f("d/e.bin", 4096, 0)])))
    assert m.names() == ["a.bin", "d/e.bin"] and m["d/e.bin"].length == 0


@pytest.mark.parametrize("footer_kw, moff, words", [
    ({"version": 2}, None, "footer version 2"),
    ({"flags": 1}, None, "footer flags 0x1"),
    ({}, 100, "not 4096-aligned"),
    ({}, 2 * MiB, "outside the blob"),
])
def test_footer_rules(footer_kw, moff, words):
    with pytest.raises(packetfs.ManifestError, match=words):
        pm.parse(_blob_with(_doc([]), footer_kw=footer_kw, moff=moff))


def test_footer_reserved_bytes_must_be_zero():
    buf = _blob_with(_doc([]))
    head = bytearray(buf[-64:-4])
    head[40] = 1
    buf[-64:] = bytes(head) + struct.pack("<I", packer.crc32c(bytes(head)))
    with pytest.raises(packetfs.ManifestError, match="reserved"):
        pm.parse(buf)


def test_manifest_length_out_of_bounds():
    buf = _blob_with(_doc([]))
    head = bytearray(buf[-64:-4])
    head[24:32] = struct.pack("<Q", 1 << 62)
    buf[-64:] = bytes(head) + struct.pack("<I", packer.crc32c(bytes(head)))
    with pytest.raises(packetfs.ManifestError, match="outside the blob"):
        pm.parse(buf)


def test_too_small_for_a_footer():
    with pytest.raises(packetfs.NoManifest, match="too small"):
        pm.parse(bytes(63))
