#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Print the path of a virtualenv that has the pinned requirements in $1
# installed, creating it when missing. It lives outside the repository, in
# ~/.cache/packetfs/venv-<hash>, the hash of the requirements file and of the
# interpreter's version, so a changed pin or interpreter makes a new one and
# a warm machine pays nothing. A venv is used only once its install finished
# (a marker file), so an interrupted run is redone, not trusted. Progress
# goes to stderr; stdout is the path alone.
set -euo pipefail

reqs=${1:?usage: hack/python-venv.sh REQUIREMENTS_FILE}
python=${PYTHON:-python3}
cache=${PFS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/packetfs}
command -v "$python" >/dev/null || { echo "python-venv: no $python on PATH" >&2; exit 1; }
hash=$({ cat "$reqs"; "$python" -c 'import sys; print(sys.version)'; } | sha256sum | cut -c1-12)
venv=$cache/venv-$hash
mkdir -p "$cache"
exec 9>"$venv.lock"
flock 9 # two make runs at once build it once
if [ ! -e "$venv/.complete" ]; then
  rm -rf "$venv"
  echo "python-venv: creating $venv ($("$python" --version 2>&1), $reqs)" >&2
  "$python" -m venv "$venv" >&2 ||
    { echo "python-venv: '$python -m venv' failed (Debian's python3 needs python3-venv)" >&2; exit 1; }
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$reqs" >&2
  touch "$venv/.complete"
fi
echo "$venv"
