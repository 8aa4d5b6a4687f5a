# SPDX-License-Identifier: Apache-2.0
"""Unit tests of hack/bench/report.py over rows written here (make test-bench-report)."""

import csv
import json
import struct
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

import report  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
LINE_CHART_FILES = ("bench-pcore-scaling.png", "bench-udp-loss.png")


def row(label="PFS-With-Payload-TCP", eff=100.0, **over):
    """One valid repetition; over replaces any key."""
    r = {"suite": "tcp", "path": "loopback", "label": label, "purpose": "Transfer",
         "size_mb": 1000.0, "elapsed_s": 1000.0 / eff, "effective_mb_s": eff, "wire_mb_s": None,
         "user_s": 0.5, "sys_s": 1.5, "mb_per_cpu_s": 500.0, "integrity": "OK", "pthreads": 1,
         "notes": "", "limit": None, "peer": None, "key": None, "loss_pct": None}
    r.update(over)
    return r


def limit_row(key, eff, **over):
    return row(label=f"limit {key}", eff=eff, purpose="Limit", key=key, integrity="NA", user_s=None,
               sys_s=None, mb_per_cpu_s=None, **over)


def peer_row(label, key, eff, **over):
    return row(label=label, eff=eff, purpose="Peer", key=key, integrity="NA", **over)


META = {"command": "make bench MODE=quick", "date": "2026-11-27 09:00 UTC", "mode": "quick",
        "git": "abc1234", "machine": {"cpu": "Test CPU", "nproc": 2, "mem_gib": 8},
        "kernel": "6.0-test", "load_before": "0.1 0.2 0.3", "load_after": "0.4 0.5 0.6", "pages": []}


class Run:
    """One report.py run in a temporary docs/ tree."""

    def __init__(self, tmp_path, rows, meta=None, raw_lines=None):
        self.docs = tmp_path / "docs"
        self.docs.mkdir(exist_ok=True)
        self.md, self.csv, self.img = self.docs / "benchmarks.md", self.docs / "benchmarks.csv", self.docs / "img"
        rows_file, meta_file = tmp_path / "rows.jsonl", tmp_path / "meta.json"
        lines = raw_lines if raw_lines is not None else [json.dumps(r) for r in rows]
        rows_file.write_text("".join(line + "\n" for line in lines))
        meta_file.write_text(json.dumps(meta or META))
        self.code = report.main(["--rows", str(rows_file), "--meta", str(meta_file), "--out-md", str(self.md),
                                 "--out-csv", str(self.csv), "--img-dir", str(self.img)])

    def page(self):
        return self.md.read_text()

    def records(self):
        with open(self.csv, newline="") as f:
            return list(csv.DictReader(f))

    def record(self, label):
        (found,) = [r for r in self.records() if r["label"] == label]
        return found


def groups_of(rows):
    groups = report.group_rows([dict(r, _line=i) for i, r in enumerate(rows, 1)])
    report.attach_ratios(groups, report.best_limits(groups), report.peer_keys(groups))
    return groups


def test_groups_take_min_median_max_and_medians():
    rows = [row(eff=300.0, user_s=1.0), row(eff=100.0, user_s=3.0), row(eff=200.0, user_s=2.0),
            row(label="iperf3 TCP (1 stream)", eff=50.0)]
    g, other = groups_of(rows)
    assert (g.label, len(g.reps)) == ("PFS-With-Payload-TCP", 3)
    assert (min(g.effective()), g.median("effective_mb_s"), max(g.effective())) == (100.0, 200.0, 300.0)
    assert g.median("user_s") == 2.0
    assert g.median("wire_mb_s") is None
    assert len(other.reps) == 1


def test_notes_are_deduplicated_in_order():
    (g,) = groups_of([row(notes="b"), row(notes="a"), row(notes="b"), row(notes="")])
    assert g.notes() == "b; a"


def test_pthreads_make_separate_groups():
    groups = groups_of([row(pthreads=1), row(pthreads=2), row(pthreads=1)])
    assert [(g.pthreads, len(g.reps)) for g in groups] == [(1, 2), (2, 1)]


def test_limit_is_best_of_n_and_ratio_is_median_over_it():
    rows = [limit_row("crc32c-1core", e) for e in (900.0, 1000.0, 950.0)]
    rows += [row(eff=e, limit="crc32c-1core") for e in (700.0, 800.0, 900.0)]
    _, g = groups_of(rows)
    assert g.limit_best == 1000.0
    assert g.ratio == pytest.approx(0.8)
    assert not g.above_limit()


