"""The leaderboard as a static HTML site: `index.html` with one sortable table per collection and its
Success@k figures, and a page per run (model card, provenance, per-seed and per-genre tables).

Built from the same loaded `Board` as the Markdown pages (the same paired comparisons, the same
figures); every value from a result is escaped. The site is written as one set: its pages replace
an earlier site's (run pages of runs since removed go), and files the harness does not write there
(a .git, a CNAME) are kept.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
from html import escape
from pathlib import Path
from typing import Sequence

from harness.errors import HarnessError
from harness.evaluation import metric_table
from harness.evaluation.metrics import mean_sd, pooled_metric
from harness.reports.board import Board
from harness.reports.cells import mean_sd_cell
from harness.reports.html_shell import page
from harness.reports.page_tests import HOLM_MARK, marks, page_tests
from harness.reports.run_identity import RunIdentity

ALPHA = 0.05
# What the harness writes in a site folder: index.html, the marker and the run pages under runs/.
# Everything else there (a .git, a CNAME, the user's own files) is the user's and is kept.
RUN_PAGES = "runs"


def slug(name: str) -> str:
    """A file name for any run or collection name: its safe characters plus a hash, so two names never
    share a page and no name can reach outside the site."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip(".-")[:60] or "x"
    return f"{safe}-{hashlib.sha256(name.encode('utf-8')).hexdigest()[:8]}"


def run_page_path(collection: str, name: str) -> str:
    return f"{RUN_PAGES}/{slug(collection)}/{slug(name)}.html"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _mean_sd(values: list[float]) -> tuple[str, float]:
    return mean_sd_cell(values), mean_sd(values)[0]


def pooled_interval(board: Board, collection: str, name: str) -> tuple[float, float, str]:
    """95% studentized bootstrap interval of the pooled Success@8, resampling query-author clusters across
    the seeds (single queries when the manifests are not at hand); (low, high, unit)."""
    from harness.evaluation.cluster_bootstrap import studentized_interval
    from harness.evaluation.sign_flip import cluster_sums
    from harness.evaluation.significance import per_query_value
    from harness.reports.significance import first_ranks_by_key, query_author_clusters

    res = board.runs[(collection, name)]
    ranks = first_ranks_by_key(res)
    keys = sorted(ranks)
    values = [per_query_value(ranks[k], "success@8") for k in keys]
    clusters, unit = None, "queries"
    manifests = board.manifests_for(collection)
    if manifests is not None:
        try:
            found = query_author_clusters(collection, {s for s, _ in keys}, manifests)
        except HarnessError:  # no manifest for these seeds: resample single queries, and say so
            found = {}
        if all(k in found for k in keys):
            clusters, unit = [found[k] for k in keys], "author clusters"
    lo, hi = studentized_interval(*cluster_sums(values, clusters))
    return lo, hi, unit


def _cell(text: str, *, sort: float | str | None = None, cls: str = "") -> str:
    attrs = f' class="{cls}"' if cls else ""
    if sort is not None:
        key = (
            "" if isinstance(sort, float) and math.isnan(sort) else (f"{sort:.6g}" if isinstance(sort, float) else sort)
        )
        attrs += f' data-sort="{escape(str(key))}"'
    return f"<td{attrs}>{text}</td>"


def _head(label: str, *, numeric: bool = False, title: str = "") -> str:
    tip = f' title="{escape(title)}"' if title else ""
    cls = ' class="num"' if numeric else ""
    kind = ' data-type="num"' if numeric else ' data-type="text"'
    return f'<th scope="col"{cls}{kind}{tip}><button type="button">{escape(label)}</button></th>'


def _diff_cell(result, holm_p: float = math.nan) -> str:
    from harness.reports.significance import p_text

    if result is None:
        return _cell("", sort=float("nan"), cls="num")
    p = f"{escape(p_text(result))}, Holm {holm_p:.3f}"
    text = f"{100 * result.diff:+.1f} [{100 * result.ci95[0]:+.1f}, {100 * result.ci95[1]:+.1f}]<span>{p}</span>"
    return _cell(text, sort=float(result.diff), cls="num diff")


def author_macro_cell(board: Board, collection: str, name: str) -> str:
    """The run's author-macro Success@8 (blank when the manifests, hence the authors, are not at hand)."""
    from harness.reports.significance import run_author_macro

    manifests = board.manifests_for(collection)
    try:
        value = run_author_macro(board.runs[(collection, name)], manifests) if manifests is not None else math.nan
    except HarnessError:
        value = math.nan
    return _cell("" if math.isnan(value) else _pct(value), sort=value, cls="num")


