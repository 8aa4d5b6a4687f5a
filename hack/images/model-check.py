#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""model-check: load a model's files the way an inference program does, with
the real PyPI libraries, and print one JSON object of what it read.

It is /usr/local/bin/model-check in packetfs.io/python-consumer (see
hack/images/python-consumer.sh). The e2e tests (test/e2e/volume_test.go) run
it in pods on a mounted blob and compare its JSON with the source files; the
model-volume bench (hack/bench/model_volume.sh) runs it to time the reads.
Everything it reports is measured in this process: nothing is assumed.

  --safetensors PATH  safetensors.safe_open(PATH, "numpy"): every tensor with
                      get_tensor, its dtype, shape and the sha256 of its bytes
  --tokenizer PATH    tokenizers.Tokenizer.from_file(PATH): vocab size and the
                      ids of a fixed sentence
  --onnx PATH         onnxruntime.InferenceSession(PATH) on the CPU, run once
                      on inputs built from the model's declared inputs; the
                      sha256 and first values of every output
  --files DIR         size, mode and sha256 of every regular file under DIR
  --mmap PATH         map PATH (mmap, read-only, shared) and hash every tensor
                      of it in place through the mapping: no copy, the way a
                      server maps its weights; for the memory test
  --socket-file NAME  the same as --mmap, but the blob is mapped through its
                      holder's socket with the packetfs client
                      (PFS_BLOB_SOCKET, PFS_BLOB_TOKEN_FILE) and NAME is the
                      file's name in the blob's manifest
  --wait-before F     print {"phase":"waiting"} and wait until F exists before
                      reading (the memory test samples memory meanwhile)
  --hold-after F      after reading, keep every mapping and wait until F exists
Several of each may be given; they run in the order above. Times are
CLOCK_REALTIME seconds (the node's clock, the same as the host's on kind),
so a script outside can subtract its own timestamps.
"""

import argparse
import hashlib
import json
import mmap
import os
import resource
import struct
import sys
import time

T0 = time.time()


def now():
    return time.time()


def memory_charged():
    """The memory the kernel charges to this container's cgroup, in bytes,
    and which file said so: cgroup v2 memory.current, else v1
    memory.usage_in_bytes (the kind nodes of this project run on a hybrid
    cgroup layout where the memory controller may be v1)."""
    for path in ("/sys/fs/cgroup/memory.current", "/sys/fs/cgroup/memory/memory.usage_in_bytes"):
        try:
            with open(path) as f:
                return int(f.read()), path
        except OSError:
            continue
    return None, None


def proc_status():
    """VmRSS and its parts (anonymous, file, shmem) from /proc/self/status, in
    bytes."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "RssAnon", "RssFile", "RssShmem", "VmHWM"):
                out[k] = int(v.split()[0]) * 1024
    return out


def usage():
    """Page faults and peak RSS of this process so far, with the memory
    charged to its cgroup and /proc/self/status: the numbers the bench and
    the memory test report per reader."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    charged, src = memory_charged()
    return {"minflt": ru.ru_minflt, "majflt": ru.ru_majflt, "maxrss": ru.ru_maxrss * 1024,
            "status": proc_status(), "cgroup": charged, "cgroupFile": src, "at": now()}


def sha(b):
    return hashlib.sha256(b).hexdigest()


def read_safetensors(path):
    """Every tensor through the real library, in the file's order."""
    from safetensors import safe_open

    t_open = now()
    tensors, first = {}, None
    with safe_open(path, framework="numpy") as f:
        t_opened = now()
        for name in f.keys():
            a = f.get_tensor(name)
            if first is None:
                first = now()
            tensors[name] = {"dtype": str(a.dtype), "shape": list(a.shape), "sha256": sha(a.tobytes())}
            del a
    return {"path": path, "count": len(tensors), "tensors": tensors, "open": t_open,
            "opened": t_opened, "first": first, "done": now()}


def header(buf):
    """The safetensors header of buf (the format: a little-endian u64 length,
    then that many bytes of JSON) and where the data starts."""
    (n,) = struct.unpack_from("<Q", buf, 0)
    hdr = json.loads(bytes(buf[8:8 + n]))
    hdr.pop("__metadata__", None)
    return hdr, 8 + n


