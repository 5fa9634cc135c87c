"""One page per collection: every run with its paired-significance marks, the power estimate, and
how close the haystack is under the reference embedder.

Marks (Success@8, paired cluster randomization test, one cluster per query author across all
pooled seeds, p < 0.05): `*` differs from the best row (the highest pooled
Success@8), `†` differs from the baseline (the first run, in run order, of a system whose metadata
role is baseline); `ᴴ` after a mark: still below 0.05 after Holm's adjustment over
the page's tests (harness.reports.page_tests). The 95% intervals invert the same test, in points.
Beside pooled Success@8 (every query of every seed), the author-macro figure (each query author's
mean, then the mean over authors).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from harness.evaluation import metric_table
from harness.evaluation.metrics import pooled_metric
from harness.evaluation.significance import ALPHA, TEST_NAME
from harness.foundation.markdown_table import Markdown
from harness.reports.board import shown_name
from harness.reports.cells import mean_sd_cell
from harness.reports.page_tests import HOLM_MARK, marks, page_tests
from harness.reports.rule_views import rule_views_section
from harness.reports.significance import (
    HOW_P,
    compare_results,
    needed_authors,
    p_text,
    run_author_macro,
)
from harness.reports.split_settings_note import split_settings_note
from harness.reports.surface_topics import surface_topics_section
from harness.reports.system_catalog import Catalog, registered


def _cell(values):
    return mean_sd_cell(values)


def _diff(r, holm_p: float) -> Markdown:
    return Markdown(
        f"{100 * r.diff:+.1f} [{100 * r.ci95[0]:+.1f}, {100 * r.ci95[1]:+.1f}] {p_text(r, sep='')}, Holm {holm_p:.3f}"
    )


def haystack_closeness(name: str, res: list[dict], backbone: str) -> str:
    """1 - Success@1 of a reference embedder's run (its nearest candidate is haystack) and the median
    first-needle rank."""
    nearest_haystack = 1 - _weighted([r["success_curve"][0] for r in res], res)
    ranks = [math.inf if v is None else v for r in res for v in r["first_needle_rank"].values()]
    med = float(np.median(ranks))
    return (
        f"Haystack closeness under {backbone} (from the `{name}` run): for "
        f"{100 * nearest_haystack:.1f}% of "
        f"the queries the nearest candidate is a haystack document; the median rank of the first needle is "
        f"{'beyond 100' if math.isinf(med) else f'{med:.0f}'}."
    )


def _weighted(values, res):
    n = sum(r["n_queries"] for r in res)
    return sum(v * r["n_queries"] for v, r in zip(values, res)) / n


def collection_page(
    collection: str,
    runs: dict,
    names: list[str],
    splits_dir: Path | None,
    header: str,
    compare=None,
    all_view_dir: Path | None = None,
    catalog: Catalog | None = None,
) -> str:
    """compare(collection, run a, run b) -> paired results by metric (default: computed here; the leaderboard
    hands its Board.compare, so the pages and the HTML site share one computation). catalog: the systems'
    metadata (default: the registered systems'), which says which runs are baselines. `names` in run order."""
    from harness.foundation.markdown_table import markdown_table
    from harness.reports.run_identity import backbone_id

    catalog = catalog or registered()
    if compare is None:

        def compare(c, a, b):
            return compare_results(runs[(c, a)], runs[(c, b)], splits_dir)

    names = [n for n in names if (collection, n) in runs]
    pooled = {n: pooled_metric(runs[(collection, n)], "success@8") for n in names}
    best = max(names, key=lambda n: (pooled[n], n))
    baselines = catalog.baselines(runs, collection, names)
    base = baselines[0] if baselines else None
    against = base or "the baseline"
    tests = page_tests(names, best, base, lambda a, b: compare(collection, a, b)["success@8"])
    columns = metric_table.headline()
    rows = []
    for n in names:
        res = runs[(collection, n)]
        vs_best = vs_base = ""
        if n != best:
            vs_best = _diff(compare(collection, n, best)["success@8"], tests.holm_p(n, best))
        if base and n != base:
            vs_base = _diff(compare(collection, n, base)["success@8"], tests.holm_p(n, base))
        rows.append(
            [
                f"{shown_name(n, res)} {marks(n, best, base, tests)}".strip(),
                " ".join(str(r["seed"]) for r in res),
                *[_cell([r["metrics"][m.name] for r in res]) for m in columns],
                f"{100 * pooled[n]:.1f}",
                f"{100 * run_author_macro(res, splits_dir):.1f}",
                vs_best or "(best)",
                vs_base or ("(baseline)" if n == base else ""),
            ]
        )
    table = markdown_table(
        rows,
        headers=[
            "run",
            "seeds",
            *(m.short for m in columns),
            "S@8 pooled",
            "S@8 author-macro",
            f"S@8 vs best ({best})",
            f"S@8 vs {against}",
        ],
        disable_numparse=True,
    )
    notes = [note] if (note := split_settings_note(collection, runs, names, splits_dir, base)) else []
    if len(baselines) >= 2:  # the power to tell the first two baselines apart
        first, second = baselines[:2]
        need, sd, have = needed_authors(runs[(collection, second)], runs[(collection, first)], splits_dir)
        notes.append(
            f"Power: the per-author sd of the Success@8 difference {second} − {first} is {sd:.3f}; detecting a "
            f"5-point gap with that spread (alpha 0.05, power 0.8) needs about {need} independent query "
            f"authors; these runs have {have} (the seeds share their authors)."
        )
    embedders = catalog.with_capability("reference-embedder")
    if probe := next((n for n in names if runs[(collection, n)][0]["system"] in embedders), None):
        res = runs[(collection, probe)]
        notes.append(haystack_closeness(probe, res, backbone_id(res[0], catalog)))
    return (
        f"{header}# {collection}: runs and paired significance\n\n"
        "Mean ± sd over seeds, in percent; `S@8 pooled` is over all queries of all seeds, `S@8 author-macro` "
        "the mean over query authors of each author's mean over their queries in all seeds. Differences: "
        "Success@8 points, this row minus the other, with the 95% interval that inverts the test and the "
        f"p-value of the {TEST_NAME}: queries paired by seed and id, one cluster per query author across all "
        f"seeds; p is {HOW_P}. Holm: the p adjusted over this table's tests. Marks: "
        f"`*` differs from the best row, `†` from {against} (p < {ALPHA}); `{HOLM_MARK}` after a mark: still "
        f"below {ALPHA} after Holm's adjustment.\n\n{table}\n\n{tests.summary()}\n\n"
        + "".join(f"{n}\n\n" for n in notes)
        + rule_views_section(runs, names, collection, splits_dir, all_view_dir, catalog)
        + surface_topics_section(runs, names, collection, splits_dir)
    )
