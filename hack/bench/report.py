#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The one report of `make bench`: docs/bench/benchmarks.md, docs/bench/benchmarks.csv, docs/bench/img/*.png.

Reads the rows every benchmark script appended (one JSON object per measured
repetition, the contract in docs/design/bench-rows.md) and the run's META.json, then
groups the repetitions, takes each limit's best repetition and each peer key's
strongest peer (the best median), computes every row's ratio to its limit and
to its best peer, and writes the page, the CSV and the charts.

    report.py --rows ROWS.jsonl --meta META.json --out-md docs/bench/benchmarks.md \
        --out-csv docs/bench/benchmarks.csv --img-dir docs/bench/img

META.json: command, date (UTC), mode ("quick" or "full"), git (short rev),
machine {cpu, nproc, mem_gib}, kernel, load_before and load_after ("a b c"),
pages: [{suite, page}] with page a path relative to the current directory,
like --out-md. A line that breaks the contract, or a limit or peer that names
no key of its kind, is an error (exit 1, nothing written): the report never
drops a measurement it cannot place. A limit beaten (a ratio to a limit above
1.0) is a measurement bug: the report is written, the rows are named on
stderr and the exit status is 2 (EXIT_LIMIT_BEATEN).
"""

import argparse
import csv
import json
import math
import os
import re
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch

import fanout_chart

SEEDS_FILE = Path(__file__).with_name("seeds.json")
# The hand-written pages the report links (the row contract, the designs), wherever it is written.
DESIGN_DIR = Path(__file__).resolve().parents[2] / "docs" / "design"

SUITES = ("tcp", "udp", "afxdp", "xsk", "pcore", "fanout", "s3", "delta", "hash", "limits", "cluster")
PURPOSES = ("Transfer", "Transfer|pCPU", "pCPU", "Peer", "Limit")
# Exit status when the report was written but a row beat its limit.
EXIT_LIMIT_BEATEN = 2
INTEGRITIES = ("OK", "MISMATCH", "NA")

# The contract's keys and their JSON types; every key is required, none other is allowed,
# so a misspelt key fails here instead of vanishing from the report.
STRING, NUMBER, INTEGER = "string", "number", "integer"
ROW_KEYS = {
    "suite": (STRING, False), "path": (STRING, False), "label": (STRING, False),
    "purpose": (STRING, False), "size_mb": (NUMBER, False), "elapsed_s": (NUMBER, False),
    "effective_mb_s": (NUMBER, False), "wire_mb_s": (NUMBER, True), "user_s": (NUMBER, True),
    "sys_s": (NUMBER, True), "mb_per_cpu_s": (NUMBER, True), "integrity": (STRING, False),
    "pthreads": (INTEGER, False), "notes": (STRING, False), "limit": (STRING, True),
    "peer": (STRING, True), "key": (STRING, True), "loss_pct": (NUMBER, True),
}
ENUMS = {"suite": SUITES, "purpose": PURPOSES, "integrity": INTEGRITIES}
# Per group, the median of these columns (effective_mb_s gets min/median/max as well).
MEDIAN_KEYS = ("size_mb", "elapsed_s", "effective_mb_s", "wire_mb_s", "user_s", "sys_s",
               "mb_per_cpu_s", "loss_pct")

ABOVE_LIMIT = "ABOVE LIMIT: measurement bug (limit too weak or row wrong)"
NO_CHART = "no data for this chart in this run"

# The per-suite pages that predate this report (the index docs/bench/benchmarks.md held before
# it became the report), linked under Details when the page exists next to the report.
# "{design}" in a description is the path from the report to docs/design/.
DETAIL_PAGES = (
    ("bench-tcp.md", "make -C dataplane bench-tcp",
     "the iperf3 peers (plain, -Z, -N, cold source), scp, rsync and the PFS TCP labels on "
     "loopback and over veth, judged against the strongest peer; single-core CRC32C and copy "
     "(the limits), memset and blob setup"),
    ("bench-pcore.md", "make -C dataplane bench-pcore",
     "every pcore op against the plain-threads baseline, next to this machine's read, "
     "memcpy, CRC32C and FNV rates"),
    ("bench-xsk.md", "make -C dataplane bench-xsk",
     "the AF_XDP link alone (`pfs xsk blast` -> `pfs xsk sink`) over veth: 64 B and 1472 B, "
     "native and generic XDP, copy mode ([afxdp.md]({design}/afxdp.md))"),
    ("bench-udp.md", "make -C dataplane bench-udp",
     "iperf3 UDP and TCP, PFS-With-Payload-UDP and Native PFS Offset-only Mode - UDP over "
     "veth, with and without GSO/GRO, and at 1% loss"),
    ("bench-afxdp.md", "make -C dataplane bench-afxdp",
     "on one veth pair: the raw AF_XDP loop (`pfs xsk blast` -> `sink`), "
     "PFS-With-Payload-AF_XDP and Native PFS Offset-only Mode - AF_XDP, and "
     "PFS-With-Payload-UDP; frames/s, MB/s, MB/CPU-s; target PFS payload >= 0.8x the raw "
     "loop ([afxdp.md]({design}/afxdp.md#transport))"),
    ("bench-fanout.md", "make -C dataplane bench-fanout",
     "a blob of real files to N netns nodes: PacketFS's pipelined relay against "
     "store-and-forward, all-from-origin and one hop"),
    ("bench-s3.md", "make -C dataplane bench-s3",
     "a blob loaded from a real S3 server: the origin's read against s5cmd and the AWS CLI, and "
     "the time to N nodes against download-then-fan-out and every node reading the store "
     "([remote-sources.md]({design}/remote-sources.md))"),
    ("bench-delta.md", "make -C dataplane bench-delta",
     "delta mode against rsync, zstd --patch-from, xdelta3, zstd and a full copy on real "
     "checkpoint, model and source pairs ([delta.md]({design}/delta.md))"),
    ("bench-hash.md", "make -C dataplane bench-hash",
     "the chunk-digest candidates over a real file: SHA-256 with and without the SHA extensions, "
     "BLAKE3 and CRC32C, MB/s and CPU-s per GiB "
     "([fanout.md]({design}/fanout.md#verification-while-receiving-and-chunk-digests))"),
)

CSV_COLUMNS = (
    "suite", "path", "label", "purpose", "pthreads", "reps", "size_mb", "elapsed_s",
    "effective_mb_s_min", "effective_mb_s_median", "effective_mb_s_max", "wire_mb_s",
    "user_s", "sys_s", "mb_per_cpu_s", "integrity", "integrity_mismatch_reps", "loss_pct",
    "key", "limit", "limit_best_mb_s", "ratio_to_limit", "above_limit", "peer", "best_peer",
    "best_peer_median_mb_s", "ratio_to_best_peer", "seeds", "seeds_file",
    "notes", "mode", "date",
)


class ReportError(Exception):
    """A row or the meta breaks the contract; the message says which line and key."""


@dataclass
class Group:
    """The repetitions of one row of the report: same suite, path, label and pthreads.

    pthreads is part of the identity because a pcore op measured on 1 and on 2 threads
    is two results (with two limits), not three noisy repetitions of one.
    """
    suite: str
    path: str
    label: str
    pthreads: int
    reps: list = field(default_factory=list)
    ratio: float | None = None
    limit_best: float | None = None
    best_peer: "Group | None" = None
    peer_ratio: float | None = None

    @property
    def first(self):
        return self.reps[0]

    @property
    def purpose(self):
        return self.first["purpose"]

    @property
    def key(self):
        return self.first["key"]

    @property
    def limit(self):
        return self.first["limit"]

    @property
    def peer(self):
        return self.first["peer"]

    def effective(self):
        return [r["effective_mb_s"] for r in self.reps]

    def median(self, key):
        values = [r[key] for r in self.reps if r[key] is not None]
        return statistics.median(values) if values else None

    def mismatches(self):
        return sum(r["integrity"] == "MISMATCH" for r in self.reps)

    def integrity(self):
        """MISMATCH if any repetition mismatched: one bad copy makes the row bad."""
        if self.mismatches():
            return "MISMATCH"
        seen = sorted({r["integrity"] for r in self.reps})
        return seen[0] if len(seen) == 1 else "mixed: " + ", ".join(seen)

    def notes(self):
        unique = dict.fromkeys(r["notes"] for r in self.reps if r["notes"])
        return "; ".join(unique)

    def above_limit(self):
        return self.ratio is not None and self.ratio > 1.0

    def name(self):
        threads = f" ({self.pthreads}t)" if self.pthreads != 1 else ""
        return f"{self.suite}/{self.path}: {self.label}{threads}"


# ---------------------------------------------------------------- input


def type_ok(value, kind):
    # bool is an int in Python, but true is not a number in the contract.
    if isinstance(value, bool):
        return False
    if kind == STRING:
        return isinstance(value, str)
    if kind == INTEGER:
        return isinstance(value, int)
    return isinstance(value, (int, float)) and math.isfinite(value)


def validate_row(row, line):
    """Raise ReportError naming the line and the key of the first breach of the contract."""
    if not isinstance(row, dict):
        raise ReportError(f"line {line}: not a JSON object")
    for key in row:
        if key not in ROW_KEYS:
            raise ReportError(f"line {line}: key '{key}': not in the contract (docs/design/bench-rows.md)")
    for key, (kind, nullable) in ROW_KEYS.items():
        if key not in row:
            raise ReportError(f"line {line}: key '{key}': missing")
        value = row[key]
        if value is None and nullable:
            continue
        if not type_ok(value, kind):
            want = kind + (" or null" if nullable else "")
            raise ReportError(f"line {line}: key '{key}': {json.dumps(value)} is not a {want}")
        if key in ENUMS and value not in ENUMS[key]:
            raise ReportError(f"line {line}: key '{key}': '{value}' is not one of {', '.join(ENUMS[key])}")
        if kind != STRING and value < 0:
            raise ReportError(f"line {line}: key '{key}': {value} is negative")
    if row["pthreads"] < 1:
        raise ReportError(f"line {line}: key 'pthreads': {row['pthreads']} is below 1")
    if row["purpose"] == "Limit" and row["key"] is None:
        raise ReportError(f"line {line}: key 'key': a Limit row needs a key for other rows' limit")
    if row["key"] is not None and row["purpose"] not in ("Limit", "Peer"):
        raise ReportError(f"line {line}: key 'key': only Limit and Peer rows name a key")


def load_rows(path):
    """Every line of the rows file, validated, with its line number under '_line'."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for line, text in enumerate(f, 1):
            try:
                row = json.loads(text)
            except json.JSONDecodeError as e:
                raise ReportError(f"line {line}: not JSON ({e.msg})") from None
            validate_row(row, line)
            row["_line"] = line
            rows.append(row)
    if not rows:
        raise ReportError("no rows: the rows file is empty")
    return rows


