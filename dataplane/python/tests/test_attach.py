# SPDX-License-Identifier: Apache-2.0
"""attach() against a real `pfs blob serve`: what it maps, and every way it refuses."""

from __future__ import annotations

import errno
import hashlib
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

import pytest

import packetfs
from conftest import HERE, MiB, run_as, run_pfs
from packetfs import share


@pytest.fixture(params=["4k", "2m"])
def seeded(request, env):
    """A seeded 8 MiB blob and its fingerprint as `pfs blob info` computes it."""
    b = env.blob(request.param, 8 * MiB, fill="seed")
    info = run_pfs(env.pfs, "blob", "info", "--name", b.name, "--dir", b.dir)
    return b, int(info["blob"]["fingerprint"], 16)


def test_read_only_attach_maps_the_holders_blob(env, seeded):
    b, fp = seeded
    h = env.holder(b).start(read_only=True)
    with h.attach() as blob:
        assert blob.size == b.size == len(blob.view)
        assert blob.fingerprint == fp
        assert blob.page_kind == {"4k": "4K", "2m": "2M"}[b.page]
        assert blob.read_only and blob.view.readonly
        assert blob.verified_with == "numpy"
        # The mapping is the holder's file: same bytes as reading it.
        with open(b.path, "rb") as f:
            head = f.read(1 * MiB)
        assert blob.view[: 1 * MiB] == head
        with pytest.raises(TypeError):
            blob.view[0] = 1
    assert blob.closed
    with pytest.raises(packetfs.PacketfsError, match="closed"):
        blob.view


def test_read_write_attach_shares_pages_between_consumers(env):
    b = env.blob("4k", 4 * MiB)
    h = env.holder(b).start(read_only=False)
    with h.attach() as one, h.attach(verify=False) as two:
        assert not one.read_only and not one.view.readonly
        one.view[4096:4100] = b"PFS!"
        # A write by one consumer is seen by the other: one set of pages.
        assert bytes(two.view[4096:4100]) == b"PFS!"
        one.view[4096:4100] = bytes(4)
    # Back to its content at start: the fingerprint check passes again.
    with h.attach() as again:
        assert again.verified_with


def test_fingerprint_mismatch_when_modified_after_the_holder_started(env):
    b = env.blob("4k", 4 * MiB)
    h = env.holder(b).start(read_only=False)
    with h.attach() as w:
        w.view[123] = 7
        with pytest.raises(packetfs.FingerprintMismatch,
                           match="modified since the holder started") as ei:
            h.attach()
        assert ei.value.errno == errno.EIO
        with h.attach(verify=False) as unchecked:  # the C client's --no-verify
            assert unchecked.verified_with is None and unchecked.view[123] == 7
        w.view[123] = 0


def test_token_file_and_token_are_equivalent(env):
    b = env.blob("4k", 2 * MiB)
    h = env.holder(b).start()
    with packetfs.attach(h.sock, token=env.token) as x, \
            packetfs.attach(h.sock, token=env.token.encode()) as y:
        assert x.fingerprint == y.fingerprint
    # Trailing whitespace in the file is cut, as pfs_share_token_read does.
    tf = env.workdir / "token-ws"
    tf.write_text(env.token + " \t\r\n\n")
    with packetfs.attach(h.sock, token_file=tf):
        pass


@pytest.mark.parametrize("content, words", [
    (b"", "empty"),
    (b"\n \n", "empty"),
    (b"abc\0def", "NUL byte"),
    (b"x" * 1025, "longer than 1024"),
])
def test_bad_token_files(env, content, words):
    tf = env.workdir / "token-bad"
    tf.write_bytes(content)
    with pytest.raises(packetfs.TokenFileError, match=words):
        packetfs.attach(env.workdir / "none.sock", token_file=tf)


def test_missing_token_file(env):
    with pytest.raises(packetfs.TokenFileError, match="No such file"):
        packetfs.attach(env.workdir / "none.sock", token_file=env.workdir / "no-such-token")


def test_exactly_one_of_token_and_token_file(env):
    with pytest.raises(packetfs.PacketfsError, match="exactly one"):
        packetfs.attach(env.workdir / "x.sock")
    with pytest.raises(packetfs.PacketfsError, match="exactly one"):
        packetfs.attach(env.workdir / "x.sock", token="a", token_file=env.token_file)