def identities(board: Board) -> dict[tuple[str, str], RunIdentity]:
    """(collection, run) -> what the run is (harness.reports.run_identity): backbone, parameters, origin,
    training data and how its recipe differs from the paper's."""
    from harness.reports.run_identity import run_identity

    before, sources = board.before_decontamination, board.training_sources
    return {key: run_identity(key[1], res[0], before, sources, board.catalog) for key, res in board.runs.items()}


def baseline_name(board: Board) -> str:
    """The baseline the index's note names: the first baseline run in run order ("the baseline" when none)."""
    system = {n: res[0]["system"] for (_, n), res in board.runs.items()}
    return next((n for n in board.order if board.catalog.is_baseline(system[n])), "the baseline")


def collection_table(board: Board, collection: str, identity: dict[tuple[str, str], RunIdentity]) -> str:
    names = board.names(collection)
    pooled = {n: pooled_metric(board.runs[(collection, n)], "success@8") for n in names}
    best = max(names, key=lambda n: (pooled[n], n))
    base = board.baseline(collection)
    against = base or "the baseline"
    tests = page_tests(names, best, base, lambda a, b: board.compare(collection, a, b)["success@8"])
    heads = [_head("run"), _head("system"), _head("seeds", numeric=True, title="number of split seeds")]
    columns = metric_table.headline()
    heads += [_head(f"{m.label} (%)", numeric=True, title="mean ± sample sd over the seeds") for m in columns]
    heads += [
        _head(
            "Success@8 pooled (%) [95% CI]",
            numeric=True,
            title="over all queries of all seeds; studentized cluster-bootstrap interval",
        ),
        _head(
            "Success@8 author-macro (%)",
            numeric=True,
            title="each query author's mean over their queries in all seeds, then the mean over authors",
        ),
        _head(
            "marks",
            title=f"* differs from the best row, † from {against} (p < {ALPHA}); "
            f"{HOLM_MARK} after a mark: below {ALPHA} after Holm's adjustment over the table",
        ),
        _head("vs best", numeric=True, title=f"Success@8 points, this row minus the best row ({best})"),
        _head(f"vs {against}", numeric=True, title=f"Success@8 points, this row minus {against}"),
        _head("differs from the paper", title="the recipe items where this run differs from the paper's"),
    ]
    rows = []
    for n in names:
        res = board.runs[(collection, n)]
        vs_best = board.compare(collection, n, best)["success@8"] if n != best else None
        vs_base = board.compare(collection, n, base)["success@8"] if base and n != base else None
        row_marks = marks(n, best, base, tests)
        lo, hi, unit = pooled_interval(board, collection, n)
        cells = [
            _cell(f'<a href="{escape(run_page_path(collection, n))}">{escape(n)}</a>', sort=n, cls="run"),
            _cell(escape(res[0]["system"])),
            _cell(str(len(res)), sort=float(len(res)), cls="num"),
        ]
        for m in columns:
            text, mean = _mean_sd([r["metrics"][m.name] for r in res])
            cells.append(_cell(text, sort=mean, cls="num"))
        cells.append(
            _cell(
                f'<span title="95% studentized bootstrap over {escape(unit)}">{_pct(pooled[n])} '
                f"[{_pct(lo)}, {_pct(hi)}]</span>",
                sort=pooled[n],
                cls="num",
            )
        )
        cells.append(author_macro_cell(board, collection, n))
        cells.append(_cell(f'<span class="mark">{escape(row_marks)}</span>' if row_marks else "", sort=row_marks))
        cells.append(_diff_cell(vs_best, tests.holm_p(n, best)) if n != best else _cell("(best)", sort=0.0, cls="num"))
        cells.append(
            _diff_cell(vs_base, tests.holm_p(n, base))
            if base and n != base
            else _cell("(baseline)" if n == base else "", sort=float("nan"), cls="num")
        )
        cells.append(_cell(escape(identity[(collection, n)].differs), cls="differs"))
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return (
        f'<div class="wrap"><table class="sortable" id="table-{escape(slug(collection))}">\n'
        f'<caption class="muted">{escape(collection)}: {len(names)} runs; best by pooled Success@8: '
        f"{escape(best)}. {escape(tests.summary())} Click a header to sort.</caption>\n"
        f"<thead><tr>{''.join(heads)}</tr></thead>\n<tbody>\n" + "\n".join(rows) + "\n</tbody></table></div>"
    )