def load_meta(path):
    with open(path, encoding="utf-8") as f:
        try:
            meta = json.load(f)
        except json.JSONDecodeError as e:
            raise ReportError(f"not JSON ({e.msg}, line {e.lineno})") from None
    if not isinstance(meta, dict):
        raise ReportError("not a JSON object")
    wanted = {"command": str, "date": str, "mode": str, "git": str, "machine": dict,
              "kernel": str, "load_before": str, "load_after": str, "pages": list}
    for key, kind in wanted.items():
        if not isinstance(meta.get(key), kind):
            raise ReportError(f"key '{key}': missing or not a {kind.__name__}")
    if meta["mode"] not in ("quick", "full"):
        raise ReportError(f"key 'mode': '{meta['mode']}' is not quick or full")
    for key in ("cpu", "nproc", "mem_gib"):
        if key not in meta["machine"]:
            raise ReportError(f"key 'machine.{key}': missing")
    if not all(isinstance(f, str) for f in meta.get("failed", [])):
        raise ReportError("key 'failed': not a list of suite names")
    for i, page in enumerate(meta["pages"]):
        if not (isinstance(page, dict) and isinstance(page.get("suite"), str)
                and isinstance(page.get("page"), str)):
            raise ReportError(f"key 'pages[{i}]': not a {{suite, page}} object")
    return meta


