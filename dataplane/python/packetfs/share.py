# SPDX-License-Identifier: Apache-2.0
"""The blob-share protocol, consumer side: the same bytes and the same checks as the
C client (dataplane/src/share/blob_share.c, layout in dataplane/include/pfs/share_wire.h).

AF_UNIX SOCK_SEQPACKET; one request, one reply, each one message; little-endian::

    request  "PFSQ" u16 version u16 op u16 token_len u16 0  token[token_len]
    reply    "PFSA" u16 version u16 status u64 size u64 fingerprint
             u32 page_kind u32 flags u64 accepted u64 refused
             u32 peer_pid u32 peer_uid u32 peer_gid u32 msg_len  msg[msg_len]

GET with the right token: status OK and the blob's fd as SCM_RIGHTS (with flag
F_DIR: an fd of the directory of a files-layout blob, see files_layout.py). PING: the
metadata, never an fd. Anything else: a status and a message, then the holder closes.
"""

from __future__ import annotations

import array
import errno
import os
import socket
import struct
from dataclasses import dataclass

from .errors import (
    REFUSALS,
    AttachTimeout,
    HolderUnavailable,
    PacketfsError,
    ProtocolError,
    SocketPermissionDenied,
    TokenFileError,
    UnknownStatus,
)

__all__ = ["Reply", "read_token_file", "fetch", "ping", "PAGE_KINDS", "STATUS_TEXT"]

VERSION = 1
OP_GET = 1
OP_PING = 2
TOKEN_MAX = 1024
MSG_MAX = 192
REQ_HDR = 12
REPLY_HDR = 64
REPLY_MAX = REPLY_HDR + MSG_MAX
F_READ_ONLY = 0x1
F_FD = 0x2
F_DIR = 0x4  # the fd is the holder's N.d directory: a files-layout blob (files_layout.py)
MAX_FDS = 4  # control space offered, as the C client: extra fds are closed

# pfs_page_kind_str(), indexed by the wire's page kind.
PAGE_KINDS = ("4K", "THP", "2M", "1G")
# pfs_share_status_str()
STATUS_TEXT = {
    0: "ok",
    1: "bad request",
    2: "unsupported protocol version",
    3: "token rejected",
    4: "uid not allowed",
    5: "holder busy",
    6: "timed out",
    7: "holder error",
}

_REPLY = struct.Struct("<4sHHQQIIQQIIII")
assert _REPLY.size == REPLY_HDR
_SUN_PATH_MAX = 107  # sizeof(sun_path) - 1


@dataclass(frozen=True)
class Reply:
    """The holder's reply: what it says about its blob and what it saw of us."""

    version: int
    status: int
    size: int
    fingerprint: int
    page_kind: str  # "4K", "THP", "2M", "1G"
    flags: int
    accepted: int
    refused: int
    peer_pid: int
    peer_uid: int
    peer_gid: int
    message: str

    @property
    def read_only(self) -> bool:
        return bool(self.flags & F_READ_ONLY)

    @property
    def files_layout(self) -> bool:
        """The holder keeps the blob as files and passed their directory."""
        return bool(self.flags & F_DIR)

    @property
    def status_text(self) -> str:
        return STATUS_TEXT.get(self.status, "unknown status")


def encode_request(op: int, token: bytes, version: int = VERSION) -> bytes:
    return b"PFSQ" + struct.pack("<HHHH", version, op, len(token), 0) + token


def decode_reply(data: bytes) -> Reply:
    """share_reply_decode(): exactly one well-formed reply, or ProtocolError."""
    if len(data) < REPLY_HDR or data[:4] != b"PFSA":
        raise ProtocolError(f"the holder's reply is not a blob-share reply ({len(data)} bytes, "
                            f"magic {bytes(data[:4])!r}, want b'PFSA')")
    (_, version, status, size, fp, page, flags, accepted, refused, pid, uid, gid,
     ml) = _REPLY.unpack_from(data)
    if ml > MSG_MAX or len(data) != REPLY_HDR + ml:
        raise ProtocolError(f"the holder's reply is malformed: message length {ml} in a reply "
                            f"of {len(data)} bytes (header {REPLY_HDR}, message at most {MSG_MAX})")
    if page >= len(PAGE_KINDS):
        raise ProtocolError(f"the holder's reply names page kind {page}, which does not exist")
    # The message is shown to humans: keep it printable (as the C decoder does).
    msg = "".join(chr(b) if 0x20 <= b <= 0x7E else "?" for b in data[REPLY_HDR:])
    return Reply(version, status, size, fp, PAGE_KINDS[page], flags, accepted, refused, pid, uid,
                 gid, msg)


def read_token_file(path: str) -> bytes:
    """pfs_share_token_read(): the token in ``path`` without trailing whitespace."""
    try:
        with open(path, "rb") as f:
            data = f.read(TOKEN_MAX + 1)
    except OSError as e:
        raise TokenFileError(f"token file {path}: {e.strerror}") from e
    data = data.rstrip(b"\n\r \t")
    if len(data) > TOKEN_MAX:
        raise TokenFileError(f"token file {path}: longer than {TOKEN_MAX} bytes")
    if b"\0" in data:
        raise TokenFileError(f"token file {path}: contains a NUL byte (a token is text, e.g. hex digits)")
    if not data:
        raise TokenFileError(f"token file {path}: empty")
    return data


def _token_bytes(token) -> bytes:
    if token is None:
        return b""
    t = token.encode() if isinstance(token, str) else bytes(token)
    if len(t) > TOKEN_MAX:
        raise PacketfsError(f"token longer than {TOKEN_MAX} bytes")
    if b"\0" in t:
        # The C side sends tokens as C strings: a NUL would cut them short.
        raise PacketfsError("token contains a NUL byte (a token is text, e.g. hex digits)")
    return t


