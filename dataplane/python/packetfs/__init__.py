# SPDX-License-Identifier: Apache-2.0
"""packetfs: map a PacketFS blob from its holder, without a copy.

    import packetfs
    from packetfs import tensors

    with packetfs.attach("/run/packetfs/default/weights.sock",
                         token_file="/etc/packetfs/token/token") as blob:
        weights = tensors.load(blob.file("model.safetensors"))

The socket and the mapping need only the Python standard library; numpy (optional)
makes the fingerprint check fast and is needed by packetfs.tensors.
"""

from .blob import Blob, attach, ping
from .errors import *  # noqa: F401,F403  (the exception classes are part of the API)
from .errors import __all__ as _errors_all
from .manifest import FileEntry, Manifest
from .share import Reply

__version__ = "0.1.0"
__all__ = ["attach", "ping", "Blob", "Reply", "Manifest", "FileEntry", *_errors_all]
