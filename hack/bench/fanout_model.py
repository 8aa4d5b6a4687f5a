# SPDX-License-Identifier: Apache-2.0
"""The fan-out model of docs/design/fanout.md, fed only by measured numbers.

One fit per link from the largest source's rows: the one-hop rate B, the
time each node added to the pipelined chain costs (delta, from the fewest
to the most nodes measured) and the 2-node time beyond one hop (base: the
origin's read start, the last verify). dataplane/bench/fanout.sh prints its
tables from it and hack/bench/fanout_chart.py draws its dashed lines; no
other numbers go in, and what comes out is a model, not a measurement.
"""
import math
from dataclasses import dataclass

GRAM = 1 << 20  # bytes of one replication gram: the latency a hop adds at least


@dataclass(frozen=True)
class Fit:
    rate: float  # B: one hop, bytes/s
    delta: float  # s each node added to the pipelined chain costs
    base: float  # s beyond one hop at 2 nodes

    @property
    def gram_s(self):
        return GRAM / self.rate


def fit(size, one_hop_s, pipelined):
    """size bytes; one hop's seconds; pipelined: {nodes: seconds} of the chain."""
    rate = size / one_hop_s
    by_n = sorted(pipelined.items())
    delta = 0.0
    if len(by_n) > 1:
        delta = max(0.0, (by_n[-1][1] - by_n[0][1]) / (by_n[-1][0] - by_n[0][0]))
    base = max(0.0, by_n[0][1] - size / rate)
    return Fit(rate, delta, base)


def chain(f, size, n, per_node=None):
    """The pipelined chain to n nodes: one hop, base, and per_node (delta by
    default; the gram latency for the lower bound) for each node past two."""
    return size / f.rate + f.base + (n - 2) * (f.delta if per_node is None else per_node)


def tree(f, size, n):
    """A binary tree: each node feeds two children at half the rate."""
    return 2 * size / f.rate + f.base + math.ceil(math.log2(n)) * f.delta


def one_after_another(f, size, n):
    """Store-and-forward, or every node from one origin: a whole copy per node."""
    return f.base + (n - 1) * size / f.rate