def test_wrong_token_is_rejected_with_the_holders_words(env):
    b = env.blob("4k", 2 * MiB)
    h = env.holder(b).start()
    with pytest.raises(packetfs.TokenRejected) as ei:
        packetfs.attach(h.sock, token="0" * 64)
    e = ei.value
    assert "token rejected" in str(e) and str(h.sock) in str(e)
    assert e.status == 3 and e.errno == errno.EACCES
    assert "token rejected" in e.holder_message  # the holder's own sentence
    assert e.reply.peer_uid == os.getuid()  # what the holder saw of us
    assert isinstance(e, packetfs.HolderRefused)
    deadline = time.monotonic() + 5  # the holder logs after it replied
    while "refused pid=" not in h.log() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert f"refused pid={os.getpid()} uid={os.getuid()}" in h.log()


def test_uid_not_in_allow_list(env):
    b = env.blob("4k", 2 * MiB)
    h = env.holder(b).start("--allow-uid", "4242,4243")
    with pytest.raises(packetfs.UidNotAllowed, match="uid") as ei:
        h.attach()
    assert ei.value.status == 4 and ei.value.errno == errno.EACCES
    assert str(os.getuid()) in ei.value.holder_message


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another uid")
def test_socket_mode_is_the_first_gate(env):
    """uid 65534 outside the socket's group cannot connect; inside it, it attaches
    (the fd crosses uids) and gets the holder's read-only pages."""
    b = env.blob("4k", 2 * MiB)
    h = env.holder(b).start()  # socket 0660 root:root

    def try_attach():
        with packetfs.attach(h.sock, token=env.token, verify=False) as blob:
            return blob.size, blob.read_only, blob.reply.peer_uid

    out = run_as(65534, 65534, try_attach)
    assert out[0] == "error" and out[1] == "SocketPermissionDenied", out
    assert "permission denied" in out[2] and "uid 65534" in out[2] and out[3] == errno.EACCES
    h.stop()
    h.start("--socket-group", "65534")
    assert run_as(65534, 65534, try_attach) == ("ok", (b.size, True, 65534))


def test_holder_busy(env):
    b = env.blob("4k", 2 * MiB)
    h = env.holder(b).start("--max-clients", "1")
    idle = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    idle.connect(str(h.sock))  # holds the only slot, sends nothing
    try:
        time.sleep(0.1)
        with pytest.raises(packetfs.HolderBusy, match="busy") as ei:
            h.attach()
        assert ei.value.errno == errno.EBUSY
    finally:
        idle.close()
    time.sleep(0.1)
    with h.attach():
        pass


def test_holder_timeout_status(env):
    """A client that sends nothing is answered 'timed out' by the holder."""
    b = env.blob("4k", 2 * MiB)
    h = env.holder(b).start("--client-timeout", "1")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(10)
    s.connect(str(h.sock))
    r = share.decode_reply(s.recv(4096))
    s.close()
    assert r.status == 6 and r.status_text == "timed out"
    e = share.refusal(str(h.sock), r)
    assert isinstance(e, packetfs.HolderTimedOut) and isinstance(e, packetfs.TimedOut)
    assert "timed out" in str(e) and e.errno == errno.ETIMEDOUT


def test_version_mismatch(env):
    b = env.blob("4k", 2 * MiB)
    h = env.holder(b).start()
    with pytest.raises(packetfs.VersionMismatch, match="version") as ei:
        share.exchange(str(h.sock), share.OP_GET, env.token, 5.0, version=2)
    assert ei.value.status == 2


def test_holder_gone(env):
    b = env.blob("4k", 2 * MiB)
    h = env.holder(b).start()
    h.stop(signal.SIGTERM)  # a clean stop removes the socket
    with pytest.raises(packetfs.HolderUnavailable, match="does not exist") as ei:
        h.attach()
    assert ei.value.errno == errno.ENOENT
    h.start()
    h.stop(signal.SIGKILL)  # a dead holder leaves its socket file behind
    assert h.sock.exists()
    with pytest.raises(packetfs.HolderUnavailable, match="no blob holder listens") as ei:
        h.attach()
    assert ei.value.errno == errno.ECONNREFUSED


def test_ping(env):
    b = env.blob("4k", 2 * MiB)
    h = env.holder(b).start()
    r = packetfs.ping(h.sock)
    assert r.status == 0 and r.size == b.size and r.read_only
    assert packetfs.ping(h.sock, token_file=env.token_file).size == b.size
    with pytest.raises(packetfs.TokenRejected):
        packetfs.ping(h.sock, token="wrong")


def test_mapping_outlives_the_holder(env):
    """The fd is a capability: a consumer keeps its pages after the holder exits."""
    b = env.blob("4k", 2 * MiB, fill="seed")
    h = env.holder(b).start()
    with h.attach() as blob:
        before = hashlib.sha256(blob.view).hexdigest()
        h.stop()
        assert hashlib.sha256(blob.view).hexdigest() == before


