# SPDX-License-Identifier: Apache-2.0
"""attach(): take a blob from its holder and map it, as pfs_blob__from_socket() does.

The received fd refers to the holder's file (hugetlbfs or tmpfs), so the mapping shares
the holder's pages: nothing is allocated or copied, hugepages are not counted twice.
Steps, in the C client's order: fetch the fd (token checked by the holder), fstat the
size against the holder's record, mmap MAP_SHARED (PROT_READ when the holder shares
read-only or the fd is O_RDONLY), close the received fd, MADV_POPULATE_READ, recompute
the fingerprint and compare it with the holder's record.

Python's mmap keeps a duplicate of the fd for as long as the mapping lives (the C
struct pfs_blob keeps one too); the received descriptor itself is closed at once.

A holder that keeps its blob as files (reply flag F_DIR) passes their directory
instead: files_layout.map_dir() maps them back to back into one region, read-only,
and from there on everything (populate, fingerprint, manifest, views) is the same.
"""

from __future__ import annotations

import fcntl
import hashlib
import mmap
import os
import stat
import time
import warnings

from . import files_layout
from . import manifest as _manifest
from . import share
from .crc32c import fingerprint as _fingerprint
from .crc32c import fingerprint_backend
from .errors import DigestMismatch, FingerprintMismatch, PacketfsError, SizeMismatch

__all__ = ["Blob", "attach", "ping"]

MADV_POPULATE_READ = 22  # Linux 5.14; not in every Python's mmap module
SLOW_VERIFY_BYTES = 64 << 20  # warn above this when only pure Python can verify


class Blob:
    """A blob mapped from its holder. ``view`` is a memoryview over the whole mapping
    (read-only when the holder shares read-only); nothing is copied."""

    def __init__(self, mm: mmap.mmap, reply: share.Reply, read_only: bool, socket_path: str,
                 verified_with: str | None, attach_seconds: float,
                 manifest: _manifest.Manifest | None = None):
        self._mm = mm
        # A files-layout region is a writable anonymous reserve with read-only files
        # mapped over it: the view must refuse writes (they would fault).
        self._view = memoryview(mm).toreadonly() if read_only else memoryview(mm)
        self._manifest = manifest
        self.reply = reply
        self.socket_path = socket_path
        self.read_only = read_only
        self.verified_with = verified_with  # fingerprint backend used, None: not verified
        self.attach_seconds = attach_seconds

    # --- what the holder said ---
    @property
    def size(self) -> int:
        return self.reply.size

    @property
    def fingerprint(self) -> int:
        return self.reply.fingerprint

    @property
    def page_kind(self) -> str:
        """"4K", "THP", "2M" or "1G", as the holder reports (pfs_page_kind_str)."""
        return self.reply.page_kind

    @property
    def layout(self) -> str:
        """"files" when the holder keeps the blob as one file per manifest entry (the
        mapping is made of those files), "flat" for a single blob file."""
        return "files" if self.reply.files_layout else "flat"

    @property
    def view(self) -> memoryview:
        self._check_open()
        return self._view

    @property
    def closed(self) -> bool:
        return self._view is None

    def _check_open(self):
        if self._view is None:
            raise PacketfsError(f"blob from {self.socket_path} is closed")

    # --- the packed layout ---
    def manifest(self) -> _manifest.Manifest:
        """The validated manifest of a blob loaded from files; NoManifest when the
        blob was not (seeded or zero fill), ManifestError when it is corrupted."""
        self._check_open()
        if self._manifest is None:
            self._manifest = _manifest.parse(self._view)
        return self._manifest

    def file(self, name: str) -> memoryview:
        """The bytes of one file of the manifest: a slice of ``view``, no copy."""
        e = self.manifest()[name]
        return self._view[e.offset : e.offset + e.length]

    def verify(self, name: str | None = None) -> str:
        """sha256 of a file's bytes (every file's when ``name`` is None) compared with
        the manifest; returns the hex digest (of ``name``, or the manifest's own
        sha256), raises DigestMismatch. Reads the bytes where they are mapped."""
        m = self.manifest()
        entries = [m[name]] if name is not None else list(m.files)
        for e in entries:
            got = hashlib.sha256(self._view[e.offset : e.offset + e.length]).hexdigest()
            if got != e.sha256:
                raise DigestMismatch(f"{e.name}: sha256 {got} differs from the manifest's "
                                     f"{e.sha256} (the blob's bytes changed or are corrupted)",
                                     socket_path=self.socket_path)
        return entries[0].sha256 if name is not None else m.sha256

    # --- lifetime ---
    def close(self) -> None:
        """Drop the blob's reference to the mapping. The pages are unmapped now if
        nothing else points into them, else when the last array or view over them
        goes away (unmapping under a live numpy array would crash the process)."""
        if self._view is None:
            return
        view, self._view = self._view, None
        self._manifest = None
        try:
            view.release()
            self._mm.close()
        except BufferError:
            pass  # exports alive: the mmap object unmaps when they are gone
        self._mm = None

    def __enter__(self) -> "Blob":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else ("read-only" if self.read_only else "read-write")
        return (f"<packetfs.Blob {self.socket_path} {self.size} bytes ({self.layout} layout) on "
                f"{self.page_kind}, fingerprint {self.fingerprint:#018x}, {state}>")