def load_seeds(path=SEEDS_FILE):
    """label -> the seed entry with its verbatim figures and the seed file they come from."""
    with open(path, encoding="utf-8") as f:
        return {s["label"]: s for s in json.load(f)["seeds"]}


# ---------------------------------------------------------------- logic


def group_rows(rows):
    """Groups in report order: suites, then paths, then labels, each by first appearance.

    The scripts interleave repetitions of different rows (so load drift falls on all of
    them), so appearance order of whole groups is not the order a reader wants.
    """
    groups = {}
    for row in rows:
        ident = (row["suite"], row["path"], row["label"], row["pthreads"])
        group = groups.setdefault(ident, Group(*ident))
        check_same_row(group, row)
        group.reps.append(row)
    suites, paths = first_seen(r["suite"] for r in rows), first_seen((r["suite"], r["path"]) for r in rows)
    return sorted(groups.values(), key=lambda g: (suites[g.suite], paths[(g.suite, g.path)]))


def first_seen(items):
    """item -> its rank by first appearance."""
    order = {}
    for item in items:
        order.setdefault(item, len(order))
    return order


def check_same_row(group, row):
    """Repetitions of one row must agree on what the row is, or the medians mix two things."""
    if not group.reps:
        return
    for key in ("purpose", "key", "limit", "peer"):
        if row[key] != group.first[key]:
            raise ReportError(f"line {row['_line']}: key '{key}': {json.dumps(row[key])} differs from "
                              f"{json.dumps(group.first[key])} on line {group.first['_line']} "
                              f"(same suite, path, label, pthreads)")


def carriers_of(groups, purpose):
    """key -> the groups of that purpose that carry it. A key is a limit's
    (Limit rows) or a peer's (Peer rows), never both: a peer is another tool
    doing the same job, which a row may beat; a limit is what the machine
    can do, which no row may beat."""
    keys, other = {}, "Peer" if purpose == "Limit" else "Limit"
    for group in groups:
        if group.key is None:
            continue
        if group.purpose == purpose:
            keys.setdefault(group.key, []).append(group)
    for group in groups:
        if group.purpose == other and group.key in keys:
            raise ReportError(f"line {group.first['_line']}: key 'key': '{group.key}' is carried by "
                              f"{other} and {purpose} rows; a key is a limit's or a peer's, not both")
    return keys