def test_ratio_above_one_is_flagged_in_row_and_listed(tmp_path):
    rows = [limit_row("iperf3-tcp-loopback", 100.0), row(eff=107.0, limit="iperf3-tcp-loopback")]
    run = Run(tmp_path, rows)
    assert run.code == report.EXIT_LIMIT_BEATEN  # written, and make bench fails
    page = run.page()
    beaten = page.split("## Limits beaten")[1].split("##")[0]
    assert "PFS-With-Payload-TCP" in beaten and "1.07x" in beaten
    assert "1.07x ABOVE LIMIT: measurement bug (limit too weak or row wrong)" in page.split("## Suite tcp")[1]
    assert run.record("PFS-With-Payload-TCP")["above_limit"] == "yes"


def test_no_limit_beaten_says_so(tmp_path):
    run = Run(tmp_path, [limit_row("k", 100.0), row(eff=100.0, limit="k")])
    assert "none: every ratio <= 1.0" in run.page().split("## Limits beaten")[1].split("##")[0]


def test_limit_naming_no_key_is_an_error(tmp_path, capsys):
    run = Run(tmp_path, [limit_row("k", 100.0), row(eff=50.0, limit="iperf3-tcp-veth")])
    assert run.code != 0
    err = capsys.readouterr().err
    assert "line 2" in err and "'limit'" in err and "iperf3-tcp-veth" in err
    assert not run.md.exists()


@pytest.mark.parametrize("line2, key", [
    ('{"suite": "tcp",', "not JSON"),
    (json.dumps({k: v for k, v in row().items() if k != "elapsed_s"}), "'elapsed_s'"),
    (json.dumps(row(effective_mb_s="fast")), "'effective_mb_s'"),
    (json.dumps(row(integrity="FINE")), "'integrity'"),
    (json.dumps(row(suite="nfs")), "'suite'"),
    (json.dumps(row(pthreads=1.5)), "'pthreads'"),
    (json.dumps(row(user_s=True)), "'user_s'"),
    (json.dumps(dict(row(), limt="k")), "'limt'"),
    (json.dumps(row(purpose="Limit")), "'key'"),
    (json.dumps(row(purpose="Baseline")), "'purpose'"),  # the old word for Peer is gone
    (json.dumps(row(key="k")), "'key'"),  # a Transfer row carries no key
    (json.dumps(dict({k: v for k, v in row().items() if k != "peer"})), "'peer'"),
    (json.dumps(row(label="iperf3 TCP (1 stream)", purpose="Peer", key="peer-tcp-loopback")), None),
])
def test_malformed_line_is_an_error_with_its_number(tmp_path, capsys, line2, key):
    run = Run(tmp_path, None, raw_lines=[json.dumps(row()), line2, json.dumps(row())])
    if key is None:  # the control: a valid line
        assert run.code == 0
        return
    assert run.code != 0
    err = capsys.readouterr().err
    assert "line 2" in err and key in err
    assert not run.md.exists()


def test_repetitions_that_disagree_on_their_limit_are_an_error(tmp_path, capsys):
    rows = [limit_row("a", 1.0), limit_row("b", 1.0), row(limit="a"), row(limit="b")]
    assert Run(tmp_path, rows).code != 0
    assert "line 4" in capsys.readouterr().err


def test_integrity_mismatch_wins_and_is_flagged(tmp_path):
    run = Run(tmp_path, [row(), row(integrity="MISMATCH"), row(), row(label="Other")])
    page = run.page()
    assert "**MISMATCH** (1 of 3 reps)" in page
    assert "MISMATCH in 1 of 3 repetitions" in page.split("## Integrity mismatches")[1].split("##")[0]
    rec = run.record("PFS-With-Payload-TCP")
    assert (rec["integrity"], rec["integrity_mismatch_reps"]) == ("MISMATCH", "1")
    assert run.record("Other")["integrity"] == "OK"