def attach(socket_path, token=None, token_file=None, timeout: float = 5.0, *,
           verify: bool = True, populate: bool = True) -> Blob:
    """Map the blob served at ``socket_path`` by ``pfs blob serve``.

    Exactly one of ``token`` (str or bytes) and ``token_file`` (a path; trailing
    whitespace is cut, as the C client does). ``timeout`` bounds connect and reply.
    ``verify`` recomputes the fingerprint over the mapping (what the C client does by
    default; ~0.5 GB/s with numpy, ~10 MB/s without); ``populate`` maps the holder's
    pages up front with MADV_POPULATE_READ (no memory is allocated: they exist).
    """
    t0 = time.monotonic()
    path = os.fspath(socket_path)
    if (token is None) == (token_file is None):
        raise PacketfsError("attach: give exactly one of token= and token_file=")
    if token_file is not None:
        token = share.read_token_file(os.fspath(token_file))
    reply, fd = share.fetch(path, token, timeout)
    manifest = None
    try:
        if reply.files_layout:
            # The holder's own files, opened O_RDONLY: mapped read-only, whatever the
            # holder's read-only flag says.
            mm, manifest = files_layout.map_dir(fd, reply.size, f"blob from {path}")
            read_only = True
        else:
            mm, read_only = _map_flat(fd, reply, path)
    finally:
        os.close(fd)
    try:
        if populate:
            try:
                mm.madvise(MADV_POPULATE_READ)
            except OSError:
                pass  # older kernel: pages fault in on first use
        verified_with = None
        if verify:
            verified_with = fingerprint_backend()
            if verified_with == "python" and reply.size > SLOW_VERIFY_BYTES:
                warnings.warn(
                    f"packetfs: checking the fingerprint of {reply.size >> 20} MiB in pure Python "
                    f"(~7 MB/s here: about {reply.size / 7e6:.0f} s); install numpy (0.3-0.7 GB/s) "
                    f"or pass verify=False (then Blob.verify(name) checks files by sha256)",
                    RuntimeWarning, stacklevel=2)
            fp = _fingerprint(mm, verified_with)
            if fp != reply.fingerprint:
                raise FingerprintMismatch(
                    f"blob from {path}: fingerprint {fp:#018x} differs from the holder's "
                    f"{reply.fingerprint:#018x} (blob modified since the holder started)",
                    socket_path=path)
    except BaseException:
        try:
            mm.close()
        except BufferError:
            pass  # a view still alive in a traceback: unmapped when it goes
        raise
    return Blob(mm, reply, read_only, path, verified_with, time.monotonic() - t0, manifest)


def _map_flat(fd: int, reply: share.Reply, path: str):
    """The holder's single blob file: (mmap, read_only)."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_size <= 0:
        raise SizeMismatch(f"blob from {path}: the fd is not a regular non-empty file "
                           f"(mode {st.st_mode:#o}, {st.st_size} bytes)", socket_path=path)
    if st.st_size != reply.size:
        raise SizeMismatch(f"blob from {path}: the fd holds {st.st_size} bytes, the holder's "
                           f"record says {reply.size}", socket_path=path)
    # Map what the holder allows: its word (read-only flag) and the fd's mode.
    fd_read_only = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY
    read_only = reply.read_only or fd_read_only
    prot = mmap.PROT_READ if read_only else mmap.PROT_READ | mmap.PROT_WRITE
    try:
        return mmap.mmap(fd, reply.size, flags=mmap.MAP_SHARED, prot=prot), read_only
    except OSError as e:
        err = PacketfsError(f"blob from {path}: cannot map {reply.size} bytes: {e.strerror}",
                            socket_path=path)
        err.errno = e.errno
        raise err from None


def ping(socket_path, token=None, token_file=None, timeout: float = 2.0) -> share.Reply:
    """The holder's metadata (never an fd), as `pfs blob ping`: raises the same
    errors as attach(). With a token (or token_file) the holder must accept it."""
    if token is not None and token_file is not None:
        raise PacketfsError("ping: give at most one of token= and token_file=")
    if token_file is not None:
        token = share.read_token_file(os.fspath(token_file))
    return share.ping(os.fspath(socket_path), token, timeout)