def best_limits(groups):
    """limit key -> its Limit groups. Two ways of measuring one limit (glibc
    and vector copies; one core's CRC32C in two suites) share a key: a limit
    is what the machine can do, so the best repetition of any counts."""
    return carriers_of(groups, "Limit")


def peer_keys(groups):
    """peer key -> its Peer groups (iperf3, iperf3 -Z, iperf3 -N on one path)."""
    return carriers_of(groups, "Peer")


def limit_best(carriers):
    return max(max(g.effective()) for g in carriers)


def strongest_peer(carriers):
    """The peer group with the highest median: peers are compared median to
    median, as a row is, so the verdict is fair to both (the first of equals)."""
    return max(carriers, key=lambda g: g.median("effective_mb_s"))


def wrong_kind(group, field, name, mine, theirs):
    """The error for a row whose `field` names a key of the other kind, or none."""
    line = f"line {group.first['_line']}: key '{field}': '{name}'"
    if name in theirs:
        kind = "a Peer key (another tool doing the same job)" if field == "limit" else "a Limit key"
        return ReportError(f"{line} is {kind}, not a {field}'s: put it in "
                           f"'{'peer' if field == 'limit' else 'limit'}'")
    if name not in mine:
        return ReportError(f"{line} names no {'Limit' if field == 'limit' else 'Peer'} key present "
                           f"in this run")
    return None


def attach_ratios(groups, limits, peers=None):
    """Each row's median over its limit's best repetition, and over its
    strongest peer's median."""
    peers = peer_keys(groups) if peers is None else peers
    for group in groups:
        if group.limit is not None:
            err = wrong_kind(group, "limit", group.limit, limits, peers)
            if err:
                raise err
            group.limit_best = limit_best(limits[group.limit])
            group.ratio = group.median("effective_mb_s") / group.limit_best if group.limit_best else math.inf
        if group.peer is not None:
            err = wrong_kind(group, "peer", group.peer, peers, limits)
            if err:
                raise err
            group.best_peer = strongest_peer(peers[group.peer])
            best = group.best_peer.median("effective_mb_s")
            group.peer_ratio = group.median("effective_mb_s") / best if best else math.inf


# ---------------------------------------------------------------- text


def fmt(value, digits):
    return "-" if value is None else f"{value:.{digits}f}"


