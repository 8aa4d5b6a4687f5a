# SPDX-License-Identifier: Apache-2.0
"""A files-layout blob, consumer side: one contiguous region made of the holder's files.

A holder of a blob loaded from files may keep it as files (docs/design/blob-layout.md,
"files layout"): in its directory ``N.d``, ``files/<name>`` holds each manifest entry's
bytes with their exact length and ``tail`` the bytes from the manifest offset to the end
(manifest JSON, zeros, footer). Asked for the blob, such a holder passes an fd of ``N.d``
(O_RDONLY|O_DIRECTORY) with the reply flag ``PFS_SHARE_F_DIR``.

``map_dir()`` rebuilds the blob the flat holders hand out, as the C client does: reserve
``size`` bytes, then map ``tail`` at the manifest offset and every file at its offset,
MAP_SHARED|MAP_FIXED, PROT_READ. The pages of each file ARE the blob's pages: nothing
is copied, nothing is allocated. Layout version 1 packs the files (each at the first
multiple of 4096 after the previous one's end, the manifest after the last), so the
mappings tile the region exactly; a layout with a gap or an overlap is refused.

Every path is opened relative to the received fd, one component at a time with
O_NOFOLLOW (Python has no openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS): a symbolic
link anywhere is refused, and the manifest's names cannot climb out (no ``..``, checked
by manifest.parse). The reserve is a Python mmap object, so the region's lifetime is
the flat blob's: it is unmapped, whole, when the Blob and the last view over it go.
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import stat
import struct

from . import manifest as _manifest
from .errors import ManifestError, PacketfsError, ProtocolError, SizeMismatch

__all__ = ["map_dir", "TAIL", "FILES"]

TAIL = "tail"
FILES = "files"
PAGE = 4096
_MAP_NORESERVE = getattr(mmap, "MAP_NORESERVE", 0x4000)
_MAP_FIXED = 0x10  # Linux, every architecture this package runs on
_PROT_NONE = 0
_FOOTER_MOFF = struct.Struct("<Q")  # the manifest offset, footer bytes 16..23

_libc = None


def _lib():
    """libc's mmap and mprotect: the mmap module cannot map at a chosen address."""
    global _libc
    if _libc is None:
        lib = ctypes.CDLL(None, use_errno=True)
        lib.mmap.restype = ctypes.c_void_p
        lib.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                             ctypes.c_int, ctypes.c_long]
        lib.mprotect.restype = ctypes.c_int
        lib.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        _libc = lib
    return _libc


def _roundup(n: int) -> int:
    return (n + PAGE - 1) // PAGE * PAGE


class _Opener:
    """Opens paths under the received directory fd, one component at a time, never
    following a symbolic link; names every failure with the holder's path."""

    def __init__(self, dir_fd: int, where: str):
        self.dir_fd = dir_fd
        self.where = where

    def _fail(self, at: int, part: str, rel: str, e: OSError, want: str) -> PacketfsError:
        if e.errno == errno.ENOTDIR:
            # O_DIRECTORY|O_NOFOLLOW on a symbolic link says ENOTDIR: tell which.
            try:
                if stat.S_ISLNK(os.stat(part, dir_fd=at, follow_symlinks=False).st_mode):
                    e = OSError(errno.ELOOP, os.strerror(errno.ELOOP))
            except OSError:
                pass
        if e.errno == errno.ELOOP:
            why = "is a symbolic link (refused: a holder's files are plain files)"
        elif e.errno == errno.ENOTDIR:
            why = "is not a directory where one is needed on the way"
        elif e.errno == errno.ENOENT:
            why = "does not exist (the holder's directory is incomplete)"
        else:
            why = e.strerror
        err = PacketfsError(f"{self.where}: {rel}: {why} (want {want})")
        err.errno = e.errno
        return err

    def open_file(self, rel: str) -> int:
        """An O_RDONLY fd of the regular file at ``rel`` (parts joined with '/')."""
        parts = rel.split("/")
        cur, opened = self.dir_fd, []
        try:
            for i, part in enumerate(parts[:-1]):
                try:
                    cur = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW |
                                  os.O_CLOEXEC, dir_fd=cur)
                except OSError as e:
                    raise self._fail(cur, part, "/".join(parts[: i + 1]), e,
                                     "a directory") from None
                opened.append(cur)
            # O_NONBLOCK: a FIFO planted in the directory must not hang the open.
            try:
                fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK |
                             os.O_CLOEXEC, dir_fd=cur)
            except OSError as e:
                raise self._fail(cur, parts[-1], rel, e, "a regular file") from None
        finally:
            for d in opened:
                os.close(d)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise PacketfsError(f"{self.where}: {rel}: not a regular file (mode {st.st_mode:#o})")
        return fd


def _check_packed(m: _manifest.Manifest, where: str) -> None:
    """Layout v1 packs files: each at the first multiple of 4096 after the previous
    one's end, the manifest after the last. Anything else would leave part of the
    region unmapped (a gap) or map two files over each other: refused."""
    pos = 0
    for e in sorted(m.files, key=lambda e: (e.offset, e.length)):
        if e.offset != pos:
            what = "a gap" if e.offset > pos else "an overlap"
            raise ManifestError(f"{where}: the manifest puts {e.name!r} at {e.offset}, the packed "
                                f"layout at {pos}: {what} (a files-layout holder serves layout "
                                f"version 1 only: files packed back to back)")
        pos = _roundup(e.offset + e.length)
    if pos != m.offset:
        raise ManifestError(f"{where}: the manifest is at {m.offset}, the packed layout puts it at "
                            f"{pos} (after the last file): a gap the holder's files do not cover")


