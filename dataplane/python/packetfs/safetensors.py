# SPDX-License-Identifier: Apache-2.0
"""Deprecated alias of :mod:`packetfs.tensors`, kept for one release (removed in 0.2).

The module was renamed because ``packetfs.safetensors`` read like the real
``safetensors`` package from PyPI inside ``packetfs`` imports. Importing this name
warns (DeprecationWarning) and gives the very module ``packetfs.tensors``: the same
functions and classes, not copies, so ``isinstance`` and identity checks keep working.
"""

import sys
import warnings

from . import tensors as _tensors


# stacklevel=2 names the importer's line: warnings skips the frames of the import
# machinery (importlib._bootstrap) when it counts, so Python's default filter (which
# shows DeprecationWarning for code in __main__) sees the code that imported us.
warnings.warn("packetfs.safetensors is renamed packetfs.tensors (this alias goes in 0.2): "
              "write `from packetfs import tensors`", DeprecationWarning,
              stacklevel=2)

# The import system hands out whatever sys.modules holds under this name once the
# module has run: from here on `packetfs.safetensors` IS `packetfs.tensors`.
sys.modules[__name__] = _tensors