def cell(text):
    """Markdown table cell: a '|' would end the cell, a newline the row."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def ratio_text(group):
    if group.ratio is None:
        return "-"
    if group.above_limit():
        return f"{group.ratio:.2f}x {ABOVE_LIMIT}; limit `{group.limit}`"
    return f"{group.ratio:.2f}x of `{group.limit}`"


def standing(ratio):
    if ratio > 1.0:
        return "ahead of the peer"
    return "behind the peer" if ratio < 1.0 else "level with the peer"


def peer_text(group):
    """'1.05x of iperf3 -N (...) — ahead of the peer': beating a peer is a result."""
    if group.peer_ratio is None:
        return "-"
    return f"{group.peer_ratio:.2f}x of {group.best_peer.label} \u2014 {standing(group.peer_ratio)}"


def seeds_text(seed):
    if seed is None:
        return "-"
    # The seed files are named NNN_<hash>.txt; NNN is how /work/shared/seeds/README.md lists them.
    return f"{', '.join(seed['figures'])} ({seed['context']}; seed {seed['seed_file'][:3]})"


def integrity_text(group):
    if group.mismatches():
        return f"**MISMATCH** ({group.mismatches()} of {len(group.reps)} reps)"
    return group.integrity()


def effective_text(group):
    eff = group.effective()
    return f"{min(eff):.1f} / {statistics.median(eff):.1f} / {max(eff):.1f}"


SUITE_COLUMNS = ("Label", "Purpose", "Path", "Reps", "Size (MB)", "Elapsed (s)",
                 "Effective MB/s min / median / max", "Wire MB/s", "user_s", "sys_s", "MB/CPU-s",
                 "Integrity", "pThreads", "Ratio to best peer", "Ratio to limit", "Seeds (other hardware)",
                 "Notes")
SUITE_NUMERIC = ("Reps", "Size (MB)", "Elapsed (s)", "Effective MB/s min / median / max", "Wire MB/s",
                 "user_s", "sys_s", "MB/CPU-s", "pThreads")


def suite_row(group, seeds):
    return (group.label, group.purpose, group.path, len(group.reps), fmt(group.median("size_mb"), 2),
            fmt(group.median("elapsed_s"), 3), effective_text(group), fmt(group.median("wire_mb_s"), 1),
            fmt(group.median("user_s"), 3), fmt(group.median("sys_s"), 3),
            fmt(group.median("mb_per_cpu_s"), 1), integrity_text(group), group.pthreads,
            peer_text(group), ratio_text(group), seeds_text(seeds.get(group.label)), group.notes() or "-")


def table(header, rows, numeric=()):
    """A markdown table; the columns named in numeric are right-aligned."""
    rule = "".join("---:|" if h in numeric else "---|" for h in header)
    lines = ["| " + " | ".join(header) + " |", "|" + rule]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return lines


def design_dir_link(md_dir):
    """The path from the directory of the report to docs/design/, for its links."""
    return Path(os.path.relpath(DESIGN_DIR, Path(md_dir).resolve())).as_posix()


def header_lines(meta, md_dir):
    m = meta["machine"]
    rows_contract = f"{design_dir_link(md_dir)}/bench-rows.md"
    return [
        "<!-- SPDX-License-Identifier: Apache-2.0 -->",
        f"<!-- Written by `{meta['command']}` (hack/bench/report.py): do not edit by hand. -->",
        f"# {meta.get('title', 'Benchmarks')}",
        "",
        f"The report of `{meta['command']}`: every benchmark script ran in this run and wrote one "
        f"row per measured repetition ([bench-rows.md]({rows_contract})); this page groups the "
        "repetitions of each row (min / median / max of the effective rate, medians of the "
        "rest), takes each limit's best repetition (what this machine can do) and each peer "
        "key's strongest peer (another tool doing the same job: the peer with the best median), "
        "and gives every row its ratio to both. A ratio to a limit above 1.0 is a measurement "
        "bug; a ratio to a peer above 1.0 is a result. Every number was measured in this run on "
        "this machine; "
        "only the Seeds column quotes the seed documents, measured by others on other "
        "hardware, for context. MB are decimal (10^6 bytes); MB/CPU-s divides by the CPU time "
        "of the side doing the work.",
        "",
        f"This page, its CSV and its charts are written by `{meta['command']}`: do not edit them "
        "by hand.",
        "",
        f"- Command: `{meta['command']}`",
        f"- Date: {meta['date']}",
        f"- Mode: {meta['mode']}",
        f"- Git: {meta['git']}",
        f"- Machine: {m['cpu']}, {m['nproc']} CPUs, {m['mem_gib']} GiB",
        f"- Kernel: {meta['kernel']}",
        f"- Load average (1/5/15 min): before {meta['load_before']}; after {meta['load_after']}",
        "",
    ] + failed_lines(meta)


def failed_lines(meta):
    """Suites whose script failed: their rows are missing or partial, and the page says so first."""
    failed = meta.get("failed") or []
    if not failed:
        return []
    return ["## Suites that failed", "",
            f"These scripts exited non-zero in this run; their rows below are missing or partial: "
            f"{', '.join(failed)}.", ""]


def beaten_lines(groups):
    beaten = [g for g in groups if g.above_limit()]
    lines = ["## Limits beaten", ""]
    if not beaten:
        return lines + ["none: every ratio <= 1.0", ""]
    for g in beaten:
        lines.append(f"- {g.name()}: {g.ratio:.2f}x {ABOVE_LIMIT} (median "
                     f"{g.median('effective_mb_s'):.1f} MB/s, limit `{g.limit}` best {g.limit_best:.1f} MB/s)")
    return lines + [""]


def verdict_lines(groups, peers):
    """Per Transfer row with a peer: its ratio to the strongest peer of this run, named."""
    rows = [g for g in groups if g.purpose.startswith("Transfer") and g.peer is not None]
    lines = ["## Verdicts against the strongest peer", "",
             "Each transfer is judged against the strongest peer measured in this run for its key "
             "(the best median of the peers that carry it), never a weaker one.", ""]
    if not rows:
        return lines + ["no transfer row names a peer in this run", ""]
    for g in rows:
        lines.append(f"- {g.name()}: {g.peer_ratio:.2f}x of {g.best_peer.label} "
                     f"({g.best_peer.path}, median {g.best_peer.median('effective_mb_s'):.1f} MB/s; "
                     f"this row {g.median('effective_mb_s'):.1f} MB/s) \u2014 {standing(g.peer_ratio)}; "
                     f"the strongest of {len(peers[g.peer])} under `{g.peer}` (all in Peers below)")
    return lines + [""]


def mismatch_lines(groups):
    bad = [g for g in groups if g.mismatches()]
    lines = ["## Integrity mismatches", ""]
    if not bad:
        return lines + ["none: every repetition's integrity is OK or NA", ""]
    lines += [f"- {g.name()}: MISMATCH in {g.mismatches()} of {len(g.reps)} repetitions" for g in bad]
    return lines + [""]


def suite_lines(groups, seeds):
    lines = []
    for suite in first_seen(g.suite for g in groups):
        lines += [f"## Suite {suite}", ""]
        lines += table(SUITE_COLUMNS, [suite_row(g, seeds) for g in groups if g.suite == suite],
                       SUITE_NUMERIC)
        lines.append("")
    return lines


def peer_lines(groups, peers):
    lines = ["## Peers", "",
             "Other tools doing the same job. A peer key's value is its strongest peer: the group "
             "with the best median (medians against medians); a row's ratio is its median over that.", ""]
    if not peers:
        return lines + ["no peer was measured in this run", ""]
    rows = []
    for key, carriers in peers.items():
        users = "; ".join(dict.fromkeys(u.name() for u in groups if u.peer == key)) or "-"
        best = strongest_peer(carriers)
        for g in carriers:
            mark = " (the strongest)" if len(carriers) > 1 and g is best else ""
            rows.append((f"`{key}`", g.name() + mark, f"{g.median('effective_mb_s'):.1f}",
                         ", ".join(f"{e:.1f}" for e in g.effective()), users))
    return lines + table(("Key", "Row", "Median MB/s", "All reps (MB/s, in order)", "Compared with it"),
                         rows, ("Median MB/s",)) + [""]


def limit_lines(groups, limits):
    lines = ["## Limits", "",
             "A limit's value is its best repetition; a row's ratio is its median over that value.", ""]
    if not limits:
        return lines + ["no limit was measured in this run", ""]
    rows = []
    for key, carriers in limits.items():
        users = "; ".join(dict.fromkeys(u.name() for u in groups if u.limit == key)) or "-"
        best = limit_best(carriers)
        for g in carriers:
            mark = " (the limit)" if len(carriers) > 1 and max(g.effective()) == best else ""
            rows.append((f"`{key}`", g.name() + mark, g.purpose, f"{max(g.effective()):.1f}",
                         ", ".join(f"{e:.1f}" for e in g.effective()), users))
    return lines + table(("Key", "Row", "Purpose", "Best MB/s", "All reps (MB/s, in order)",
                          "Compared with it"), rows, ("Best MB/s",)) + [""]


def chart_lines(charts, md_dir, img_dir):
    lines = ["## Charts", ""]
    for title, name, written in charts:
        lines += [f"### {title}", ""]
        if written:
            link = Path(os.path.relpath(img_dir / name, md_dir)).as_posix()
            lines.append(f"![{title}]({link})")
        else:
            lines.append(NO_CHART)
        lines.append("")
    return lines


def detail_lines(meta, md_dir):
    """This run's pages first, then the older per-suite pages that exist next to the report."""
    written = {Path(os.path.relpath(p["page"], md_dir)).as_posix(): p["suite"] for p in meta["pages"]}
    design = design_dir_link(md_dir)
    known = {page: (cmd, what.format(design=design)) for page, cmd, what in DETAIL_PAGES}
    rows = []
    for link, suite in written.items():
        cmd, what = known.get(link, ("-", f"the {suite} suite's own page"))
        rows.append((f"[{link}]({link})", cmd if cmd == "-" else f"`{cmd}`", what, "yes"))
    for page, cmd, what in DETAIL_PAGES:
        what = what.format(design=design)
        if page not in written and (md_dir / page).exists():
            rows.append((f"[{page}]({page})", cmd if cmd == "-" else f"`{cmd}`", what, "no"))
    lines = ["## Details", ""]
    if not rows:
        return lines + ["no detail pages", ""]
    return lines + table(("Page", "Command", "What it compares", "Written this run"), rows) + [""]