def map_dir(dir_fd: int, size: int, where: str):
    """Map the files-layout blob whose ``N.d`` is ``dir_fd`` (the caller keeps and
    closes it); ``size`` is the holder's record. Returns (mmap, Manifest): a read-only
    region of ``size`` bytes backed by the holder's files. Raises SizeMismatch,
    ManifestError, PacketfsError (a missing file, a symbolic link, an mmap failure)."""
    st = os.fstat(dir_fd)
    if not stat.S_ISDIR(st.st_mode):
        raise ProtocolError(f"{where}: the reply says files layout (PFS_SHARE_F_DIR) but the fd "
                            f"is not a directory (mode {st.st_mode:#o})")
    if size <= 0 or size % PAGE:
        raise SizeMismatch(f"{where}: the holder's record says {size} bytes, not a positive "
                           f"multiple of {PAGE} (a files-layout blob ends with its aligned tail)")
    op = _Opener(dir_fd, where)
    tail = op.open_file(TAIL)
    try:
        tail_len = os.fstat(tail).st_size
        if tail_len < _manifest.FOOTER_SIZE or tail_len % PAGE or tail_len > size:
            raise SizeMismatch(f"{where}: {TAIL} holds {tail_len} bytes: want a multiple of "
                               f"{PAGE}, at least the footer, at most the blob's {size}")
        moff = size - tail_len
        # The footer's manifest offset must be where the tail is mapped before the
        # manifest is parsed: a parse that believed another offset would read pages
        # of the region that are not mapped yet.
        foot = os.pread(tail, _manifest.FOOTER_SIZE, tail_len - _manifest.FOOTER_SIZE)
        if len(foot) != _manifest.FOOTER_SIZE:
            raise SizeMismatch(f"{where}: {TAIL} shrank while it was read")
        if foot[:8] == _manifest.FOOTER_MAGIC:
            (said,) = _FOOTER_MOFF.unpack_from(foot, 16)
            if said != moff:
                raise SizeMismatch(f"{where}: the footer puts the manifest at {said}, but {TAIL} "
                                   f"({tail_len} bytes) starts at {moff} in a blob of {size}")
        mm = _reserve(size)
        try:
            _map_fixed(mm, moff, tail_len, tail, TAIL, where)
            view = memoryview(mm)
            try:
                m = _manifest.parse(view)  # NoManifest or ManifestError on a bad tail
            finally:
                view.release()
            _check_packed(m, where)
            for e in m.files:
                _map_file(op, mm, e, where)
        except BaseException:
            try:
                mm.close()
            except BufferError:
                pass  # the parser's view, alive in the traceback: unmapped when it goes
            raise
    finally:
        os.close(tail)
    return mm, m


def _reserve(size: int) -> mmap.mmap:
    """``size`` bytes of address space that nothing else can take, no memory behind
    it: an anonymous MAP_NORESERVE mapping, made inaccessible (PROT_NONE) until the
    files are mapped over it. A Python mmap object, so that it is unmapped when the
    Blob and every view over it are gone, as a flat blob's mapping is."""
    mm = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE,
                   prot=mmap.PROT_READ | mmap.PROT_WRITE)
    if _lib().mprotect(_addr(mm), size, _PROT_NONE):
        e = ctypes.get_errno()
        mm.close()
        raise PacketfsError(f"mprotect of a {size}-byte reserve: {os.strerror(e)}")
    return mm


def _addr(mm: mmap.mmap) -> int:
    """The address of the mapping (a writable buffer export, released at once)."""
    c = ctypes.c_char.from_buffer(mm)
    try:
        return ctypes.addressof(c)
    finally:
        del c


def _map_fixed(mm: mmap.mmap, off: int, length: int, fd: int, rel: str, where: str) -> None:
    want = _addr(mm) + off
    got = _lib().mmap(want, _roundup(length), mmap.PROT_READ, mmap.MAP_SHARED | _MAP_FIXED, fd, 0)
    if got != want:
        e = ctypes.get_errno()
        err = PacketfsError(f"{where}: cannot map {rel} ({length} bytes) at offset {off}: "
                            f"{os.strerror(e)}")
        err.errno = e
        raise err


def _map_file(op: _Opener, mm: mmap.mmap, e: _manifest.FileEntry, where: str) -> None:
    rel = f"{FILES}/{e.name}"
    fd = op.open_file(rel)
    try:
        got = os.fstat(fd).st_size
        if got != e.length:
            raise SizeMismatch(f"{where}: {rel} holds {got} bytes, the manifest says {e.length} "
                               f"(every file of a files-layout blob has its exact length)")
        if e.length:  # a zero-length file maps nothing
            _map_fixed(mm, e.offset, e.length, fd, rel, where)
    finally:
        os.close(fd)