def test_csv_has_every_column_one_row_per_group_and_raw_values(tmp_path):
    rows = [limit_row("k", 400.0), row(eff=100.0, limit="k", notes="a | b"), row(eff=300.0, limit="k")]
    run = Run(tmp_path, rows)
    with open(run.csv, newline="") as f:
        assert next(csv.reader(f)) == list(report.CSV_COLUMNS)
    assert len(run.records()) == 2
    rec = run.record("PFS-With-Payload-TCP")
    assert float(rec["effective_mb_s_median"]) == 200.0
    assert float(rec["ratio_to_limit"]) == 0.5
    assert rec["limit"] == "k" and rec["key"] == ""
    assert rec["wire_mb_s"] == ""  # not measured, not 0
    assert rec["notes"] == "a | b"  # no markdown escaping
    assert (rec["mode"], rec["date"]) == ("quick", META["date"])


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_every_chart_is_a_png_when_data_exists(tmp_path):
    rows = [limit_row("iperf3-tcp-loopback", 500.0), row(eff=400.0, limit="iperf3-tcp-loopback")]
    for n in (1, 2):
        rows += [limit_row(f"mem-read-{n}t", 1000.0 * n, suite="limits", path="local", pthreads=n),
                 limit_row(f"mem-rmw-{n}t", 800.0 * n, suite="limits", path="local", pthreads=n)]
        rows += [row(label=f"pCPU {op}", suite="pcore", path="local", purpose="pCPU", eff=e * n, pthreads=n,
                     limit=f"mem-{lim}-{n}t") for op, e, lim in (("xor", 600.0, "rmw"), ("counteq", 700.0, "read"))]
    rows += [row(label="PFS-With-Payload-UDP", suite="udp", path=f"veth {p}% loss", loss_pct=p, eff=100.0 - p)
             for p in (0.0, 1.0, 5.0)]
    run = Run(tmp_path, rows)
    assert run.code == 0
    for name in LINE_CHART_FILES:
        assert png_size(run.img / name) == (1200, 700), name
        assert f"](img/{name})" in run.page()
    for suite in ("tcp", "limits", "pcore", "udp"):  # one bar chart per suite, as tall as its rows need
        width, height = png_size(run.img / f"bench-throughput-{suite}.png")
        assert width == 1200 and height >= 350, suite
        assert f"](img/bench-throughput-{suite}.png)" in run.page()
    assert report.NO_CHART in run.page()  # the limits' rows have no MB/CPU-s: that chart says so
    assert not (run.img / "bench-mb-per-cpu-limits.png").exists()


def test_charts_without_data_are_absent_and_the_page_says_so(tmp_path):
    stale = tmp_path / "docs" / "img" / "bench-udp-loss.png"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(PNG_MAGIC)  # an older run's chart must not survive as if it were this run's
    run = Run(tmp_path, [row(user_s=None, sys_s=None, mb_per_cpu_s=None)])
    assert run.code == 0
    assert png_size(run.img / "bench-throughput-tcp.png")
    for name in ("bench-mb-per-cpu-tcp.png",) + LINE_CHART_FILES:
        assert not (run.img / name).exists(), name
        assert f"]({name})" not in run.page()
    assert run.page().count(report.NO_CHART) == 3


def test_seeds_figures_appear_for_their_labels(tmp_path):
    labels = ("Conventional (scp, no-compress)", "PFS-With-Payload-TCP", "Native PFS Offset-only Mode - TCP",
              "Into blob: PFS-With-Payload-TCP")
    run = Run(tmp_path, [row(label=label) for label in labels])
    lines = {label: next(line for line in run.page().splitlines() if line.startswith(f"| {label} |"))
             for label in labels}
    assert "582.0 MB/s, 633.3 MB/CPU-s" in lines["Conventional (scp, no-compress)"]
    assert "100.7 MB/s, 202.9 MB/CPU-s" in lines["PFS-With-Payload-TCP"]
    assert "1,062.3 MB/s, 1,075.0 MB/CPU-s" in lines["Native PFS Offset-only Mode - TCP"]
    assert lines["Into blob: PFS-With-Payload-TCP"].split(" | ")[15] == "-"
    assert run.record("Conventional (scp, no-compress)")["seeds_file"] == "001_16f94b0af852e973.txt"
    assert run.record("Into blob: PFS-With-Payload-TCP")["seeds"] == ""


def test_pcpu_seed_figures_are_the_seed_text():
    seeds = report.load_seeds()
    assert seeds["pCPU xor"]["figures"][0] == "~15.5\u201315.8 GB/s"
    for seed in seeds.values():
        # Each figure is copied from its quote (a table row's unit is in the table's header).
        for figure in seed["figures"]:
            assert figure.removesuffix(" MB/s").removesuffix(" MB/CPU-s") in seed["quote"], figure
        assert seed["seed_file"][:3] in ("000", "001", "002")


