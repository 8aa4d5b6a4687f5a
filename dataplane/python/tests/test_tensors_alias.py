# SPDX-License-Identifier: Apache-2.0
"""packetfs.safetensors, the reader's old name, is a deprecated alias of
packetfs.tensors for one release: importing it warns and gives the same module.

Each case runs in a fresh interpreter: a module warns once, when it is first
imported, and pytest's own process may have imported it already."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import HERE

PROBE = """
import json, sys, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    exec(sys.argv[1])
import packetfs, packetfs.tensors
print(json.dumps({
    "warnings": [[w.category.__name__, str(w.message), w.filename, w.lineno] for w in caught],
    "same_module": old is packetfs.tensors,
    "same_attr": packetfs.safetensors is packetfs.tensors,
    "same_load": old.load is packetfs.tensors.load,
    "same_error": packetfs.SafetensorsError is packetfs.tensors.SafetensorsError,
    "in_sys_modules": sys.modules["packetfs.safetensors"] is packetfs.tensors,
}))
"""


def probe(statement: str) -> dict:
    r = subprocess.run([sys.executable, "-c", PROBE, statement], capture_output=True, text=True,
                       timeout=60, env={"PYTHONPATH": str(HERE.parent), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("statement", [
    "from packetfs import safetensors as old",
    "import packetfs.safetensors as old",
    "import packetfs.safetensors\nold = packetfs.safetensors",
])
def test_old_name_warns_and_is_the_same_module(statement):
    got = probe(statement)
    assert [w[0] for w in got["warnings"]] == ["DeprecationWarning"], got
    category, message, filename, lineno = got["warnings"][0]
    assert "packetfs.safetensors is renamed packetfs.tensors" in message
    # The warning names the importing line, not the import machinery.
    assert (filename, lineno) == ("<string>", 1), got
    assert got["same_module"] and got["same_attr"] and got["same_load"] and got["same_error"]
    assert got["in_sys_modules"]


def test_new_name_does_not_warn():
    r = subprocess.run([sys.executable, "-W", "error", "-c",
                        "import sys, packetfs, packetfs.tensors\n"
                        "assert 'packetfs.safetensors' not in sys.modules"],
                       capture_output=True, text=True, timeout=60,
                       env={"PYTHONPATH": str(HERE.parent), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr


def test_default_filter_shows_it_to_a_script():
    """Python's default filters show a DeprecationWarning raised on behalf of __main__."""
    r = subprocess.run([sys.executable, "-c", "from packetfs import safetensors"],
                       capture_output=True, text=True, timeout=60,
                       env={"PYTHONPATH": str(HERE.parent), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0 and "DeprecationWarning: packetfs.safetensors is renamed" in r.stderr
