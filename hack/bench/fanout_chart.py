# SPDX-License-Identifier: Apache-2.0
"""The fan-out chart of the make bench report: time to every node verified against the number of
nodes, one line per way to distribute, one hop as the floor, and the model (fanout_model.py, fed
with this run's numbers) dashed out to 1,000 nodes. One chart per link, of its largest source.

Reads the fanout suite's row groups (report.py's RowGroup: suite, path, label, purpose, median()),
whose path is "link <link>, <source>, N=<n>" (dataplane/bench/fanout.sh).
"""
import re

import fanout_model as fm

PATH = re.compile(r"link (\S+), (\S+), N=(\d+)")
MODEL_TO = 1000
PIPELINED = "PacketFS"  # the label of ours starts with it


def series(groups):
    """{link: (source, bytes, one_hop_s, {label: {n: seconds}})} for each link's largest source."""
    by = {}
    for g in groups:
        m = PATH.fullmatch(g.path) if g.suite == "fanout" else None
        if not m:
            continue
        link, source, n = m.group(1), m.group(2), int(m.group(3))
        size = g.median("size_mb") * 1e6
        entry = by.setdefault((link, source), {"bytes": size, "hop": None, "ways": {}})
        if g.purpose == "Limit":
            entry["hop"] = g.median("elapsed_s")
        else:
            entry["ways"].setdefault(g.label, {})[n] = g.median("elapsed_s")
    out = {}
    for (link, source), e in by.items():
        if e["hop"] is None or not e["ways"]:
            continue
        if link not in out or e["bytes"] > out[link][1]:
            out[link] = (source, e["bytes"], e["hop"], e["ways"])
    return out


# The ways the model has a line for: ours (a chain), and the two that send one copy after another
# (store-and-forward, every node from the origin). A swarm's time to every node has no model here:
# it is drawn as measured only.
ONE_AFTER_ANOTHER = ("store-and-forward", "every node from the origin")


def model_line(label, f, size, ns):
    """The model's seconds at each n for the way called label, or None when it has none."""
    if label.startswith(PIPELINED):
        return [fm.chain(f, size, n) for n in ns]
    if label.startswith(ONE_AFTER_ANOTHER):
        return [fm.one_after_another(f, size, n) for n in ns]
    return None


def draw(ax, link, source, size, hop, ways):
    """Measured points solid, the model dashed from the largest N measured to MODEL_TO."""
    pipelined = next((v for k, v in ways.items() if k.startswith(PIPELINED)), None)
    f = fm.fit(size, hop, pipelined) if pipelined else None
    for label, points in ways.items():
        ns = sorted(points)
        line = ax.plot(ns, [points[n] for n in ns], marker="o", label=f"{label} (measured)")[0]
        tail = [ns[-1]] + [n for n in (16, 64, 256, MODEL_TO) if n > ns[-1]]
        model = model_line(label, f, size, tail) if f else None
        if model:
            ax.plot(tail, model, linestyle="--", color=line.get_color(), label=f"{label} (model)")
    ax.axhline(hop, color="black", linestyle=":", label="one hop (the floor)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_title(f"Time to every node verified: link {link}, {source} ({size / 1e6:.0f} MB)")


def charts(groups, new_figure, finish):
    """(title, file name, draw(path, groups) -> written) per link with fan-out rows; new_figure and
    finish are the report's (one look for every chart)."""
    plan = []
    for link, (source, size, hop, ways) in series(groups).items():
        def one(path, _groups, link=link, source=source, size=size, hop=hop, ways=ways):
            fig, ax = new_figure()
            draw(ax, link, source, size, hop, ways)
            return finish(fig, ax, path, "nodes (log)", "seconds until every node verified (log)", ax.get_title())
        plan.append((f"Fan-out: time to every node verified, link {link}", f"bench-fanout-{link}.png", one))
    return plan