def render_markdown(meta, groups, limits, peers, seeds, charts, md_dir, img_dir):
    lines = (header_lines(meta, md_dir) + beaten_lines(groups) + mismatch_lines(groups)
             + verdict_lines(groups, peers) + suite_lines(groups, seeds) + limit_lines(groups, limits)
             + peer_lines(groups, peers)
             + chart_lines(charts, md_dir, img_dir) + detail_lines(meta, md_dir))
    return "\n".join(lines).rstrip("\n") + "\n"


def csv_record(group, seeds, meta):
    seed = seeds.get(group.label)
    eff = group.effective()
    return {
        "suite": group.suite, "path": group.path, "label": group.label, "purpose": group.purpose,
        "pthreads": group.pthreads, "reps": len(group.reps), "size_mb": group.median("size_mb"),
        "elapsed_s": group.median("elapsed_s"), "effective_mb_s_min": min(eff),
        "effective_mb_s_median": statistics.median(eff), "effective_mb_s_max": max(eff),
        "wire_mb_s": group.median("wire_mb_s"), "user_s": group.median("user_s"),
        "sys_s": group.median("sys_s"), "mb_per_cpu_s": group.median("mb_per_cpu_s"),
        "integrity": group.integrity(), "integrity_mismatch_reps": group.mismatches(),
        "loss_pct": group.median("loss_pct"), "key": group.key, "limit": group.limit,
        "limit_best_mb_s": group.limit_best, "ratio_to_limit": group.ratio,
        "above_limit": "yes" if group.above_limit() else "no", "peer": group.peer,
        "best_peer": group.best_peer.label if group.best_peer else None,
        "best_peer_median_mb_s": group.best_peer.median("effective_mb_s") if group.best_peer else None,
        "ratio_to_best_peer": group.peer_ratio,
        "seeds": "; ".join(seed["figures"]) if seed else None,
        "seeds_file": seed["seed_file"] if seed else None,
        "notes": group.notes(), "mode": meta["mode"], "date": meta["date"],
    }