def _figure(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<figure><img alt="{escape(alt)}" src="data:image/png;base64,{data}"><figcaption>{escape(alt)}</figcaption></figure>'


def index_page(board: Board, figures: dict[str, bytes], identity: dict[tuple[str, str], RunIdentity]) -> str:
    intro = (
        f'<p class="note">Generated by <code>aa-harness leaderboard</code> from the run files '
        "(every result verified against its rankings and split manifest). Success@8, Success@100 and MRR@20 "
        "in percent, mean ± sample sd over the split seeds. Pooled Success@8 is over all queries of all seeds, "
        "with a 95% studentized cluster-bootstrap interval (one cluster per query author across the seeds). Differences are "
        "Success@8 points, this row minus the other, with the 95% interval that inverts the paired cluster "
        "randomization test and that test's p (exact, or sampled with ± its Monte Carlo SE), and the p adjusted by "
        "Holm over the collection's table. Author-macro Success@8: each query author's mean over their queries "
        f'in all seeds, then the mean over authors. Marks (p &lt; {ALPHA}): <span class="mark">*</span> differs '
        f'from the best row, <span class="mark">†</span> from {escape(baseline_name(board))}; {HOLM_MARK} after a mark: still below '
        f'{ALPHA} after Holm\'s adjustment. "Differs from the paper" lists the recipe items where a run '
        "differs from the paper's recipe for its system.</p>"
    )
    parts = ["<h1>Leaderboard</h1>", intro]
    if not board.runs:
        parts.append("<p>No runs yet.</p>")
    parts.append(
        "<nav>" + "".join(f'<a href="#c-{escape(slug(c))}">{escape(c)}</a>' for c in board.collections) + "</nav>"
    )
    for c in sorted(board.collections, key=lambda c: (c in board.synthetic, c)):  # the benchmarks first
        label = " (synthetic, not a benchmark)" if c in board.synthetic else ""
        parts.append(f'<h2 id="c-{escape(slug(c))}">{escape(c)}{label}</h2>')
        if label:
            parts.append(
                '<p class="note">Generated by code so that the harness runs with no download; a score here '
                "checks the machinery, and says nothing about authorship attribution on real text.</p>"
            )
        parts.append(collection_table(board, c, identity))
        shown = [f for f in (f"success-at-k-{c}.png", f"success-at-k-{c}-more.png") if f in figures]
        for f in shown:
            more = " (the other runs, baselines repeated)" if f.endswith("-more.png") else ""
            parts.append(_figure(figures[f], f"Success@k on {c}{more}"))
        if not shown:
            parts.append('<p class="muted">(plots not drawn: --no-plots)</p>')
    if board.stale_runs:
        rows = []
        for (c, n), res in sorted(board.stale_runs.items()):
            entry = board.stale_entries[(c, n)]
            text, mean = _mean_sd([r["metrics"]["success@8"] for r in res])
            rows.append(
                f"<tr>{_cell(escape(c))}{_cell(escape(n), cls='run')}{_cell(text, sort=mean, cls='num')}"
                f"{_cell(escape(entry.reason))}</tr>"
            )
        parts.append(
            '<h2>Stale runs</h2><p class="note">Made on data since corrected, or with a defect since fixed: verified against the '
            "manifests they were made on, and kept apart from the tables above.</p>"
            '<div class="wrap"><table class="sortable"><thead><tr>'
            + _head("collection")
            + _head("run")
            + _head("Success@8 (%)", numeric=True)
            + _head("why stale")
            + "</tr></thead><tbody>\n"
            + "\n".join(rows)
            + "\n</tbody></table></div>"
        )
    if "training-loss.png" in figures:
        parts.append(
            "<h2>Training loss</h2>" + _figure(figures["training-loss.png"], "Contrastive training loss per step")
        )
    return page("aa-harness leaderboard", "\n".join(parts))


def _dl(items: Sequence[tuple[str, object]]) -> str:  # Sequence: a list of (str, str) pairs fits
    return '<dl class="card">' + "".join(f"<dt>{escape(k)}</dt><dd>{escape(str(v))}</dd>" for k, v in items) + "</dl>"


def _table(headers: list[str], rows: list[list[str]], numeric_from: int = 1) -> str:
    head = "".join(_head(h, numeric=i >= numeric_from) for i, h in enumerate(headers))
    body = "\n".join(
        "<tr>" + "".join(_cell(escape(v), cls="num" if i >= numeric_from else "") for i, v in enumerate(r)) + "</tr>"
        for r in rows
    )
    return f'<div class="wrap"><table class="sortable"><thead><tr>{head}</tr></thead><tbody>\n{body}\n</tbody></table></div>'


def run_page(board: Board, collection: str, name: str, identity: RunIdentity) -> str:
    res = board.runs[(collection, name)]
    columns = metric_table.headline()
    first = res[0]
    cfg = first["config"]
    card = [
        ("run", name),
        ("collection", collection),
        ("system", first["system"]),
        ("plugin", (first["provenance"].get("plugin") or {}).get("name", "")),
        ("backbone", identity.backbone),
        ("parameters", identity.parameters),
        ("trained", identity.origin),
        ("training data", identity.training_data),
        ("model", cfg.get("model") or "(pretrained or none)"),
        ("first stage", cfg.get("first_stage") or "(retriever)"),
        ("differs from the paper", identity.differs),
    ]
    config = [(k, v if isinstance(v, str) else json.dumps(v)) for k, v in sorted(cfg.items())]
    seeds = [
        [
            str(r["seed"]),
            str(r["n_queries"]),
            str(r["n_candidates"]),
            *[_pct(r["metrics"][m.name]) for m in columns],
            f"[{_pct(r['ci95']['success@8'][0])}, {_pct(r['ci95']['success@8'][1])}]",
        ]
        for r in res
    ]
    provenance = [
        [
            str(r["seed"]),
            r["provenance"]["device"],
            f"{r['provenance'].get('wall_seconds') or 0:.1f}",
            r["provenance"]["git_commit"][:12],
            r["provenance"].get("finished_at", ""),
            r["split_sha256"][:12],
        ]
        for r in res
    ]
    genres = sorted({g for r in res for g in r["per_genre"]})
    per_genre = []
    for g in genres:
        got = [r["per_genre"][g] for r in res if g in r["per_genre"]]
        n = sum(x["n_queries"] for x in got)
        per_genre.append(
            [g, str(n), *[_pct(sum(x[m.name] * x["n_queries"] for x in got) / n) if n else "" for m in columns]]
        )
    packages = first["provenance"].get("packages") or {}
    body = [
        f'<nav><a href="../../index.html#c-{escape(slug(collection))}">← leaderboard</a></nav>',
        f"<h1>{escape(name)}</h1>",
        f'<p class="note">{escape(collection)}, {len(res)} seed(s)</p>',
        "<h2>Model card</h2>",
        _dl(card),
        "<h3>Configuration</h3>",
        _dl(config),
        "<h2>Per seed</h2>",
        _table(
            ["seed", "queries", "candidates", *[f"{m.label} (%)" for m in columns], "Success@8 95% CI (%)"],
            seeds,
        ),
        "<h2>Per query genre</h2>",
        '<p class="note">Pooled over the seeds\' queries (weighted by query count), in percent.</p>',
        _table(["query genre", "queries (all seeds)", *[f"{m.label} (%)" for m in columns]], per_genre),
        "<h2>Provenance</h2>",
        _table(["seed", "device", "rank seconds", "commit", "finished", "split sha256"], provenance, numeric_from=9),
        _dl([(k, v) for k, v in sorted(packages.items())]),
    ]
    return page(f"{name} on {collection}", "\n".join(body))


def build_site(board: Board, figures: dict[str, bytes]) -> dict[str, str]:
    """Relative path -> HTML, for the whole site."""
    identity = identities(board)
    files = {"index.html": index_page(board, figures, identity)}
    for c, n in board.runs:
        files[run_page_path(c, n)] = run_page(board, c, n, identity[(c, n)])
    return files


MARKER = ".aa-harness-site"


def check_site_folder(out_dir: Path) -> None:
    """Raise unless write_site may write into out_dir: absent, an earlier site (it holds the marker),
    or holding only dot-entries (a fresh `git init`, say), so a mistyped folder's index.html is never
    overwritten."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise HarnessError(f"{out_dir}: not a folder")
    if (
        out_dir.is_dir()
        and not (out_dir / MARKER).is_file()
        and any(not p.name.startswith(".") for p in out_dir.iterdir())
    ):
        raise HarnessError(
            f"{out_dir}: the folder holds files that are not a site written here; refusing to write "
            "the site into it (name a new or empty folder)"
        )


def site_set(files: dict[str, str]) -> tuple[dict[str, str], tuple[str, ...]]:
    """What a site write puts in its folder: the pages and the marker; and the subfolder it replaces
    whole (runs/, so pages of runs since removed go with the commit)."""
    return {**files, MARKER: "written by aa-harness leaderboard --html\n"}, (RUN_PAGES,)


def write_site(out_dir: Path, files: dict[str, str]) -> Path:
    """Write the site alone into out_dir as one set (a kill leaves the old site or the new one): index.html,
    the marker and runs/, whose pages of runs since removed are deleted with the commit. Files the
    harness does not write (a .git, a CNAME) are kept. A folder that holds something else is refused.
    With the Markdown pages, leaderboard.write_pages writes both as one set."""
    from harness.foundation.output_set import write_output_set

    check_site_folder(out_dir)
    content, replace = site_set(files)
    write_output_set(Path(out_dir), content, replace_folders=replace)
    return Path(out_dir)