def test_details_link_this_runs_pages_and_existing_ones(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "bench-pcore.md").write_text("old page")
    meta = dict(META, pages=[{"suite": "tcp", "page": str(tmp_path / "docs" / "bench-tcp.md")}])
    details = Run(tmp_path, [row()], meta=meta).page().split("## Details")[1]
    assert "| [bench-tcp.md](bench-tcp.md) | `make -C dataplane bench-tcp` |" in details
    assert "[bench-pcore.md](bench-pcore.md)" in details
    assert "bench-xsk.md" not in details  # no such page next to this report


def test_page_header_names_the_run(tmp_path):
    page = Run(tmp_path, [row()]).page()
    assert page.startswith("<!-- SPDX-License-Identifier: Apache-2.0 -->\n")
    assert "written by `make bench MODE=quick`" in page and "do not edit" in page
    for value in ("`make bench MODE=quick`", META["date"], "quick", "abc1234", "Test CPU", "6.0-test",
                  "0.1 0.2 0.3", "0.4 0.5 0.6"):
        assert value in page


def test_test_requirements_include_every_pin_of_the_report():
    pins = lambda name: {l for l in (HERE / name).read_text().splitlines() if l and not l.startswith("#")}
    assert pins("requirements.txt") <= pins("requirements-test.txt")


def test_two_measures_of_one_limit_share_its_key_and_the_best_counts():
    rows = [limit_row("copy-1t", 400.0), limit_row("copy-1t", 380.0),
            limit_row("copy-1t", 450.0, path="veth"), row(eff=360.0, limit="copy-1t")]
    (pfs,) = [g for g in groups_of(rows) if g.label == "PFS-With-Payload-TCP"]
    assert pfs.limit_best == 450.0
    assert pfs.ratio == pytest.approx(0.8)


IPERF = "iperf3 (1 TCP stream)"
IPERF_N = "iperf3 -N (1 TCP stream, TCP_NODELAY as PFS sets it)"


def peers_of_veth(pfs_effs):
    """Plain iperf3 has the best single repetition; -N the best median: -N is the strongest."""
    rows = [peer_row(IPERF, "peer-tcp-veth", e, path="veth") for e in (100.0, 100.0, 500.0)]
    rows += [peer_row(IPERF_N, "peer-tcp-veth", e, path="veth") for e in (290.0, 300.0, 310.0)]
    return rows + [row(eff=e, path="veth", peer="peer-tcp-veth") for e in pfs_effs]


def test_the_strongest_peer_is_the_best_median_not_the_best_repetition():
    groups = groups_of(peers_of_veth((330.0, 330.0, 330.0)))
    (pfs,) = [g for g in groups if g.label == "PFS-With-Payload-TCP"]
    assert pfs.best_peer.label == IPERF_N
    assert pfs.peer_ratio == pytest.approx(1.1)
    assert not pfs.above_limit()  # beating a peer is a result, not a bug


def test_both_ratios_are_columns_in_the_page_and_the_csv(tmp_path):
    rows = peers_of_veth((240.0,)) + [limit_row("copy-1t", 1200.0, path="local")]
    rows[-2]["limit"] = "copy-1t"
    run = Run(tmp_path, rows)
    assert run.code == 0
    header, _, *body = run.page().split("## Suite tcp")[1].split("\n\n")[1].splitlines()
    cols = [c.strip() for c in header.strip("|").split("|")]
    line = next(l for l in body if l.startswith("| PFS-With-Payload-TCP |"))
    cells = [c.strip() for c in line.strip("|").split(" | ")]
    assert cells[cols.index("Ratio to best peer")] == f"0.80x of {IPERF_N} \u2014 behind the peer"
    assert cells[cols.index("Ratio to limit")] == "0.20x of `copy-1t`"
    rec = run.record("PFS-With-Payload-TCP")
    assert (rec["peer"], rec["best_peer"]) == ("peer-tcp-veth", IPERF_N)
    assert float(rec["best_peer_median_mb_s"]) == 300.0
    assert float(rec["ratio_to_best_peer"]) == pytest.approx(0.8)
    assert float(rec["ratio_to_limit"]) == pytest.approx(0.2)
    assert run.record(IPERF)["ratio_to_best_peer"] == ""  # a peer names no peer here


