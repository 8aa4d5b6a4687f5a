# SPDX-License-Identifier: Apache-2.0
"""Every error packetfs raises is a PacketfsError with a sentence a person can act on.

``errno`` carries what the C client (``pfs_blob__from_socket``) would have set for the
same outcome, so logs of both clients can be compared. A refusal by the holder is a
``HolderRefused`` subclass per status, carrying the holder's own message.
"""

from __future__ import annotations

import errno as _errno

__all__ = [
    "PacketfsError",
    "TokenFileError",
    "HolderUnavailable",
    "SocketPermissionDenied",
    "TimedOut",
    "AttachTimeout",
    "HolderRefused",
    "BadRequest",
    "VersionMismatch",
    "TokenRejected",
    "UidNotAllowed",
    "HolderBusy",
    "HolderTimedOut",
    "HolderInternalError",
    "UnknownStatus",
    "ProtocolError",
    "SizeMismatch",
    "FingerprintMismatch",
    "NoManifest",
    "ManifestError",
    "FileNotInBlob",
    "DigestMismatch",
    "SafetensorsError",
]


class PacketfsError(Exception):
    """Base class. ``errno`` is the C client's errno for the same outcome (or None)."""

    errno: int | None = None

    def __init__(self, message: str, *, socket_path: str | None = None):
        super().__init__(message)
        self.message = message
        self.socket_path = socket_path


class TokenFileError(PacketfsError):
    """The token file cannot be used (missing, empty, too long, holds a NUL byte)."""

    errno = _errno.EINVAL


# ---- reaching the holder ----


class HolderUnavailable(PacketfsError):
    """No holder answers at the socket: the socket file is missing (no holder on this
    node, or it stopped) or nobody listens on it (the holder died)."""

    errno = _errno.ENOENT


class SocketPermissionDenied(PacketfsError):
    """connect() was refused by the socket file's mode/group (the first gate)."""

    errno = _errno.EACCES


class TimedOut(PacketfsError):
    """Base of both timeouts: ours (AttachTimeout) and the holder's (HolderTimedOut)."""

    errno = _errno.ETIMEDOUT


class AttachTimeout(TimedOut):
    """We gave up: no connection or no reply within ``timeout`` seconds."""


class ProtocolError(PacketfsError):
    """The reply is not a well-formed reply of our protocol version, or a GET reply
    came without a file descriptor."""

    errno = _errno.EPROTO


# ---- refusals: one class per status of the reply ----


class HolderRefused(PacketfsError):
    """The holder answered with a non-OK status. ``status`` is the numeric status,
    ``holder_message`` what the holder said, ``reply`` the decoded reply."""

    status: int = -1
    errno = _errno.EPROTO

    def __init__(self, message: str, *, socket_path: str | None = None, reply=None):
        super().__init__(message, socket_path=socket_path)
        self.reply = reply
        self.holder_message = reply.message if reply is not None else ""


class BadRequest(HolderRefused):
    """Status 1: the holder found our request malformed, truncated or oversized."""

    status = 1


class VersionMismatch(HolderRefused):
    """Status 2: the holder speaks another protocol version."""

    status = 2


class TokenRejected(HolderRefused):
    """Status 3: the token is not the blob's (wrong Secret, or it was rotated)."""

    status = 3
    errno = _errno.EACCES


class UidNotAllowed(HolderRefused):
    """Status 4: our uid is not in the holder's --allow-uid list."""

    status = 4
    errno = _errno.EACCES


class HolderBusy(HolderRefused):
    """Status 5: the holder has --max-clients connections in progress."""

    status = 5
    errno = _errno.EBUSY


class HolderTimedOut(HolderRefused, TimedOut):
    """Status 6: the holder saw no request from us within its --client-timeout."""

    status = 6
    errno = _errno.ETIMEDOUT


class HolderInternalError(HolderRefused):
    """Status 7: the holder failed on its side (token file, sendmsg)."""

    status = 7


class UnknownStatus(HolderRefused):
    """A status this client does not know (a newer holder)."""


REFUSALS = {c.status: c for c in (BadRequest, VersionMismatch, TokenRejected, UidNotAllowed,
                                  HolderBusy, HolderTimedOut, HolderInternalError)}


# ---- the mapping ----


class SizeMismatch(PacketfsError):
    """The received file's size differs from the holder's record."""

    errno = _errno.EINVAL


class FingerprintMismatch(PacketfsError):
    """The mapping's fingerprint differs from the holder's record: the blob was
    modified after the holder started."""

    errno = _errno.EIO


# ---- the packed layout (files + manifest + footer) ----


class NoManifest(PacketfsError):
    """The blob has no manifest footer: it was not loaded from files."""


class ManifestError(PacketfsError):
    """The footer or the manifest is present but invalid (CRC, JSON, bounds, names)."""

    errno = _errno.EBADMSG


class FileNotInBlob(PacketfsError, KeyError):
    """No file of that name in the manifest."""

    def __str__(self) -> str:  # KeyError would quote the message
        return self.message


class DigestMismatch(PacketfsError):
    """A file's sha256 differs from the manifest's."""

    errno = _errno.EIO


class SafetensorsError(PacketfsError, ValueError):
    """The bytes are not a valid safetensors file."""
