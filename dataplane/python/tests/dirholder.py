# SPDX-License-Identifier: Apache-2.0
"""Test helper: a holder of a files-layout directory on a real socket, written in
Python, for directories `pfs blob serve` would refuse to hold (a symlink, a file of
the wrong length, an unpacked layout): the consumer must refuse them too. It answers every GET
as a files-layout holder does: status OK, flag F_DIR, and a real fd of the
directory (O_RDONLY|O_DIRECTORY). The size and fingerprint it announces are given
by the test (from a real C holder of the same bytes)."""

from __future__ import annotations

import gc
import os
import socket
import struct
import threading

import packetfs
from packetfs import share


def open_fds() -> dict:
    """fd -> what it refers to, without the descriptor that lists them."""
    out = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            out[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except FileNotFoundError:
            pass  # the listing's own descriptor, closed by now
    return out


class DirHolder:
    """Answers every GET with an OK reply that carries flag F_DIR and an fd of
    ``root`` opened O_RDONLY|O_DIRECTORY, as a files-layout `pfs blob serve` does."""

    def __init__(self, sock, root, size: int, fingerprint: int, flags=None, fd_path=None):
        self.sock = sock
        self.reply = (b"PFSA" + struct.pack(
            "<HHQQIIQQIIII", 1, 0, size, fingerprint, 0,
            share.F_READ_ONLY | share.F_FD | share.F_DIR if flags is None else flags,
            1, 0, os.getpid(), 0, 0, 0))
        self.fd_path = fd_path or root
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.srv.bind(str(sock))
        self.srv.listen(4)
        self.served = threading.Semaphore(0)  # released once per reply, its fds closed
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                c, _ = self.srv.accept()
            except OSError:
                return  # closed
            with c:
                c.recv(4096)
                flags = os.O_RDONLY | (os.O_DIRECTORY if os.path.isdir(self.fd_path) else 0)
                fd = os.open(self.fd_path, flags)
                try:
                    socket.send_fds(c, [self.reply], [fd])
                finally:
                    os.close(fd)
            self.served.release()

    def attach(self, **kw):
        return packetfs.attach(self.sock, token="t", **kw)

    def fds_after(self, fn) -> tuple:
        """This process's open fds before and after fn() (an attach), once the holder
        thread closed its side of the exchange. Garbage of earlier tests (a socket in
        a kept traceback) is collected first, so that it does not close fds meanwhile."""
        gc.collect()
        before = open_fds()
        try:
            fn()
        finally:
            self.served.acquire(timeout=5)
        return before, open_fds()

    def close(self):
        self.srv.shutdown(socket.SHUT_RDWR)
        self.srv.close()
        self.thread.join(5)
        os.unlink(self.sock)