def test_verdicts_name_the_strongest_peer_of_the_run(tmp_path):
    run = Run(tmp_path, peers_of_veth((315.0, 315.0)))
    verdicts = run.page().split("## Verdicts against the strongest peer")[1].split("\n## ")[0]
    assert f"tcp/veth: PFS-With-Payload-TCP: 1.05x of {IPERF_N}" in verdicts
    assert "ahead of the peer" in verdicts and "the strongest of 2 under `peer-tcp-veth`" in verdicts
    peers = run.page().split("\n## Peers\n")[1]
    assert f"{IPERF_N} (the strongest) | 300.0 |" in peers and f"{IPERF} | 100.0 |" in peers


@pytest.mark.parametrize("rows, field, said", [
    ([peer_row(IPERF, "peer-tcp-veth", 300.0), row(limit="peer-tcp-veth")], "'limit'", "is a Peer key"),
    ([limit_row("copy-1t", 900.0), row(peer="copy-1t")], "'peer'", "is a Limit key"),
    ([limit_row("copy-1t", 900.0), row(peer="peer-tcp-veth")], "'peer'", "names no Peer key"),
    ([limit_row("k", 900.0), peer_row(IPERF, "k", 300.0)], "'key'", "not both"),
])
def test_a_limit_or_peer_of_the_wrong_kind_is_an_error(tmp_path, capsys, rows, field, said):
    run = Run(tmp_path, rows)
    assert run.code == 1
    err = capsys.readouterr().err
    assert "line 2" in err and field in err and said in err
    assert not run.md.exists()


def test_a_beaten_limit_exits_non_zero_after_writing_and_names_the_rows(tmp_path, capsys):
    rows = [limit_row("copy-1t", 300.0), peer_row(IPERF, "peer-tcp-loopback", 320.0, limit="copy-1t"),
            row(eff=200.0, limit="copy-1t", peer="peer-tcp-loopback")]
    run = Run(tmp_path, rows)
    assert run.code == report.EXIT_LIMIT_BEATEN
    assert run.md.exists() and run.csv.exists()
    err = capsys.readouterr().err
    assert f"tcp/loopback: {IPERF}: 1.07x of `copy-1t`" in err
    assert "PFS-With-Payload-TCP" not in err  # 0.67x: within its limit
    assert run.record(IPERF)["above_limit"] == "yes"


def test_the_limits_table_marks_which_measure_was_best(tmp_path):
    rows = [limit_row("k", 1.0), limit_row("k", 2.0, path="veth"), row(eff=1.5, limit="k")]
    page = Run(tmp_path, rows).page().split("\n## Limits\n")[1]
    assert "veth" in page and "(the limit)" in page


def test_a_failed_suite_is_named_at_the_top(tmp_path):
    page = Run(tmp_path, [row()], meta=dict(META, failed=["udp"])).page()
    assert "## Suites that failed" in page
    assert page.index("## Suites that failed") < page.index("## Limits beaten")
    assert "udp" in page.split("## Suites that failed")[1].split("##")[0]


def test_the_s3_suite_is_a_suite_with_its_peers_limit_and_page(tmp_path):
    """bench/s3.sh's rows: the origin's read against the clients, the fan-out against its limit."""
    rows = [row(suite="s3", path="S3 read, minilm", label="origin", eff=300.0, peer="peer-s3-read-minilm"),
            peer_row("s5cmd", "peer-s3-read-minilm", 250.0, suite="s3", path="S3 read, minilm"),
            peer_row("aws", "peer-s3-read-minilm", 60.0, suite="s3", path="S3 read, minilm"),
            limit_row("s3-limit-minilm", 400.0, suite="s3", path="S3 to nodes, minilm, the limit"),
            row(suite="s3", path="S3 to N nodes, minilm, N=3", label="ours", eff=350.0, limit="s3-limit-minilm")]
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "bench-s3.md").write_text("the s3 page")
    run = Run(tmp_path, rows)
    assert run.code == 0
    assert "## Suite s3" in run.page()
    assert "| [bench-s3.md](bench-s3.md) | `make -C dataplane bench-s3` |" in run.page()
    assert float(run.record("origin")["ratio_to_best_peer"]) == pytest.approx(1.2)
    assert float(run.record("ours")["ratio_to_limit"]) == pytest.approx(0.875)
