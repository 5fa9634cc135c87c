"""Both views of a collection with a dissimilarity rule: the rule's view (`<c>`) and all cross-genre
queries (`<c>-all`: the same data, seeds, author fraction and pool, no rule, less bots and near-copies;
its manifests record each query's largest query-needle cosine).

The rule keeps a query only when its nearest needle is lexically far (word TF-IDF cosine below the
threshold). Its threshold was chosen as the largest at which BM25 falls to about 2% Success@8 on the
test pools, so it is calibrated on BM25 and adversarial to lexical systems: the section this module
writes shows what the rule keeps and removes, every run on both views, Success@8 by needle-cosine
third, the -all runs on the queries the rule removes, and BM25 at other thresholds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.errors import DataError
from harness.evaluation.manifests import manifest_path, read_manifest
from harness.evaluation.split import Split
from harness.reports.significance import pooled_success_at_8
from harness.reports.system_catalog import Catalog, registered

ALL_VIEW = "-all"
CALIBRATION = "calibrated on BM25 (adversarial to lexical systems)"
THRESHOLDS_SHOWN = (0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3)


@dataclass(frozen=True)
class Views:
    collection: str
    threshold: float
    seeds: tuple[int, ...]
    cosine: dict[tuple[int, str], float]  # (seed, query) of the -all view -> largest needle cosine
    kept: frozenset  # (seed, query) the rule keeps
    authors: dict[tuple[int, str], tuple[str, ...]]  # (seed, query) of the -all view -> its authors


def _manifest(folder: Path | None, collection: str, seed: int) -> Split:
    if folder is None:
        raise DataError(f"{collection}: no manifests found for seed {seed}")
    return read_manifest(manifest_path(folder, collection, seed))


def load_views(collection: str, seeds, rule_dir: Path | None, all_dir: Path | None) -> Views:
    """The two views' manifests, checked: every query the rule keeps is a query of the -all view with a needle
    cosine below the threshold, with the same needles and pool (less the -all view's bots), and every -all query below it is kept."""
    cosine, kept, authors = {}, set(), {}
    threshold = math.nan
    for seed in sorted(seeds):
        rule, every = (
            _manifest(rule_dir, collection, seed),
            _manifest(all_dir, collection + ALL_VIEW, seed),
        )
        info = rule.builder.get("dissimilarity") or {}
        recorded = (every.builder.get("needle_cosine") or {}).get("by_query")
        if "threshold" not in info or recorded is None:
            raise DataError(
                f"{collection} seed {seed}: the rule's manifest records no threshold, or the -all "
                "manifest no needle cosines"
            )
        threshold = float(info["threshold"])
        below = {q for q, v in recorded.items() if v < threshold}
        # the -all view's pool cleaning takes bots out of both sides (harness.evaluation.pool_cleaning)
        cleaning = every.builder.get("pool_cleaning") or {}
        bots = set(cleaning.get("bot_authors", ()))
        ruled = {q.documentID for q in rule.queries if not set(q.authorIDs) & bots}
        same_pool = set(every.candidates) <= set(rule.candidates) and (
            len(rule.candidates) - len(every.candidates) == cleaning.get("bot_candidates_removed", 0)
        )
        if ruled != below or not same_pool or any(tuple(rule.needles[q]) != tuple(every.needles[q]) for q in ruled):
            raise DataError(
                f"{collection} seed {seed}: the rule's manifest is not the -all manifest's queries below "
                f"cosine {threshold} on the same pool"
            )
        for q in every.queries:
            key = (seed, q.documentID)
            cosine[key] = float(recorded[q.documentID])
            authors[key] = tuple(q.authorIDs)
            if q.documentID in ruled:
                kept.add(key)
    return Views(collection, threshold, tuple(sorted(seeds)), cosine, frozenset(kept), authors)


def _pct(x: float) -> str:
    return "—" if math.isnan(x) else f"{100 * x:.1f}"


def thirds(values: Mapping[tuple[int, str], float]) -> list[tuple[str, list]]:
    """The keys cut into thirds of their needle cosine (pooled over seeds), labelled by cosine range."""
    ordered = sorted(values, key=lambda k: (values[k], k))
    n = len(ordered)
    cuts = [ordered[: n // 3], ordered[n // 3 : 2 * n // 3], ordered[2 * n // 3 :]]
    return [(f"{values[part[0]]:.3f}–{values[part[-1]]:.3f}" if part else "—", part) for part in cuts]


def keeps_and_removes(v: Views) -> str:
    from harness.foundation.markdown_table import markdown_table

    rows = []
    for seed in v.seeds:
        keys = [k for k in v.cosine if k[0] == seed]
        kept = [k for k in keys if k in v.kept]
        a_all = {a for k in keys for a in v.authors[k]}
        a_kept = {a for k in kept for a in v.authors[k]}
        rows.append(
            [
                seed,
                len(keys),
                len(kept),
                len(keys) - len(kept),
                len(a_all),
                len(a_kept),
                len(a_all - a_kept),
            ]
        )
    all_authors = {a for k in v.cosine for a in v.authors[k]}
    kept_authors = {a for k in v.kept for a in v.authors[k]}
    table = markdown_table(
        rows,
        headers=[
            "seed",
            "queries (all)",
            "kept",
            "removed",
            "query authors (all)",
            "kept",
            "dropped entirely",
        ],
        disable_numparse=True,
    )
    return (
        f"{table}\n\nOver the {len(v.seeds)} seeds: {len(v.kept)} of {len(v.cosine)} queries kept; "
        f"{len(all_authors - kept_authors)} of {len(all_authors)} query authors have no query kept in any seed.\n"
    )


def both_views_table(runs: dict, names: list[str], v: Views) -> str:
    from harness.foundation.markdown_table import markdown_table

    c, c_all = v.collection, v.collection + ALL_VIEW
    removed = [k for k in v.cosine if k not in v.kept]
    rows = []
    for n in names:
        rule, every = runs.get((c, n)), runs.get((c_all, n))
        if rule is None and every is None:
            continue
        rule_s8 = _pct(pooled_success_at_8(rule, v.kept)[0]) if rule else "not run"
        all_s8 = _pct(pooled_success_at_8(every, v.cosine)[0]) if every else "not run"
        rem_s8 = _pct(pooled_success_at_8(every, removed)[0]) if every else "not run"
        rows.append([n, rule_s8, all_s8, rem_s8])
    return markdown_table(
        rows,
        headers=[
            "run",
            "rule's view",
            "all cross-genre queries",
            "queries the rule removes",
        ],
        disable_numparse=True,
    )


def strata_table(runs: dict, names: list[str], v: Views, *, view: str) -> str:
    """Success@8 by needle-cosine third: of all queries for the -all runs (view "all"), of the kept queries for
    the rule's runs (view "rule")."""
    from harness.foundation.markdown_table import markdown_table

    if view == "all":
        collection, pool = v.collection + ALL_VIEW, {k: v.cosine[k] for k in v.cosine}
    else:
        collection, pool = v.collection, {k: v.cosine[k] for k in v.kept}
    parts = thirds(pool)
    rows = []
    for n in names:
        res = runs.get((collection, n))
        if res:
            rows.append([n, *(_pct(pooled_success_at_8(res, part)[0]) for _, part in parts)])
    heads = [f"{label} cosine ({len(part)} queries)" for label, part in parts]
    return markdown_table(rows, headers=["run", *heads], disable_numparse=True)


def threshold_table(runs: dict, v: Views, systems: Sequence[str]) -> str:
    """Success@8 of the -all runs named `systems` (the baselines' runs) on the queries below each
    threshold: the rule applied afterwards."""
    from harness.foundation.markdown_table import markdown_table

    shown = sorted(set(THRESHOLDS_SHOWN) | {v.threshold})
    rows = []
    for t in shown:
        keys = [k for k, x in v.cosine.items() if x < t]
        row = [f"{t:g}" + (" (the rule)" if t == v.threshold else ""), len(keys)]
        row += [
            _pct(pooled_success_at_8(runs[(v.collection + ALL_VIEW, s)], keys)[0])
            if (v.collection + ALL_VIEW, s) in runs
            else "not run"
            for s in systems
        ]
        rows.append(row)
    return markdown_table(
        rows,
        headers=["threshold", "queries kept (4 seeds)", *systems],
        disable_numparse=True,
    )


def rule_views_section(
    runs: dict,
    names: list[str],
    collection: str,
    rule_dir: Path | None,
    all_dir: Path | None,
    catalog: Catalog | None = None,
) -> str:
    """The collection page's section on the two views ("" when the -all view has no runs); the threshold
    table shows the baselines' runs (catalog: the systems' metadata, default the registered systems')."""
    all_names = [n for n in names if (collection + ALL_VIEW, n) in runs]
    if not all_names:
        return ""
    seeds = sorted({r["seed"] for n in all_names for r in runs[(collection + ALL_VIEW, n)]})
    v = load_views(collection, seeds, rule_dir, all_dir)
    return (
        f"## Both views: the dissimilarity rule and all cross-genre queries\n\n"
        f"This collection keeps a query only when its nearest needle is lexically far: word TF-IDF cosine below "
        f"**{v.threshold:g}**. The threshold is **{CALIBRATION}**: it was chosen as the largest at which BM25 fell "
        "to about 2% Success@8 on these pools, so BM25 near 0 here is a design target rather than a finding, and "
        "the rule also removes the queries that are easiest for every system that sees shared words. It is kept "
        "because the trained rows were run on these splits; "
        f"`{collection}{ALL_VIEW}` is the same data, seeds, author fraction and pool with no rule, and its "
        "manifests record every query's largest needle cosine, so what the rule removes is measured below.\n\n"
        f"### What the rule keeps and removes\n\n{keeps_and_removes(v)}\n"
        '### Every run on both views\n\nSuccess@8 in percent, pooled over the seeds\' queries; "not run": no run '
        f"on that view (the GPU rows were run on the rule's view only).\n\n{both_views_table(runs, names, v)}\n\n"
        f"### Success@8 by needle-cosine third\n\nAll cross-genre queries (`{collection}{ALL_VIEW}`), cut into "
        f"thirds of their largest needle cosine:\n\n{strata_table(runs, names, v, view='all')}\n\n"
        "Within the queries the rule keeps, cut into thirds the same way:\n\n"
        f"{strata_table(runs, names, v, view='rule')}\n\n"
        "### How the threshold was chosen\n\nThe -all runs scored on the queries below each threshold (the rule "
        "applied afterwards; Success@8 in percent). The rule's threshold is the largest at which BM25 stays near "
        f"2%.\n\n{threshold_table(runs, v, (catalog or registered()).baselines(runs, collection, names))}\n\n"
    )
