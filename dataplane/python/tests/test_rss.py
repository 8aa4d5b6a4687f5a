# SPDX-License-Identifier: Apache-2.0
"""A consumer's memory does not grow by the blob size: it maps the holder's pages.

How Linux counts them (/proc/PID/status): pages of a shared tmpfs/shm mapping that
the consumer has touched count in its VmRSS, as RssShmem; they are the holder's pages
(one copy on the node, charged once), not the consumer's. What the consumer would own
is RssAnon (its private memory: a copy would land there). So the bound is on RssAnon
growth; RssShmem is shown to grow by what was mapped (the whole blob when attaching as
the C client does, populate + fingerprint; a few MiB when attaching lazily and reading
one file). Hugetlbfs pages count in neither (smaps Shared_Hugetlb): this test uses 4k.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import HERE, MiB, SILERO_ST

BLOB = 256 * MiB
ANON_BOUND = 16 * MiB  # interpreter noise + the fingerprint's few hundred KiB of temporaries


@pytest.fixture(scope="module")
def big(env, real_files):
    return env.pack(real_files, size=BLOB)


@pytest.mark.parametrize("mode", ["full", "lazy"])
def test_consumer_rss_does_not_grow_by_the_blob_size(big, mode, record_property):
    r = subprocess.run([sys.executable, str(HERE / "rss_consumer.py"), str(big.holder.sock),
                        str(big.holder.token_file), SILERO_ST, "lstm_cell.weight_ih", mode],
                       capture_output=True, text=True, timeout=300,
                       env={"PYTHONPATH": str(HERE.parent), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    assert m["size"] == BLOB and m["tensor_shape"] == [512, 128]
    grow = {k: m["read"][k] - m["before"][k] for k in m["before"]}
    record_property("rss_growth_MiB", {k: round(v / MiB, 1) for k, v in grow.items()})
    record_property("attach_s", m["attach_s"])
    print(f"\n{mode}: growth MiB " + ", ".join(f"{k} {v / MiB:+.1f}" for k, v in grow.items())
          + f"; attach {m['attach_s']:.3f} s (verified with {m['verified_with']})")
    assert grow["RssAnon"] < ANON_BOUND, grow
    if mode == "full":
        # Every page was mapped and read (populate, fingerprint): shared, not copied.
        assert grow["RssShmem"] >= 0.95 * BLOB, grow
        assert m["verified_with"] == "numpy"
    else:
        # Only the file's pages (and the footer/manifest) were touched.
        assert grow["RssShmem"] < 16 * MiB, grow
    assert grow["VmRSS"] < grow["RssShmem"] + ANON_BOUND
