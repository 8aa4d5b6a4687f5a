# SPDX-License-Identifier: Apache-2.0
"""The packed layout of a blob loaded from files (version 1), read and validated.

A blob loaded from a file or a directory holds:

- each file's bytes at a 4096-aligned offset;
- after the last file, at a 4096-aligned offset, a UTF-8 JSON manifest::

    {"version": 1, "kind": "file"|"dir", "sha256": "<hex>", "bytes": N,
     "files": [{"name": "a/b.bin", "offset": O, "length": L, "sha256": "<hex>"}, ...]}

- in the blob's last 64 bytes, a little-endian footer::

    0   8  b"PFSMANIF"
    8   4  u32 version (1)
    12  4  u32 flags (0)
    16  8  u64 manifest_offset
    24  8  u64 manifest_length
    32  4  u32 CRC-32C of the manifest bytes
    36 24  zero
    60  4  u32 CRC-32C of footer bytes 0..59

Nothing here is trusted: every offset and length is checked against the blob, both
CRCs are checked, names may not climb out of their directory, files may not overlap
each other or the manifest.
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass

from .crc32c import crc32c, crc32c_fast
from .errors import FileNotInBlob, ManifestError, NoManifest

__all__ = ["FileEntry", "Manifest", "parse", "FOOTER_SIZE", "FOOTER_MAGIC", "ALIGN"]

FOOTER_SIZE = 64
FOOTER_MAGIC = b"PFSMANIF"
VERSION = 1
ALIGN = 4096
_FOOTER = struct.Struct("<8sIIQQI24sI")
assert _FOOTER.size == FOOTER_SIZE
_HEX64 = re.compile(r"[0-9a-f]{64}\Z")


@dataclass(frozen=True)
class FileEntry:
    """One file of the manifest: where its bytes are in the blob and their sha256."""

    name: str
    offset: int
    length: int
    sha256: str


@dataclass(frozen=True)
class Manifest:
    """The validated manifest. ``files`` keeps the manifest's order."""

    version: int
    kind: str  # "file" or "dir"
    sha256: str
    bytes: int
    files: tuple
    offset: int  # where the manifest itself is in the blob
    length: int

    def names(self) -> list:
        return [f.name for f in self.files]

    def __contains__(self, name) -> bool:
        return any(f.name == name for f in self.files)

    def __getitem__(self, name: str) -> FileEntry:
        for f in self.files:
            if f.name == name:
                return f
        shown = ", ".join(repr(n) for n in self.names()[:8])
        more = f" and {len(self.files) - 8} more" if len(self.files) > 8 else ""
        raise FileNotInBlob(f"no file {name!r} in the blob's manifest (it has {shown}{more})")


def _bad(msg: str) -> ManifestError:
    return ManifestError(f"blob manifest: {msg}")


def _int(v, what: str) -> int:
    if type(v) is not int or v < 0:  # bool is an int subclass: refuse it too
        raise _bad(f"{what} must be a non-negative integer, got {v!r}")
    return v


def _digest(v, what: str) -> str:
    if not isinstance(v, str) or not _HEX64.match(v):
        raise _bad(f"{what} must be 64 lowercase hex digits (a sha256), got {v!r}")
    return v


def check_name(name) -> str:
    """A relative path inside the packed directory: no '..', no leading '/'."""
    if not isinstance(name, str) or not name:
        raise _bad(f"a file name must be a non-empty string, got {name!r}")
    if "\0" in name:
        raise _bad(f"file name {name!r} contains a NUL byte")
    if name.startswith("/"):
        raise _bad(f"file name {name!r} is absolute (a leading '/')")
    for part in name.split("/"):
        if part in ("", ".", ".."):
            raise _bad(f"file name {name!r} has a {part or 'empty'!r} component "
                       f"(names are relative paths that stay inside the directory)")
    return name