def hash_in_place(buf, path):
    """sha256 of every tensor's bytes read through buf (a mapping) without
    copying them: hashlib reads the memoryview slices directly."""
    mv = memoryview(buf)
    hdr, base = header(mv)
    tensors, first = {}, None
    for name, ti in sorted(hdr.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        lo, hi = ti["data_offsets"]
        tensors[name] = {"dtype": ti["dtype"], "shape": ti["shape"], "sha256": sha(mv[base + lo:base + hi])}
        if first is None:
            first = now()
    return {"path": path, "count": len(tensors), "tensors": tensors, "first": first, "done": now()}


def map_file(path, keep):
    t_open = now()
    fd = os.open(path, os.O_RDONLY)
    try:
        m = mmap.mmap(fd, 0, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
    finally:
        os.close(fd)
    keep.append(m)
    r = hash_in_place(m, path)
    r["open"] = t_open
    return r


def map_socket(name, keep):
    """The blob through its holder's socket (the packetfs client), then the
    file's tensors hashed in place in the mapping."""
    import packetfs

    t_open = now()
    with open(os.environ["PFS_BLOB_TOKEN_FILE"]) as f:
        token = f.read().strip()
    blob = packetfs.attach(os.environ["PFS_BLOB_SOCKET"], token)
    keep.append(blob)
    r = hash_in_place(blob.file(name), "socket:" + name)
    r["open"] = t_open
    return r


def read_tokenizer(path):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(path)
    enc = tok.encode("PacketFS mounts a model's files read-only, one copy per node.")
    return {"path": path, "vocab": tok.get_vocab_size(), "ids": enc.ids, "tokens": enc.tokens}


def onnx_inputs(sess):
    """Inputs for the model's declared inputs, the same every run: a 440 Hz
    tone sampled at 16 kHz for float tensors (a free dimension is 1 for the
    batch, the first, and 512 samples elsewhere when the tensor has two
    dimensions, 1 otherwise), 16000 (the sample rate) for an int64 scalar."""
    import numpy as np

    feeds = {}
    for i in sess.get_inputs():
        if i.type == "tensor(int64)" and not i.shape:
            feeds[i.name] = np.array(16000, dtype=np.int64)
            continue
        if i.type != "tensor(float)":
            raise SystemExit(f"model-check: input {i.name} of type {i.type}: only float tensors and an int64 scalar are built")
        shape = [d if isinstance(d, int) else (1 if k == 0 or len(i.shape) != 2 else 512) for k, d in enumerate(i.shape)]
        n = int(np.prod(shape))
        tone = 0.5 * np.sin(2 * np.pi * 440 * np.arange(n) / 16000)
        feeds[i.name] = tone.astype(np.float32).reshape(shape)
    return feeds


def run_onnx(path):
    import onnxruntime as ort

    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    outs = sess.run(None, onnx_inputs(sess))
    return {"path": path, "onnxruntime": ort.__version__, "outputs": {
        o.name: {"shape": list(v.shape), "sha256": sha(v.tobytes()), "first": [float(x) for x in v.ravel()[:4]]}
        for o, v in zip(sess.get_outputs(), outs)}}


def walk_files(root):
    files = {}
    for d, dirs, names in os.walk(root):
        dirs.sort()
        for n in sorted(names):
            p = os.path.join(d, n)
            st = os.lstat(p)
            if not os.path.isfile(p) or os.path.islink(p):
                continue
            h = hashlib.sha256()
            with open(p, "rb") as f:
                while chunk := f.read(1 << 20):
                    h.update(chunk)
            files[os.path.relpath(p, root)] = {"size": st.st_size, "mode": "%04o" % (st.st_mode & 0o7777),
                                               "sha256": h.hexdigest()}
    return {"root": root, "files": files}


def wait_for(path):
    while not os.path.exists(path):
        time.sleep(0.2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--safetensors", action="append", default=[])
    ap.add_argument("--tokenizer", action="append", default=[])
    ap.add_argument("--onnx", action="append", default=[])
    ap.add_argument("--files", action="append", default=[])
    ap.add_argument("--mmap", action="append", default=[])
    ap.add_argument("--socket-file", action="append", default=[])
    ap.add_argument("--wait-before")
    ap.add_argument("--hold-after")
    a = ap.parse_args()
    import numpy  # noqa: F401  (imported before the first sample: its pages are not the blob's)

    out = {"start": T0, "imported": now(), "python": sys.version.split()[0]}
    if a.wait_before:
        out["before"] = usage()
        print(json.dumps({"phase": "waiting", "usage": out["before"]}), flush=True)
        wait_for(a.wait_before)
    out["begin"] = usage()
    keep = []
    out["safetensors"] = [read_safetensors(p) for p in a.safetensors]
    out["tokenizer"] = [read_tokenizer(p) for p in a.tokenizer]
    out["onnx"] = [run_onnx(p) for p in a.onnx]
    out["files"] = [walk_files(p) for p in a.files]
    out["mmap"] = [map_file(p, keep) for p in a.mmap]
    out["socket"] = [map_socket(n, keep) for n in a.socket_file]
    out["end"] = usage()
    print(json.dumps(out, sort_keys=True), flush=True)
    if a.hold_after:
        # The mappings stay: the memory test samples the node meanwhile.
        wait_for(a.hold_after)
        print(json.dumps({"phase": "released", "usage": usage()}), flush=True)


if __name__ == "__main__":
    main()
