# SPDX-License-Identifier: Apache-2.0
"""Unit tests of hack/bench/fanout_model.py and the fan-out chart of report.py (make test-bench-report)."""

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

import fanout_chart  # noqa: E402
import fanout_model as fm  # noqa: E402
from test_report import Run, png_size, row  # noqa: E402

MB = 1e6


def test_fit_reads_rate_delta_and_base_from_the_measured_numbers():
    # 100 MB in 0.5 s per hop; the chain takes 0.7 s to 2 nodes, 0.9 s to 4.
    f = fm.fit(100 * MB, 0.5, {2: 0.7, 3: 0.8, 4: 0.9})
    assert f.rate == pytest.approx(200 * MB)
    assert f.delta == pytest.approx(0.1)
    assert f.base == pytest.approx(0.2)
    assert f.gram_s == pytest.approx((1 << 20) / (200 * MB))
    # the chain grows by delta a node; one after another by a whole copy
    assert fm.chain(f, 100 * MB, 4) == pytest.approx(0.9)
    assert fm.chain(f, 100 * MB, 1000) == pytest.approx(0.5 + 0.2 + 998 * 0.1)
    assert fm.one_after_another(f, 100 * MB, 4) == pytest.approx(0.2 + 3 * 0.5)
    assert fm.tree(f, 100 * MB, 1000) == pytest.approx(1.0 + 0.2 + 10 * 0.1)


def test_a_chain_that_got_faster_with_more_nodes_adds_nothing_per_node():
    assert fm.fit(100 * MB, 0.5, {2: 0.9, 4: 0.8}).delta == 0.0
    assert fm.fit(100 * MB, 0.5, {3: 0.9}).delta == 0.0


def fanout_rows(link="2gbit", source="sudachi", size_mb=202.0):
    key = f"fanout-one-hop-{link}-{source}"
    rows = [row(label="one hop (a loaded blob to one peer)", eff=size_mb / 0.85, purpose="Limit", key=key,
                suite="fanout", path=f"link {link}, {source}, N=2", size_mb=size_mb, elapsed_s=0.85)]
    for n, ours, theirs in ((2, 1.0, 1.2), (3, 1.1, 2.2), (4, 1.2, 3.2)):
        rows.append(row(label="PacketFS fan-out (pipelined relays)", suite="fanout", size_mb=size_mb,
                        path=f"link {link}, {source}, N={n}", elapsed_s=ours, eff=size_mb / ours, limit=key))
        rows.append(row(label="every node from the origin at once", suite="fanout", purpose="Peer",
                        size_mb=size_mb, path=f"link {link}, {source}, N={n}", elapsed_s=theirs,
                        eff=size_mb / theirs, limit=key))
    return rows


def test_series_keeps_each_links_largest_source():
    groups = report_groups(fanout_rows(source="minilm", size_mb=92.0) + fanout_rows())
    got = fanout_chart.series(groups)
    assert list(got) == ["2gbit"]
    source, size, hop, ways = got["2gbit"]
    assert (source, size, hop) == ("sudachi", 202.0 * MB, 0.85)
    assert ways["PacketFS fan-out (pipelined relays)"] == {2: 1.0, 3: 1.1, 4: 1.2}


def test_a_swarm_is_drawn_as_measured_with_no_model_line():
    f = fm.fit(202 * MB, 0.85, {2: 1.0, 3: 1.1, 4: 1.2})
    assert fanout_chart.model_line("BitTorrent swarm (aria2c, opentracker)", f, 202 * MB, [4, 16]) is None
    assert fanout_chart.model_line("store-and-forward chain (naive, one node after another)", f, 202 * MB, [4]) == \
        [fm.one_after_another(f, 202 * MB, 4)]
    assert fanout_chart.model_line("every node from the origin at once", f, 202 * MB, [4]) == \
        [fm.one_after_another(f, 202 * MB, 4)]
    assert fanout_chart.model_line("PacketFS fan-out (pipelined relays)", f, 202 * MB, [4]) == [fm.chain(f, 202 * MB, 4)]


def report_groups(rows):
    import report  # noqa: PLC0415
    return report.group_rows(rows)


def test_one_chart_per_link_in_the_report(tmp_path):
    run = Run(tmp_path, fanout_rows() + fanout_rows(link="none", size_mb=202.0))
    assert run.code == 0
    for link in ("2gbit", "none"):
        name = f"bench-fanout-{link}.png"
        assert png_size(run.img / name) == (1200, 700), name
        assert f"](img/{name})" in run.page()