def _footer(buf, size: int):
    if size < FOOTER_SIZE:
        raise NoManifest(f"the blob ({size} bytes) is too small to end with a manifest footer: "
                         f"it was not loaded from files")
    raw = bytes(buf[size - FOOTER_SIZE : size])
    magic, version, flags, moff, mlen, mcrc, reserved, fcrc = _FOOTER.unpack(raw)
    if magic != FOOTER_MAGIC:
        raise NoManifest(f"the blob has no manifest (its last 64 bytes do not start with "
                         f"{FOOTER_MAGIC.decode()}): it was not loaded from files (a seeded or "
                         f"zero fill has no files in it)")
    computed = crc32c(raw[:60])
    if computed != fcrc:
        raise _bad(f"footer CRC-32C is {computed:#010x}, the footer says {fcrc:#010x}: the "
                   f"footer is corrupted")
    if version != VERSION:
        raise _bad(f"footer version {version}; this client reads version {VERSION}")
    if flags:
        raise _bad(f"footer flags {flags:#x} unknown to this client (version {VERSION} has none)")
    if reserved != bytes(24):
        raise _bad("footer reserved bytes 36..59 are not zero")
    return moff, mlen, mcrc


def parse(buf) -> Manifest:
    """Validate the footer and the manifest at the end of ``buf`` (the whole blob)."""
    mv = memoryview(buf).cast("B")
    size = len(mv)
    moff, mlen, mcrc = _footer(mv, size)
    limit = size - FOOTER_SIZE
    if moff % ALIGN:
        raise _bad(f"manifest offset {moff} is not {ALIGN}-aligned")
    if mlen == 0 or moff > limit or mlen > limit - moff:
        raise _bad(f"manifest [{moff}, +{mlen}) lies outside the blob's {limit} bytes before "
                   f"the footer")
    body = mv[moff : moff + mlen]
    computed = crc32c_fast(body)
    if computed != mcrc:
        raise _bad(f"manifest CRC-32C is {computed:#010x}, the footer says {mcrc:#010x}: the "
                   f"manifest is corrupted")
    try:
        doc = json.loads(bytes(body).decode("utf-8"))
    except UnicodeDecodeError as e:
        raise _bad(f"manifest is not UTF-8 ({e.reason} at byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise _bad(f"manifest is not JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    if not isinstance(doc, dict):
        raise _bad(f"manifest is a JSON {type(doc).__name__}, not an object")
    if doc.get("version") != VERSION or type(doc.get("version")) is not int:
        raise _bad(f"manifest version {doc.get('version')!r}; this client reads version {VERSION}")
    kind = doc.get("kind")
    if kind not in ("file", "dir"):
        raise _bad(f"manifest kind {kind!r}, want 'file' or 'dir'")
    sha = _digest(doc.get("sha256"), "manifest sha256")
    total = _int(doc.get("bytes"), "manifest bytes")
    files_doc = doc.get("files")
    if not isinstance(files_doc, list):
        raise _bad(f"manifest files must be a list, got {type(files_doc).__name__}")
    files = []
    seen = set()
    for i, f in enumerate(files_doc):
        if not isinstance(f, dict):
            raise _bad(f"files[{i}] is not an object")
        name = check_name(f.get("name"))
        if name in seen:
            raise _bad(f"file {name!r} is listed twice")
        seen.add(name)
        off = _int(f.get("offset"), f"{name}: offset")
        length = _int(f.get("length"), f"{name}: length")
        digest = _digest(f.get("sha256"), f"{name}: sha256")
        if off % ALIGN:
            raise _bad(f"{name}: offset {off} is not {ALIGN}-aligned")
        if off > moff or length > moff - off:
            raise _bad(f"{name}: [{off}, +{length}) runs past the manifest at {moff} (the blob "
                       f"holds {size} bytes)")
        files.append(FileEntry(name, off, length, digest))
    by_offset = sorted(files, key=lambda e: (e.offset, e.length))
    for a, b in zip(by_offset, by_offset[1:]):
        if a.offset + a.length > b.offset:
            raise _bad(f"files {a.name!r} [{a.offset}, +{a.length}) and {b.name!r} "
                       f"[{b.offset}, +{b.length}) overlap")
    if kind == "file":
        if len(files) != 1:
            raise _bad(f"kind 'file' must list exactly one file, it lists {len(files)}")
        if files[0].length != total or files[0].sha256 != sha:
            raise _bad(f"kind 'file': bytes/sha256 ({total}, {sha[:12]}...) differ from the file's "
                       f"({files[0].length}, {files[0].sha256[:12]}...)")
    return Manifest(VERSION, kind, sha, total, tuple(files), moff, mlen)
