# SPDX-License-Identifier: Apache-2.0
"""Unit tests of hack/bench/model_volume_report.py over rows written here
(make test-bench-report): the medians, the ratio to the strongest baseline,
the same-bytes verdict, and a skeleton that holds no measurement."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

import model_volume_report as mvr  # noqa: E402

MIB = 1 << 20
META = {"date": "2026-12-03 20:00 UTC", "git": "abc1234", "cpu": "Test CPU", "cpus": "2", "mem": "8 GiB",
        "kernel": "6.0-test", "load": "before 0.1 0.2 0.3; after 0.4 0.5 0.6", "size": "437971872",
        "sha": "0" * 64, "origin": "n2", "reader": "n0", "reps": "3"}


def usage(minflt, anon, file, cgroup):
    return {"minflt": minflt, "majflt": 0, "maxrss": anon + file, "cgroup": cgroup, "cgroupFile": "memory.current",
            "status": {"VmRSS": anon + file, "RssAnon": anon, "RssFile": file, "RssShmem": 0}}


def row(path, method, all_s, rep=1, digests="d", first_s=3.0, resident=None):
    """One reader run created at t=100: its first tensor first_s later, its
    last all_s later; the process started 2 s after creation."""
    return {"rep": rep, "path": path, "method": method, "node": "n0", "created": 100.0, "startedAt": "",
            "residentBefore": resident, "start": 102.0, "imported": 103.0, "first": 100.0 + first_s,
            "done": 100.0 + all_s, "tensors": 200, "digests": digests,
            "begin": usage(1000, 20 * MIB, 16 * MIB, 21 * MIB), "end": usage(1500, 21 * MIB, 430 * MIB, 22 * MIB)}


def table(text):
    """The result table's rows as {(method, path): cells}."""
    out = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 15 and cells[0] in mvr.METHODS:
            out[(cells[0], cells[1])] = cells
    return out


def test_ratio_is_the_strongest_other_path_over_the_mounted_one():
    rows = [row("mounted", "mapped", t, rep=i) for i, t in enumerate((4.0, 5.0, 9.0))]
    rows += [row("local-disk", "mapped", t, rep=i, resident=0) for i, t in enumerate((10.0, 12.0, 11.0))]
    rows += [row("socket", "mapped", t, rep=i) for i, t in enumerate((6.0, 7.5, 6.5))]
    t = table(mvr.render(rows, META))
    mounted = t[("mapped", "mounted")]
    assert mounted[2] == "3" and mounted[4] == "5.00"  # median of 4, 5, 9
    assert mounted[3] == "3.00" and mounted[5] == "1.00" and mounted[6] == "3.00"  # the process started 2 s after creation
    assert mounted[7] == "1.30x vs socket"  # 6.5 / 5.0: socket is the faster baseline
    assert t[("mapped", "local-disk")][7] == ""  # ratios are the mounted path's only
    assert t[("mapped", "local-disk")][14] == "0.0 MiB"
    assert mounted[8] == "500" and mounted[13] == "1.0"  # faults and cgroup over the read


def test_readers_that_disagree_are_reported():
    text = mvr.render([row("mounted", "library", 5.0), row("local-disk", "library", 9.0, digests="other")], META)
    assert "byte for byte: **NO: 2 different readings**" in text
    same = mvr.render([row("mounted", "library", 5.0), row("local-disk", "library", 9.0)], META)
    assert "byte for byte: **yes** (200 tensors)" in same


def test_skeleton_holds_no_measurement(tmp_path):
    out = tmp_path / "page.md"
    subprocess.run([sys.executable, str(HERE / "model_volume_report.py"), "--skeleton", "--out", str(out)], check=True)
    text = out.read_text()
    assert "Not measured yet" in text and "| method | path | reps |" not in text


def test_no_rows_is_an_error(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text("")
    with pytest.raises(subprocess.CalledProcessError):
        subprocess.run([sys.executable, str(HERE / "model_volume_report.py"), "--rows", str(rows), "--out",
                        str(tmp_path / "p.md"), "--meta", json.dumps(META)], check=True, capture_output=True)
