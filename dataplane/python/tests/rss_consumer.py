# SPDX-License-Identifier: Apache-2.0
"""A consumer in a fresh interpreter (so pytest's own memory is not in the numbers):
attach, read one tensor, report /proc/self/status before and after, as JSON.

usage: rss_consumer.py SOCKET TOKEN_FILE FILE TENSOR full|lazy
  full: attach as the C client does (MADV_POPULATE_READ, fingerprint over every page)
  lazy: verify=False, populate=False (only the pages read are mapped)
"""

import json
import sys

import numpy as np

import packetfs
from packetfs import crc32c
from packetfs import tensors as pst

FIELDS = ("VmRSS", "RssAnon", "RssFile", "RssShmem")


def status() -> dict:
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in FIELDS:
                out[key] = int(value.split()[0]) * 1024  # kB -> bytes
    return out


def main():
    sock, token_file, name, tensor, mode = sys.argv[1:6]
    full = mode == "full"
    crc32c.fingerprint(bytes(1 << 20))  # one-time tables, before the baseline
    before = status()
    blob = packetfs.attach(sock, token_file=token_file, verify=full, populate=full)
    attached = status()
    t = pst.load(blob.file(name))[tensor]
    value = float(np.asarray(t, dtype=np.float64).sum())
    read = status()
    print(json.dumps({"size": blob.size, "before": before, "attached": attached, "read": read,
                      "tensor_sum": value, "tensor_shape": list(t.shape),
                      "verified_with": blob.verified_with, "attach_s": blob.attach_seconds}))


if __name__ == "__main__":
    main()
