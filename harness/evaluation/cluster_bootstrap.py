"""A studentized (bootstrap-t) cluster interval for one run's pooled mean over queries.

The pooled mean is a ratio, theta = sum_i Y_i / sum_i n_i over clusters i (query authors across the
seeds) with Y_i the cluster's summed value and n_i its query count. Its cluster-robust standard
error is sqrt(k / (k - 1) * sum_i (Y_i - theta n_i)^2) / sum_i n_i. Clusters are drawn with
replacement; each resample gives t* = (theta* - theta) / se*, and the interval is
[theta - q_{1-a/2}(t*) se, theta - q_{a/2}(t*) se], clipped to the values' range. Studentizing
corrects most of the skew that makes a percentile interval too narrow with few clusters or a mean
near 0 or 1. A paired difference uses the inverted sign-flip test instead (harness.evaluation.sign_flip).
"""

from __future__ import annotations

import math

import numpy as np


def _ratio_se(y: np.ndarray, n: np.ndarray, theta: np.ndarray | float) -> np.ndarray:
    """Cluster-robust SE of sum(y)/sum(n); y and n are (..., k)."""
    k = y.shape[-1]
    resid = y - np.asarray(theta)[..., None] * n
    return np.sqrt(k / (k - 1) * (resid**2).sum(axis=-1)) / n.sum(axis=-1)


def studentized_interval(
    sums: np.ndarray,
    counts: np.ndarray,
    *,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    bounds: tuple[float, float] = (0.0, 1.0),
) -> tuple[float, float]:
    """95% bootstrap-t interval of sum(sums) / sum(counts), resampling clusters."""
    y = np.asarray(sums, dtype=float)
    n = np.asarray(counts, dtype=float)
    k = len(y)
    theta = float(y.sum() / n.sum())
    if k < 2:
        return bounds
    se = float(_ratio_se(y, n, theta))
    if se == 0:
        return theta, theta
    rng = np.random.default_rng(seed)
    t = np.empty(resamples)
    for start in range(0, resamples, 500):
        m = min(500, resamples - start)
        idx = rng.integers(0, k, size=(m, k))
        ys, ns = y[idx], n[idx]
        th = ys.sum(axis=1) / ns.sum(axis=1)
        se_star = _ratio_se(ys, ns, th)
        with np.errstate(divide="ignore", invalid="ignore"):
            t[start : start + m] = np.where(
                se_star > 0, (th - theta) / se_star, np.where(th == theta, 0.0, np.sign(th - theta) * math.inf)
            )
    q_lo, q_hi = np.quantile(t, [(1 - level) / 2, (1 + level) / 2])
    lo = theta - q_hi * se
    hi = theta - q_lo * se
    return float(max(bounds[0], lo)), float(min(bounds[1], hi))
