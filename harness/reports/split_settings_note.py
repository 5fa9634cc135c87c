"""A collection page's line on how its splits were built, read from the manifests the runs were made on:
the settings (author fraction, pool, the cap on documents per (author, genre)), the queries per seed, the
largest author's share of them, and the baseline's seed-to-seed spread beside them."""

from __future__ import annotations

import math
from pathlib import Path

from harness.evaluation.manifests import manifest_path, read_manifest
from harness.evaluation.metrics import mean_sd
from harness.evaluation.split import BUILDER
from harness.evaluation.split_counts import largest_author_share
from harness.evaluation.split_settings import DEFAULT_POOL


def _per_seed(values: list, seeds: list[int]) -> str:
    return ", ".join(f"{v} ({s})" for v, s in zip(values, seeds))


def split_settings_note(
    collection: str, runs: dict, names: list[str], splits_dir: Path | None, baseline: str | None = None
) -> str:
    """The line, or "" when the manifests are not the harness's builder's (shipped splits) or not found.
    baseline: the run whose seeds and spread it shows (None: the first of `names`)."""
    if splits_dir is None or not names:
        return ""
    baseline = baseline or names[0]
    results = runs[(collection, baseline)]
    seeds = [r["seed"] for r in results]
    paths = [manifest_path(splits_dir, collection, s) for s in seeds]
    if not all(p.is_file() for p in paths):
        return ""
    splits = [read_manifest(p) for p in paths]
    builders = [s.builder for s in splits]
    if any(b.get("name") != BUILDER for b in builders):
        return ""
    settings = sorted(
        {f"author fraction {b.get('author_fraction')}, pool {b.get('pool', DEFAULT_POOL)}" for b in builders}
    )
    caps = sorted({(b.get("max_per_author_genre"), b.get("left_out_by_cap")) for b in builders}, key=str)
    cap = "; ".join(
        f"at most {c} documents per (author, genre) ({n} left out)"
        if c is not None
        else "no cap on the documents per (author, genre)"
        for c, n in caps
    )
    shares = [largest_author_share(s)[1] for s in splits]
    share = _per_seed([f"{100 * n / len(s.queries):.1f}%" for n, s in zip(shares, splits)], seeds)
    mean, sd = mean_sd([r["metrics"]["success@8"] for r in results])
    spread = f"{100 * mean:.1f}" + ("" if math.isnan(sd) else f" ± {100 * sd:.1f}")
    return (
        f"Splits (from the manifests): {'; '.join(settings)}; {cap}. Queries per seed: "
        f"{_per_seed([len(s.queries) for s in splits], seeds)}; the largest author's share of them: {share}. "
        f"{baseline}'s Success@8 over these seeds: {spread}."
    )