def refusal(path: str, r: Reply) -> PacketfsError:
    """The HolderRefused subclass for a non-OK reply, with the holder's words."""
    cls = REFUSALS.get(r.status, UnknownStatus)
    said = r.message or r.status_text
    return cls(f"blob holder {path} refused: {said} ({r.status_text}, status {r.status})",
               socket_path=path, reply=r)


def _connect_error(path: str, e: OSError) -> PacketfsError:
    if e.errno == errno.ENOENT:
        return HolderUnavailable(f"no blob holder at {path}: the socket does not exist (no holder "
                                 f"for this blob on this node, or it stopped)", socket_path=path)
    if e.errno == errno.ECONNREFUSED:
        err = HolderUnavailable(f"no blob holder listens on {path} (the socket file is left from a "
                                f"holder that is gone)", socket_path=path)
        err.errno = errno.ECONNREFUSED
        return err
    if e.errno in (errno.EACCES, errno.EPERM):
        return SocketPermissionDenied(
            f"blob holder {path}: permission denied: the socket's mode/group does not admit uid "
            f"{os.getuid()} gid {os.getgid()} (groups {sorted(os.getgroups())})", socket_path=path)
    if e.errno in (errno.EAGAIN, errno.EINPROGRESS):
        return AttachTimeout(f"blob holder {path}: no connection within the timeout (its backlog "
                             f"is full)", socket_path=path)
    err = PacketfsError(f"blob holder {path}: connect: {e.strerror}", socket_path=path)
    err.errno = e.errno
    return err


def exchange(path: str, op: int, token, timeout: float, version: int = VERSION):
    """One request, one reply: returns (Reply, fd or None). Raises a PacketfsError
    for every outcome but status OK (with an fd for GET)."""
    path = os.fspath(path)
    tok = _token_bytes(token)
    if len(os.fsencode(path)) > _SUN_PATH_MAX:
        raise PacketfsError(f"socket path {path} is longer than {_SUN_PATH_MAX} bytes",
                            socket_path=path)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC)
    fd = None
    try:
        s.settimeout(None)  # blocking, whatever socket.setdefaulttimeout() says
        # Blocking socket with SO_SNDTIMEO/SO_RCVTIMEO, as the C client: an
        # AF_UNIX connect waits on a full backlog for the send timeout.
        sec = max(0.001, float(timeout))
        tv = struct.pack("@ll", int(sec), int((sec - int(sec)) * 1e6))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, tv)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, tv)
        try:
            s.connect(path)
        except OSError as e:
            raise _connect_error(path, e) from None
        req = encode_request(op, tok, version)
        try:
            s.send(req, socket.MSG_NOSIGNAL)
        except (BrokenPipeError, ConnectionResetError):
            pass  # a holder that refuses at once may close first: read its reply
        except BlockingIOError:
            raise AttachTimeout(f"blob holder {path}: request not accepted within {timeout} s",
                                socket_path=path) from None
        # A holder that refuses at once (busy, uid) may reply and close before
        # reading our request; the socket then reports ECONNRESET once, ahead
        # of the reply that is already queued. Read past it.
        for tries in range(3):
            try:
                data, anc, mflags, _ = s.recvmsg(REPLY_MAX + 1, socket.CMSG_SPACE(MAX_FDS * 4),
                                                 socket.MSG_CMSG_CLOEXEC)
                break
            except (ConnectionResetError, BrokenPipeError):
                if tries == 2:
                    raise HolderUnavailable(f"blob holder {path} closed the connection without "
                                            f"a reply", socket_path=path) from None
            except BlockingIOError:
                raise AttachTimeout(f"blob holder {path}: no reply within {timeout} s",
                                    socket_path=path) from None
        # Take every passed fd first, so none leaks whatever happens next.
        for level, typ, cdata in anc:
            if level != socket.SOL_SOCKET or typ != socket.SCM_RIGHTS:
                continue
            fds = array.array("i")
            fds.frombytes(cdata[: len(cdata) - len(cdata) % fds.itemsize])
            for f in fds:
                if fd is None:
                    fd = f
                else:
                    os.close(f)
        if not data:
            raise HolderUnavailable(f"blob holder {path} closed the connection without a reply",
                                    socket_path=path)
        if mflags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
            raise ProtocolError(f"blob holder {path}: the reply or its fds did not fit "
                                f"({len(data)} bytes, flags {mflags:#x})", socket_path=path)
        try:
            r = decode_reply(data)
        except ProtocolError as e:
            raise ProtocolError(f"blob holder {path}: {e.message}", socket_path=path) from None
        if r.status != 0:
            raise refusal(path, r)
        if r.version != VERSION:
            raise ProtocolError(f"blob holder {path} replied with protocol version {r.version}, "
                                f"this client speaks {VERSION}", socket_path=path)
        if op == OP_GET and fd is None:
            raise ProtocolError(f"blob holder {path} said OK but passed no file descriptor",
                                socket_path=path)
        got, fd = fd, None
        return r, got
    finally:
        if fd is not None:
            os.close(fd)
        s.close()


def fetch(path: str, token, timeout: float = 5.0):
    """pfs_share_fetch(): (Reply, fd). The caller owns the fd."""
    return exchange(path, OP_GET, token, timeout)


def ping(path: str, token=None, timeout: float = 2.0) -> Reply:
    """pfs_share_ping(): the holder's metadata; with a token it must also accept it."""
    r, fd = exchange(path, OP_PING, token, timeout)
    if fd is not None:
        os.close(fd)  # a ping never takes an fd, even from a confused holder
    return r