def write_csv(path, groups, seeds, meta):
    with open(path, "w", encoding="utf-8", newline="") as f:
        out = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        out.writeheader()
        for group in groups:
            # None is an empty field, so a reader tells "not measured" from 0.
            out.writerow({k: "" if v is None else v for k, v in csv_record(group, seeds, meta).items()})


# ---------------------------------------------------------------- charts


def new_figure(bars=None):
    """1200x700 px; a bar chart grows with its rows so every label stays readable."""
    height = 7 if bars is None else max(3.5, 0.3 * bars + 1.8)
    fig = Figure(figsize=(12, height), dpi=100)
    FigureCanvasAgg(fig)  # PNG through Agg, whatever backend the environment configures
    return fig, fig.add_subplot()


def suite_colors(groups):
    palette = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown",
               "tab:pink", "tab:olive")
    return {s: palette[i % len(palette)] for i, s in enumerate(first_seen(g.suite for g in groups))}


def bar_axes(ax, names):
    """Horizontal bars, first row on top: the labels are long and there are many."""
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.invert_yaxis()
    ax.grid(axis="x", alpha=0.3)
    ax.figure.tight_layout()


def chart_throughput(path, groups):
    if not groups:
        return False
    fig, ax = new_figure(len(groups))
    colors = suite_colors(groups)
    ax.barh(range(len(groups)), [statistics.median(g.effective()) for g in groups],
            xerr=spread(groups), color=[colors[g.suite] for g in groups], capsize=2,
            error_kw={"elinewidth": 0.8})
    marked = [(i, g.limit_best) for i, g in enumerate(groups) if g.limit_best is not None]
    handles = [Patch(color=color, label=f"suite {suite}") for suite, color in colors.items()]
    if marked:
        handles.append(ax.scatter([v for _, v in marked], [i for i, _ in marked], marker="|", s=180,
                                  color="black", linewidths=2, zorder=3, label="its limit (best repetition)"))
    ax.legend(handles=handles, loc="lower right", fontsize=8)
    ax.set_xlabel("effective MB/s (bar: median; whiskers: min-max; MB = 10^6 bytes)")
    ax.set_title(f"Effective throughput per row, with its limit: suite {groups[0].suite}")
    bar_axes(ax, [bar_name(g) for g in groups])
    return save(fig, path)


def bar_name(group):
    """A bar's label: one chart per suite, so the suite is in the title, not on every bar."""
    return group.name().split("/", 1)[-1]


def spread(groups):
    """Distances from each group's median effective MB/s down to its min and up to its max."""
    med = [statistics.median(g.effective()) for g in groups]
    return [[m - min(g.effective()) for m, g in zip(med, groups)],
            [max(g.effective()) - m for m, g in zip(med, groups)]]


def save(fig, path):
    fig.tight_layout()
    fig.savefig(path)
    return True


def chart_mb_per_cpu(path, groups):
    rows = [g for g in groups if g.median("mb_per_cpu_s") is not None]
    if not rows:
        return False
    fig, ax = new_figure(len(rows))
    colors = suite_colors(groups)
    ax.barh(range(len(rows)), [g.median("mb_per_cpu_s") for g in rows],
            color=[colors[g.suite] for g in rows])
    ax.set_xlabel("MB per CPU-second (median; CPU time of the side doing the work)")
    ax.set_title(f"CPU efficiency per row: suite {rows[0].suite}")
    bar_axes(ax, [bar_name(g) for g in rows])
    return save(fig, path)


def series_of(groups, ident):
    """ident -> its groups, in first-seen order."""
    series = {}
    for g in groups:
        series.setdefault(ident(g), []).append(g)
    return series


def memory_limit(groups, kind):
    """(N, best MB/s) of the mem-<kind>-<N>t limits, by N."""
    points = []
    for g in groups:
        m = re.fullmatch(rf"mem-{kind}-(\d+)t", g.key or "")
        if m:
            points.append((int(m.group(1)), max(g.effective())))
    return sorted(points)


