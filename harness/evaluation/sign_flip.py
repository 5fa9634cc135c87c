"""The paired cluster sign-flip test, its Monte Carlo precision, and the interval that inverts it.

Each cluster i has a summed difference S_i over its n_i queries. Under the null hypothesis that
the two systems are exchangeable within a cluster, each S_i flips sign with probability 1/2; the
two-sided p is the share of sign assignments e whose |sum_i e_i S_i| reaches the observed |sum_i S_i|.

- **Exact** when at most `exact_max` clusters have a non-zero sum: all 2^k assignments are
  enumerated (a zero sum's sign changes nothing). No Monte Carlo error.
- **Sampled** otherwise: p = (1 + hits) / (1 + draws), which is a valid p for any number of
  draws. Its Monte Carlo standard error sqrt(p(1-p)/draws) is returned with it. Draws start at
  `draws` and double while p is within `near` of `alpha` and the SE is above `target_se`, up to
  `max_draws`, so a verdict at alpha does not turn on sampling noise.

**The interval** is the set of shifts d for which the same test of (difference - d) is not
rejected at `alpha` (inverting the test). Shifting every query's difference by d turns an
assignment's sum into a - d b, with a = sum_i e_i S_i and b = sum_i e_i n_i, and the observed sum into
S - d N. The assignment reaches the observed statistic where (a - d b)^2 >= (S - d N)^2, a product of
two linear factors in d: on the closed interval between (S - a) / (N - b) and (S + a) / (N + b).
Every such interval holds the estimate S / N, so the set of accepted d is itself an interval, and
its ends are order statistics of those ends: exact for the given assignments, no root finding.
The interval and the p agree by construction: 0 lies in the interval exactly when p >= alpha.

Pure numpy: cluster sums in, numbers out.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

EXACT_MAX = 20
DRAWS = 10_000
MAX_DRAWS = 320_000
NEAR = 0.01  # p this close to alpha gets more draws ...
TARGET_SE = 0.001  # ... until its Monte Carlo SE is at most this
_CHUNK = 4096


def cluster_sums(diff: Sequence[float], clusters: Sequence[Hashable] | None) -> tuple[np.ndarray, np.ndarray]:
    """(summed difference, number of queries) per cluster, clusters in order of first appearance;
    every query its own cluster when `clusters` is None."""
    d = np.asarray(diff, dtype=float)
    if clusters is None:
        return d, np.ones_like(d)
    index: dict[Hashable, int] = {}
    for c in clusters:
        index.setdefault(c, len(index))
    ids = np.array([index[c] for c in clusters], dtype=np.int64)
    return (np.bincount(ids, weights=d, minlength=len(index)), np.bincount(ids, minlength=len(index)).astype(float))


@dataclass(frozen=True)
class SignFlipP:
    p: float
    se: float  # Monte Carlo standard error of p; 0 when exact
    exact: bool
    draws: int  # random assignments drawn; 0 when exact


@dataclass(frozen=True)
class Assignments:
    """Per sign assignment: a = sum_i e_i S_i and b = sum_i e_i n_i; `exact` when they are all 2^k."""

    a: np.ndarray
    b: np.ndarray
    exact: bool


def enumerate_all(sums: np.ndarray, counts: np.ndarray) -> Assignments:
    """Every one of the 2^k sign assignments (k = len(sums)), built by doubling: 2^k numbers, not a
    2^k x k matrix."""
    a = np.zeros(1)
    b = np.zeros(1)
    for s, n in zip(sums, counts):
        a = np.concatenate((a + s, a - s))
        b = np.concatenate((b + n, b - n))
    return Assignments(a, b, True)


def _draw(rng: np.random.Generator, sums: np.ndarray, counts: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    a = np.empty(m)
    b = np.empty(m)
    both = np.stack((sums, counts), axis=1)
    for start in range(0, m, _CHUNK):
        size = min(_CHUNK, m - start)
        signs = (rng.integers(0, 2, size=(size, len(sums)), dtype=np.int8) * 2 - 1).astype(float)
        ab = signs @ both
        a[start : start + size], b[start : start + size] = ab[:, 0], ab[:, 1]
    return a, b


def _reaches(a: np.ndarray, observed: float) -> np.ndarray:
    """Which assignments reach the observed statistic: ties within rounding count, so that a sum
    that equals the observed one in exact arithmetic is never lost to the order of float additions."""
    return np.abs(a) >= observed - 1e-9 * max(1.0, observed)


def _hits(a: np.ndarray, observed: float) -> int:
    return int(_reaches(a, observed).sum())


def sign_flip_test(
    sums: np.ndarray,
    counts: np.ndarray,
    *,
    alpha: float = 0.05,
    draws: int = DRAWS,
    max_draws: int = MAX_DRAWS,
    near: float = NEAR,
    target_se: float = TARGET_SE,
    exact_max: int = EXACT_MAX,
    seed: int = 0,
) -> tuple[SignFlipP, Assignments | None]:
    """The two-sided p of sum(S) = 0, and the random assignments it drew (None when exact)."""
    sums = np.asarray(sums, dtype=float)
    counts = np.asarray(counts, dtype=float)
    observed = abs(float(sums.sum()))
    nz = sums != 0
    if int(nz.sum()) <= exact_max:
        a = enumerate_all(sums[nz], counts[nz]).a
        return SignFlipP(_hits(a, observed) / len(a), 0.0, True, 0), None
    rng = np.random.default_rng(seed)
    a, b = _draw(rng, sums, counts, draws)
    hits = _hits(a, observed)
    while True:
        m = len(a)
        p = (1 + hits) / (1 + m)
        se = math.sqrt(p * (1 - p) / m)
        if abs(p - alpha) >= near or se <= target_se or m >= max_draws:
            return SignFlipP(p, se, False, m), Assignments(a, b, False)
        more_a, more_b = _draw(rng, sums, counts, min(m, max_draws - m))
        hits += _hits(more_a, observed)
        a, b = np.concatenate((a, more_a)), np.concatenate((b, more_b))


def _accepted_ends(flips: Assignments, total: float, n: float) -> tuple[np.ndarray, np.ndarray]:
    """Each assignment's interval of shifts d at which it reaches the observed statistic."""
    a, b = flips.a, flips.b
    whole = (b >= n) | (b <= -n)  # all signs alike: reaches it at every d
    with np.errstate(divide="ignore", invalid="ignore"):
        d1 = np.where(whole, 0.0, (total - a) / (n - b))
        d2 = np.where(whole, 0.0, (total + a) / (n + b))
    lo = np.where(whole, -np.inf, np.minimum(d1, d2))
    hi = np.where(whole, np.inf, np.maximum(d1, d2))
    # an assignment the test counts as reaching the statistic at d = 0 (a tie within rounding) reaches
    # it there for the interval too, so 0 is inside exactly when p >= alpha on any machine
    tie = _reaches(a, abs(total))
    return np.where(tie, np.minimum(lo, 0.0), lo), np.where(tie, np.maximum(hi, 0.0), hi)


