"""The 95% interval of a paired difference (the inverted sign-flip test) covers the true difference
about 95% of the time, on nulls simulated from the committed runs' own author clusters.

Each simulation draws a data set whose true per-query mean difference is 0 and checks whether the
interval holds 0. With N simulations the share covered has binomial SE sqrt(0.95 * 0.05 / N)
(0.0069 at N = 1000); the tests accept 0.95 ± 3 SE (0.929 to 0.971), which a correct interval
fails in about 0.3% of runs. The seeds are fixed and the sums integers, so every CPU gets the same
counts.
"""

import json
import math

import numpy as np
import pytest

from harness.evaluation.sign_flip import cluster_sums, interval_assignments, inverted_interval, sign_flip_test
from harness.evaluation.significance import per_query_value
from harness.reports.significance import first_ranks_by_key, query_author_clusters
from tests.conftest import ROOT

pytestmark = pytest.mark.slow

SIMS = 1000
DRAWS = 999  # (1 + hits) / (1 + draws) is a valid p for any number of draws
TOLERANCE = 3 * math.sqrt(0.95 * 0.05 / SIMS)


def committed_cluster_sums(collection: str, a: str = "char-ngram", b: str = "bm25"):
    """(summed Success@8 difference, queries) per query author of two committed runs, all seeds."""

    def ranks(run):
        folder = ROOT / "leaderboards" / "runs" / collection / run
        return first_ranks_by_key([json.loads(p.read_text()) for p in sorted(folder.glob("seed-*.json"))])

    ra, rb = ranks(a), ranks(b)
    keys = sorted(set(ra) & set(rb))
    clusters = query_author_clusters(collection, {s for s, _ in keys}, ROOT / "splits")
    diff = [per_query_value(ra[k], "success@8") - per_query_value(rb[k], "success@8") for k in keys]
    return cluster_sums(diff, [clusters[k] for k in keys])


def covers_zero(sums, counts, seed) -> bool:
    got, drawn = sign_flip_test(sums, counts, draws=DRAWS, max_draws=DRAWS, exact_max=0, seed=seed)
    lo, hi = inverted_interval(sums, counts, interval_assignments(sums, counts, drawn, exact_max=0, seed=seed))
    assert (lo <= 0 <= hi) == (got.p >= 0.05)  # the interval and the test agree
    return lo <= 0 <= hi


def coverage(simulate) -> float:
    rng = np.random.default_rng(0)
    return sum(covers_zero(*simulate(rng), seed=i + 1) for i in range(SIMS)) / SIMS


@pytest.mark.parametrize("collection", ["pan18-en", "reddit-xsub"])
def test_coverage_on_recentred_committed_cluster_sums(collection):
    # the real clusters' sums, re-centred so their difference is 0, each flipped by a fair coin:
    # their skew and sizes kept, the null true
    sums, counts = committed_cluster_sums(collection)
    centred = sums - sums.sum() / counts.sum() * counts
    got = coverage(lambda rng: (centred * rng.choice((-1.0, 1.0), size=len(centred)), counts))
    assert abs(got - 0.95) <= TOLERANCE, f"{collection}: coverage {got:.3f}"


@pytest.mark.parametrize("collection", ["reddit-xsub", "blogs-xtopic"])
def test_coverage_on_skewed_synthetic_clusters_of_the_committed_sizes(collection):
    # per query +1 / -1 / 0; 80% of authors lean to A (+1 at 0.10, -1 at 0.05), 20% lean hard to B
    # (+1 at 0.05, -1 at 0.25): every query's expected difference is 0, the author sums skewed
    _, counts = committed_cluster_sums(collection)
    sizes = counts.astype(int)

    def simulate(rng):
        lean_b = rng.random(len(sizes)) < 0.2
        up_p = np.where(lean_b, 0.05, 0.10)
        down_p = np.where(lean_b, 0.25, 0.05)
        up = rng.binomial(sizes, up_p)
        down = rng.binomial(sizes - up, down_p / (1 - up_p))
        return (up - down).astype(float), counts

    got = coverage(simulate)
    assert abs(got - 0.95) <= TOLERANCE, f"{collection}: coverage {got:.3f}"