def chart_pcore_scaling(path, groups):
    rows = [g for g in groups if g.suite == "pcore" and g.purpose != "Limit"]
    if not rows:
        return False
    fig, ax = new_figure()
    several_paths = len({g.path for g in rows}) > 1
    threads = {g.pthreads for g in rows}
    for (where, label), series in series_of(rows, lambda g: (g.path, g.label)).items():
        series.sort(key=lambda g: g.pthreads)
        ax.plot([g.pthreads for g in series], [g.median("effective_mb_s") for g in series], marker="o",
                label=f"{label} ({where})" if several_paths else label)
    for kind, style in (("read", "--"), ("rmw", ":")):
        points = memory_limit(groups, kind)
        if points:
            ax.plot(*zip(*points), linestyle=style, color="black", marker="x",
                    label=f"limit mem-{kind}-<N>t (best repetition)")
            threads |= {n for n, _ in points}
    ax.set_xticks(sorted(threads))
    return finish_line_chart(fig, ax, path, "pthreads (pcores doing the work)", "effective MB/s (median)",
                             "pCPU ops: effective MB/s against pthreads, with the memory limits")


def finish_line_chart(fig, ax, path, xlabel, ylabel, title):
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save(fig, path)


def chart_udp_loss(path, groups):
    rows = [g for g in groups if g.suite == "udp" and g.median("loss_pct") is not None]
    if not rows:
        return False
    fig, ax = new_figure()
    for label, series in series_of(rows, lambda g: g.label).items():
        series.sort(key=lambda g: g.median("loss_pct"))
        ax.errorbar([g.median("loss_pct") for g in series],
                    [statistics.median(g.effective()) for g in series],
                    yerr=spread(series), marker="o", capsize=3, label=label)
    return finish_line_chart(fig, ax, path, "loss injected on the link (%)",
                             "goodput: effective MB/s (median, min-max bars)", "UDP goodput against loss")


# Bar charts: one per suite, as one chart of every row had ~190 unreadable bars.
BAR_CHARTS = (
    ("Effective throughput", "bench-throughput", chart_throughput),
    ("MB per CPU-second", "bench-mb-per-cpu", chart_mb_per_cpu),
)
LINE_CHARTS = (
    ("pCPU scaling", "bench-pcore-scaling.png", chart_pcore_scaling),
    ("UDP goodput against loss", "bench-udp-loss.png", chart_udp_loss),
)


def chart_plan(groups):
    """(title, file name, draw) for this run's charts, the bar charts per suite first."""
    plan = []
    for title, stem, draw in BAR_CHARTS:
        for suite in first_seen(g.suite for g in groups):
            mine = [g for g in groups if g.suite == suite]
            plan.append((f"{title}: suite {suite}", f"{stem}-{suite}.png",
                         lambda path, _, mine=mine, draw=draw: draw(path, mine)))
    return plan + list(LINE_CHARTS) + fanout_chart.charts(groups, new_figure, finish_line_chart)


def write_charts(img_dir, groups):
    """(title, file name, written) per chart. A chart without data is not written, and
    every older chart file is removed first, so docs/bench/img never shows another run's numbers."""
    img_dir.mkdir(parents=True, exist_ok=True)
    for old in img_dir.glob("bench-*.png"):
        old.unlink()
    done = []
    for title, name, draw in chart_plan(groups):
        done.append((title, name, draw(img_dir / name, groups)))
    return done


# ---------------------------------------------------------------- main


def parse_args(argv):
    p = argparse.ArgumentParser(description="Write the make bench report from benchmark rows.")
    p.add_argument("--rows", required=True, type=Path, help="JSON Lines, docs/design/bench-rows.md")
    p.add_argument("--meta", required=True, type=Path, help="the run's META.json")
    p.add_argument("--out-md", required=True, type=Path)
    p.add_argument("--out-csv", required=True, type=Path)
    p.add_argument("--img-dir", required=True, type=Path)
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    try:
        meta = load_meta(args.meta)
    except ReportError as e:
        print(f"report.py: {args.meta}: {e}", file=sys.stderr)
        return 1
    try:
        groups = group_rows(load_rows(args.rows))
        limits, peers = best_limits(groups), peer_keys(groups)
        attach_ratios(groups, limits, peers)
    except ReportError as e:
        print(f"report.py: {args.rows}: {e}", file=sys.stderr)
        return 1
    seeds = load_seeds()
    charts = write_charts(args.img_dir, groups)
    md_dir = args.out_md.parent
    args.out_md.write_text(render_markdown(meta, groups, limits, peers, seeds, charts, md_dir, args.img_dir),
                           encoding="utf-8")
    write_csv(args.out_csv, groups, seeds, meta)
    beaten = [g for g in groups if g.above_limit()]
    if beaten:
        print("report.py: limits beaten (a measurement bug: the limit measured too weakly, or the row "
              "wrong); the report is written and names them:", file=sys.stderr)
        for g in beaten:
            print(f"  {g.name()}: {g.ratio:.2f}x of `{g.limit}`", file=sys.stderr)
        return EXIT_LIMIT_BEATEN
    return 0


if __name__ == "__main__":
    sys.exit(main())