def inverted_interval(
    sums: np.ndarray, counts: np.ndarray, flips: Assignments, *, alpha: float = 0.05
) -> tuple[float, float]:
    """The shifts d of the per-query mean difference that the sign-flip test of (difference - d)
    does not reject at `alpha`, given the assignments (all of them, or random ones)."""
    sums = np.asarray(sums, dtype=float)
    counts = np.asarray(counts, dtype=float)
    total, n = float(sums.sum()), float(counts.sum())
    lo, hi = _accepted_ends(flips, total, n)
    m = len(flips.a)
    level = Fraction(str(alpha))
    # accepted where p(d) >= alpha: count >= alpha * 2^k (exact), (1 + count) >= alpha * (1 + m) (sampled)
    need = math.ceil(level * m) if flips.exact else math.ceil(level * (1 + m)) - 1
    if need <= 0 or need > m:
        return -math.inf, math.inf
    # the need-th largest upper end and the need-th smallest lower end
    upper = float(np.partition(hi, m - need)[m - need])
    lower = float(np.partition(lo, need - 1)[need - 1])
    return lower, upper


def interval_assignments(
    sums: np.ndarray,
    counts: np.ndarray,
    drawn: Assignments | None,
    *,
    draws: int = DRAWS,
    exact_max: int = EXACT_MAX,
    seed: int = 0,
) -> Assignments:
    """The assignments the interval is read from: all of them when there are at most `exact_max`
    clusters, else the test's own draws (or `draws` new ones when the test was exact)."""
    sums = np.asarray(sums, dtype=float)
    counts = np.asarray(counts, dtype=float)
    if len(sums) <= exact_max:
        return enumerate_all(sums, counts)
    if drawn is not None:
        return drawn
    a, b = _draw(np.random.default_rng(seed), sums, counts, draws)
    return Assignments(a, b, False)