# ---- replies a real holder never sends: a fake holder on a socket of our own ----


def fake_holder(path, reply: bytes | None, fds=(), done: threading.Event | None = None):
    """Accept one client; send ``reply`` (with ``fds``), or with None send nothing
    until ``done`` is set."""
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    srv.bind(str(path))
    srv.listen(1)

    def serve():
        c, _ = srv.accept()
        c.recv(4096)
        if reply is not None:
            socket.send_fds(c, [reply], list(fds))
        else:
            done.wait(10)
        c.close()
        srv.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return t


def ok_reply(size=2 * MiB, flags=share.F_READ_ONLY | share.F_FD, msg=b"", page=0, version=1):
    return (b"PFSA" + struct.pack("<HHQQIIQQIIII", version, 0, size, 0, page, flags, 1, 0, 1, 0,
                                  0, len(msg)) + msg)


def test_local_timeout(env):
    p = env.workdir / "silent.sock"
    done = threading.Event()
    t = fake_holder(p, None, done=done)
    t0 = time.monotonic()
    try:
        with pytest.raises(packetfs.AttachTimeout, match="no reply within"):
            packetfs.attach(p, token="t", timeout=0.5)
        assert 0.4 < time.monotonic() - t0 < 2.5
    finally:
        done.set()
        t.join()


@pytest.mark.parametrize("reply, words", [
    (b"HTTP/1.1 200 OK\r\n", "not a blob-share reply"),
    (ok_reply()[:63], "not a blob-share reply"),
    (ok_reply(msg=b"hi")[:-1], "malformed"),
    (ok_reply(page=9), "page kind 9"),
    (ok_reply(version=2), "protocol version 2"),
    (ok_reply(), "passed no file descriptor"),
])
def test_malformed_replies(env, reply, words):
    p = env.workdir / "fake.sock"
    t = fake_holder(p, reply)
    try:
        with pytest.raises(packetfs.ProtocolError, match=words):
            packetfs.attach(p, token="t")
    finally:
        t.join()
        p.unlink()


def test_size_differs_from_the_record(env):
    b = env.blob("4k", 2 * MiB)
    p = env.workdir / "liar.sock"
    fds_before = sorted(os.listdir("/proc/self/fd"))
    fd = os.open(b.path, os.O_RDONLY)
    t = fake_holder(p, ok_reply(size=4 * MiB), fds=[fd])
    try:
        with pytest.raises(packetfs.SizeMismatch, match="holds 2097152 bytes.*says 4194304"):
            packetfs.attach(p, token="t")
    finally:
        t.join()
        os.close(fd)
        p.unlink()
    # No fd leaked: the received descriptor was closed on the error path.
    assert sorted(os.listdir("/proc/self/fd")) == fds_before


def test_holder_message_is_kept_printable():
    r = share.decode_reply(ok_reply(msg=b"bad\x1b[31m\x00token"))
    assert r.message == "bad?[31m?token"


def test_pure_python_verify_warns_on_a_large_blob(env, monkeypatch):
    """Without numpy the fingerprint check is slow: attach says so (and still checks)."""
    from packetfs import blob as pblob

    b = env.blob("4k", 2 * MiB, fill="seed")
    h = env.holder(b).start()
    monkeypatch.setattr(pblob, "fingerprint_backend", lambda: "python")
    monkeypatch.setattr(pblob, "SLOW_VERIFY_BYTES", 1 * MiB)
    with pytest.warns(RuntimeWarning, match="install numpy"):
        with h.attach() as blob:
            assert blob.verified_with == "python"


STDLIB_ONLY = """
import sys
sys.modules["numpy"] = None  # as if numpy were not installed
import packetfs
with packetfs.attach(sys.argv[1], token_file=sys.argv[2]) as blob:
    assert blob.verified_with == "python", blob.verified_with
    names = blob.manifest().names()
    digest = blob.verify(names[0])
print(names[0], digest)
"""


def test_standard_library_only(env, real_files):
    """No numpy: attach, fingerprint (pure Python), manifest and sha256 still work."""
    name, data = real_files[0]
    p = env.pack([(name, data)], size=2 * MiB)
    r = subprocess.run([sys.executable, "-c", STDLIB_ONLY, str(p.holder.sock),
                        str(p.holder.token_file)], capture_output=True, text=True, timeout=120,
                       env={"PYTHONPATH": str(HERE.parent), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [name, hashlib.sha256(data).hexdigest()]

