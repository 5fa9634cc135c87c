"""The leaderboard pages: a registry of pages, each a function of one loaded `Board` returning its
Markdown, plus the Success@k and training-loss figures (PNG). Plugins add pages of their own beside
these (the `register_pages` hook, `Board.pages`).

Never edit the output by hand; `aa-harness leaderboard` rewrites it, and a test fails when
the committed tables differ from what the committed runs give.
"""

from __future__ import annotations

import logging
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

import numpy as np

from harness.errors import HarnessError
from harness.evaluation import metric_table
from harness.reports.board import (
    HEADER,
    Board,
    load_board,
    load_runs,
    record_board,
    run_order,
    shown_name,
)
from harness.reports.cells import mean_sd_cell
from harness.reports.fixes import footnotes, label
from harness.reports.record import Registries

_log = logging.getLogger(__name__)

__all__ = [
    "HEADER",
    "PAGES",
    "Board",
    "board_pages",
    "draw_figures",
    "leaderboard_files",
    "load_board",
    "load_runs",
    "plugin_page_names",
    "record_board",
    "render_pages",
    "run_order",
    "summary",
    "write_leaderboards",
    "write_pages",
]


def _short_commit(commit: str) -> str:
    return commit[:12] + ("-dirty" if commit.endswith("-dirty") else "")


def _cell(values: list[float], n_all: int) -> str:
    return mean_sd_cell(values, n_all)


def main_table(runs, marks: dict | None = None) -> str:
    """marks: run name -> the fixes (harness.reports.fixes) its code predates, shown after the name."""
    from harness.foundation.markdown_table import markdown_table

    collections = sorted({c for c, _ in runs})
    names = run_order(runs)
    n_seeds = {c: max(len(v) for (cc, _), v in runs.items() if cc == c) for c in collections}
    columns = metric_table.headline()
    headers = ["system"] + [f"{c} {m.short}" for c in collections for m in columns]
    rows = []
    for name in names:
        shown = shown_name(name, next(v for (_, n), v in runs.items() if n == name))
        row = [label(shown, (marks or {}).get(name, []))]
        for c in collections:
            res = runs.get((c, name))
            row += [_cell([r["metrics"][m.name] for r in res], n_seeds[c]) if res else "" for m in columns]
        rows.append(row)
    return markdown_table(rows, headers=headers, disable_numparse=True)


def plugin_version(result: dict) -> str:
    """The distribution and version of the plugin that made a result ("" when not recorded)."""
    plugin = result["provenance"].get("plugin") or {}
    return " ".join(x for x in (plugin.get("distribution"), plugin.get("version")) if x)


def provenance_table(runs) -> str:
    from harness.foundation.markdown_table import markdown_table

    rows = []
    order = {n: i for i, n in enumerate(run_order(runs))}
    for (c, name), res in sorted(runs.items(), key=lambda kv: (kv[0][0], order[kv[0][1]])):
        devices = sorted({r["provenance"]["device"] for r in res})
        wall = sum(r["provenance"].get("wall_seconds") or 0 for r in res)
        commits = sorted({_short_commit(r["provenance"]["git_commit"]) for r in res})
        rows.append(
            [
                c,
                name,
                res[0]["system"],
                " ".join(str(r["seed"]) for r in res),
                res[0]["n_candidates"],
                sum(r["n_queries"] for r in res),
                "; ".join(devices),
                f"{wall:.1f}",
                " ".join(commits),
                "; ".join(sorted({plugin_version(r) for r in res})) or "–",
            ]
        )
    return markdown_table(
        rows,
        headers=[
            "collection",
            "run",
            "system",
            "seeds",
            "candidates (first seed)",
            "queries (all seeds)",
            "device",
            "rank seconds (all seeds)",
            "commit",
            "plugin",
        ],
        disable_numparse=True,
    )


def genre_tables(runs) -> str:
    """Per query genre, Success@8 pooled over the seeds' queries (weighted by query count)."""
    from harness.foundation.markdown_table import markdown_table

    parts = []
    for c in sorted({c for c, _ in runs}):
        names = [n for n in run_order(runs) if (c, n) in runs]
        genres = sorted({g for n in names for r in runs[(c, n)] for g in r["per_genre"]})
        rows = []
        for g in genres:
            row = [g]
            n_q = 0
            for n in names:
                hits = [
                    (r["per_genre"][g]["success@8"], r["per_genre"][g]["n_queries"])
                    for r in runs[(c, n)]
                    if g in r["per_genre"]
                ]
                total = sum(k for _, k in hits)
                n_q = max(n_q, total)
                row.append(f"{100 * sum(v * k for v, k in hits) / total:.1f}" if total else "")
            rows.append([row[0], n_q, *row[1:]])
        parts.append(
            f"## {c}: Success@8 by query genre\n\n"
            + markdown_table(rows, headers=["query genre", "queries (all seeds)", *names], disable_numparse=True)
            + "\n"
        )
    return "\n".join(parts)


def rerank_tables(runs, describe_run=None, marks: dict | None = None) -> str:
    """The paper's Table 2 layout: per collection and first stage, its row, then one per reranker run.

    describe_run(system, config) -> the row's label (the system's plugin describes it; "" or
    None: the run name alone). marks: run name -> fixes its code predates."""
    from harness.foundation.markdown_table import markdown_table

    parts = []
    columns = metric_table.headline()
    n_seeds: dict[str, int] = {}
    for (c, _), res in runs.items():
        n_seeds[c] = max(n_seeds.get(c, 0), len(res))
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for (c, name), res in runs.items():
        first = res[0]["config"].get("first_stage")
        if first:
            groups[(c, first)].append(name)
    for (c, first), names in sorted(groups.items()):
        rows = []
        if (c, first) in runs:
            head = f"{label(first, (marks or {}).get(first, []))} (first stage)"
            rows.append(
                [head, ""] + [_cell([r["metrics"][m.name] for r in runs[(c, first)]], n_seeds[c]) for m in columns]
            )
        for name in sorted(names):
            res = runs[(c, name)]
            cfg = res[0]["config"]
            text = (describe_run(res[0]["system"], cfg) if describe_run else "") or name
            share = f"{100 * cfg['author_fraction']:.0f}%" if "author_fraction" in cfg else ""
            rows.append(
                [f"{text}  ({name})", share] + [_cell([r["metrics"][m.name] for r in res], n_seeds[c]) for m in columns]
            )
        parts.append(
            f"## {c}: reranking the top 100 of {first}\n\n"
            + markdown_table(
                rows,
                headers=["negatives (run)", "training authors used", *(m.short for m in columns)],
                disable_numparse=True,
            )
            + "\n"
        )
    return "\n".join(parts) if parts else "(no reranker runs yet)\n"


class PluginReports(NamedTuple):
    describe_run: Callable[[str, dict], str]  # (system, a run's config) -> label ("" for none)
    notes: dict[str, str]  # system -> the sentence its plugin wants beside its runs


def plugin_reports() -> PluginReports:
    """What the registered systems' specs say about their runs: each plugin describes its own
    runs (SystemSpec.describe_run, report_note); the core knows none of them."""
    from harness.plugins import load_registry
    from harness.specs import load_object

    specs = load_registry().systems
    describers = {}
    for name, s in specs.items():
        if s.describe_run:
            try:
                describers[name] = load_object(s.describe_run)
            except Exception as e:  # noqa: BLE001 - a plugin's broken describer loses its labels, not the pages
                _log.warning(
                    "system %r: its describe_run %r cannot be loaded (%s); its rows keep their names",
                    name,
                    s.describe_run,
                    e,
                )
    failed: set[str] = set()

    def describe_run(system: str, config: dict) -> str:
        fn = describers.get(system)
        if fn is None or system in failed:
            return ""
        try:
            label = fn(config)
        except Exception as e:  # noqa: BLE001 - as above: one row's label is lost, with one warning
            failed.add(system)
            _log.warning(
                "system %r: describe_run failed (%s: %s); its rows keep their names", system, type(e).__name__, e
            )
            return ""
        return label if isinstance(label, str) else ""

    return PluginReports(describe_run, {name: s.report_note for name, s in specs.items() if s.report_note})


# ---- pages: each a function of the board returning its Markdown -------------------------------------------


def plot_files(board: Board) -> dict[str, list[str]]:
    """collection -> the Success@k figures its page links, whether or not this command draws them
    (--no-plots), so a page does not depend on the flag."""
    from harness.reports.plots import split_series

    return {
        c: [f"success-at-k-{c}.png"]
        + ([f"success-at-k-{c}-more.png"] if split_series(board.runs, c, catalog=board.catalog)[1] else [])
        for c in board.collections
    }


def main_page(board: Board) -> str:
    figures = plot_files(board)
    plot_lines = (
        "\n".join(
            f"![Success@k on {c}{' (more runs)' if f.endswith('-more.png') else ''}]({f})"
            for c in figures
            for f in figures[c]
        )
        or "(no runs)"
    )
    link_text = " ".join(
        f"{page.title}: [{page.name}]({page.name})."
        for page in board_pages(board)
        if page.title and _wanted(page, board)
    )
    if board.collections:
        link_text += (
            " Per collection, with paired-significance marks: "
            + ", ".join(f"[{c}](collections/{c}.md)" for c in board.collections)
            + "."
        )
    marks = board.marks
    runs = {k: v for k, v in board.runs.items() if k[0] not in board.synthetic}
    synthetic = {k: v for k, v in board.runs.items() if k[0] in board.synthetic}
    return (
        f"{board.head}# Leaderboard\n\nSuccess@8, Success@100 and MRR@20 in percent, mean ± sample sd over the "
        f"split seeds (0, 1001, 2001, 3001); `(n=…)` marks a run with fewer seeds. "
        f"{link_text}\n\n"
        f"{main_table(runs, marks) if runs else ('' if synthetic else '(no runs yet)')}\n"
        f"{synthetic_section(synthetic, marks)}"
        f"{footnotes(f for m in marks.values() for f in m)}\n## Runs\n\n"
        f"{provenance_table(board.runs) if board.runs else ''}\n\n"
        f"## Success@k, k = 1…100\n\n{plot_lines}\n{identity_section(board, board.order)}"
        f"{stale_section(board)}"
    )


def synthetic_section(runs, marks: dict) -> str:
    """The runs on collections generated by code, apart from the benchmarks and labelled."""
    if not runs:
        return ""
    names = ", ".join(sorted({c for c, _ in runs}))
    return (
        f"\n## Synthetic collections (not benchmarks)\n\n{names}: generated by code so that the harness runs "
        "with no download; a score here checks the machinery, and says nothing about authorship attribution "
        f"on real text.\n\n{main_table(runs, marks)}\n"
    )


def stale_section(board: Board, collection: str | None = None) -> str:
    from harness.reports.fixes import run_marks
    from harness.reports.stale import stale_section as render

    marks = {n: m for (_, n), res in board.stale_runs.items() if (m := run_marks(board.fixes, res))}
    return render(board.stale_runs, board.stale_entries, collection, marks)


def identity_section(board: Board, names: list[str]) -> str:
    """The pages' closing "What each run is" table (harness.reports.run_identity)."""
    from harness.reports.run_identity import identity_table

    if not names:
        return ""
    table = identity_table(board.runs, names, board.before_decontamination, board.training_sources, board.catalog)
    return f"\n## What each run is\n\n{table}"


def genre_page(board: Board) -> str:
    return f"{board.head}# Per-genre results\n\n{genre_tables(board.runs)}"


def training_page(board: Board) -> str:
    from harness.reports.training import card_lines, log_marks, training_table

    logs = board.logs
    marks = log_marks(logs, list(board.fixes))
    notes = footnotes(f for m in marks.values() for f in m)
    body = (
        training_table(logs, marks, board.before_decontamination)
        + ("\n" + notes.rstrip("\n") if notes else "")
        + card_lines(logs)
        if logs
        else "(no training logs)"
    )
    figure = "\n\n![training loss](training-loss.png)" if logs else ""
    return (
        f"{board.head}# Training runs\n\nFrom the training logs the leaderboard's record names, "
        "`<run>.train_log.json` (written by `aa-harness train`). Train seconds sum the epochs' wall time "
        "(the hard-negative clustering included); docs/s counts both documents of every author pair. "
        "Trained on: the examples, and the training set by the sha256 prefix its model card records, marked "
        f"when that set was curated before the corpora's decontamination.\n\n{body}{figure}\n"
    )


def rerank_page(board: Board) -> str:
    runs = board.runs
    plugins = plugin_reports()
    rerankers = sorted({res[0]["system"] for res in runs.values() if res[0]["config"].get("first_stage")})
    notes = "".join(plugins.notes[s] + " " for s in rerankers if s in plugins.notes)
    rerank_marks = {
        n: m for n, m in board.marks.items() if any(r[0]["config"].get("first_stage") == n for r in runs.values())
    }
    from harness.reports.run_identity import reranker_backbones

    shown = [n for n in board.order if runs_named(runs, n, rerank=True)]
    if not board.has_rerank:  # only stale reranker runs: the page says so rather than vanish from the nav
        from harness.reports.stale import stale_section

        return (
            f"{board.head}# Reranking (the layout of the paper's Table 2)\n\nNo reranker run is current; "
            f"those below wait to be rerun.\n{stale_section(board.stale_reranks, board.stale_entries)}"
        )
    return (
        f"{board.head}# Reranking (the layout of the paper's Table 2)\n\nEach reranker rescored "
        "the first stage's saved top 100 per query. Success@100 is the first stage's by construction "
        f"(the same 100 candidates, reordered); it is shown, not re-estimated. {reranker_backbones(runs, board.catalog)}"
        f"{notes}Mean ± sd over seeds, in percent.\n\n{rerank_tables(runs, plugins.describe_run, rerank_marks)}"
        f"{footnotes(f for m in rerank_marks.values() for f in m)}{identity_section(board, shown)}"
    )


def runs_named(runs, name: str, *, rerank: bool) -> bool:
    """Whether `name` is a reranker run or the first stage of one (rerank=True)."""
    firsts = {res[0]["config"].get("first_stage") for res in runs.values()}
    return any(n == name and (res[0]["config"].get("first_stage") or n in firsts) for (_, n), res in runs.items())


class Page(NamedTuple):
    name: str  # path under the output folder
    wanted: Callable[[Board], bool]  # whether these runs produce the page
    render: Callable[[Board], str]
    title: str = ""  # how the main page links it ("": not linked)
    plugin: str = ""  # the plugin that added it ("": the harness's own)


# Every runs folder gives the main and per-genre pages, the rerank page when it holds reranker runs, the
# training page when the registries' training folder holds logs. In this order the main page links them,
# then the plugins' pages (the paper's figures with --reported, the bench distribution's performance page).
PAGES: tuple[Page, ...] = (
    Page("main.md", lambda b: True, main_page),
    Page("per-genre.md", lambda b: True, genre_page, "Per-genre tables"),
    Page("training.md", lambda b: bool(b.logs), training_page, "Training runs"),
    Page("rerank.md", lambda b: b.has_rerank or bool(b.stale_reranks), rerank_page, "Reranking (Table 2 layout)"),
)


def board_pages(board: Board) -> tuple[Page, ...]:
    """The harness's pages, then those the plugins add (Board.pages); a plugin's page named as one of
    the harness's is an error naming the plugin."""
    own = {page.name for page in PAGES}
    added = tuple(Page(f"{s.name}.md", s.wanted, s.render, s.title, s.plugin) for s in board.pages)
    for page in added:
        if page.name in own:
            raise HarnessError(
                f"plugin {page.plugin} registers the page {page.name!r}, one of the leaderboard's own; "
                "block it with AA_HARNESS_BLOCK_PLUGINS"
            )
    return PAGES + added


def plugin_page_names(board: Board) -> list[str]:
    """The file names of the pages the plugins add, whether or not these inputs give them (write_pages
    retires an earlier build's page the inputs no longer give)."""
    return [f"{s.name}.md" for s in board.pages]


def _wanted(page: Page, board: Board) -> bool:
    return bool(_plugin_call(page, "deciding on", page.wanted, board))


def _render(page: Page, board: Board) -> str:
    text = _plugin_call(page, "rendering", page.render, board)
    if not isinstance(text, str):
        raise HarnessError(
            f"plugin {page.plugin} failed while rendering the page {page.name!r}: it returned a "
            f"{type(text).__name__}, not the page's Markdown"
        )
    return text


def _plugin_call(page: Page, doing: str, fn: Callable[[Board], object], board: Board) -> object:
    """fn(board); a plugin's page that raises is one HarnessError naming the plugin and the page, before
    anything is written (the harness's own pages raise as they are)."""
    try:
        return fn(board)
    except Exception as e:  # a plugin's bug, said in one line; the leaderboard writes nothing
        if not page.plugin:
            raise
        raise HarnessError(
            f"plugin {page.plugin} failed while {doing} the page {page.name!r}: {type(e).__name__}: {e}"
        ) from e


def collection_pages(board: Board) -> dict[str, str]:
    """`collections/<c>.md` per collection: every run with its paired-significance marks."""
    from harness.reports.collection_page import collection_page

    return {
        f"collections/{c}.md": collection_page(
            c,
            board.runs,
            board.order,
            board.manifests_for(c),
            board.head,
            compare=board.compare,
            all_view_dir=board.manifests_for(f"{c}-all"),
            catalog=board.catalog,
        )
        + stale_section(board, c)
        for c in board.collections
    }


def render_pages(board: Board) -> dict[str, str]:
    """page path -> Markdown, for every page these runs produce."""
    pages = {page.name: _render(page, board) for page in board_pages(board) if _wanted(page, board)}
    return pages | collection_pages(board)


def draw_figures(board: Board) -> dict[str, bytes]:
    """file name -> PNG: the training-loss figure (when there are logs) and each collection's Success@k
    figure(s). Drawn aside, so a failing plot writes nothing."""
    from harness.reports.plots import plot_collection
    from harness.reports.training import plot_losses

    with tempfile.TemporaryDirectory() as tmp:
        drawn: list[Path] = []
        if board.logs:
            plot_losses(board.logs, Path(tmp) / "training-loss.png")
            drawn.append(Path(tmp) / "training-loss.png")
        for c in board.collections:
            drawn += plot_collection(board.runs, c, Path(tmp), catalog=board.catalog)
        return {path.name: path.read_bytes() for path in drawn}


def leaderboard_files(board: Board) -> dict[str, str | bytes]:
    """Every page, and the figures when the board draws them: path under the output folder -> content."""
    contents: dict[str, str | bytes] = dict(render_pages(board))
    if board.plots:
        contents |= draw_figures(board)
    return contents


def write_pages(
    contents: dict[str, str | bytes],
    out_dir: Path,
    *,
    site: tuple[Path, dict[str, str]] | None = None,
    plugin_pages: Iterable[str] = (),
) -> list[Path]:
    """Write what was built (pages and figures) under out_dir, retire the pages an earlier build wrote
    that these runs no longer give (the rerank page once its runs are gone, say, so no page shows
    results the runs folder no longer holds), and write the HTML site (folder, pages) when given: all
    one set, so a kill leaves the old pages and site or the new ones, and a retired page goes only with
    the new set. plugin_pages: the file names of the pages the plugins add (plugin_page_names), retired
    as the harness's own are. Returns the paths of the pages written."""
    from harness.foundation.output_set import staged_sets

    out_dir = Path(out_dir)
    folders = [out_dir]
    replace: dict[Path, tuple[str, ...]] = {}
    site_files: dict[str, str] = {}
    if site is not None:
        from harness.reports.html_site import check_site_folder, site_set

        check_site_folder(site[0])
        site_files, replace[Path(site[0])] = site_set(site[1])
        folders.append(Path(site[0]))
    with staged_sets(folders, replace_folders=replace) as stages:
        written = [stages[0].write(rel, data) for rel, data in contents.items()]
        for path in retired_pages(contents, out_dir, plugin_pages):  # read under the lock, after any recovery
            stages[0].remove(path.relative_to(out_dir).as_posix())
        for rel, text in site_files.items():
            stages[-1].write(rel, text)
    return written


def retired_pages(contents: dict[str, str | bytes], out_dir: Path, plugin_pages: Iterable[str] = ()) -> list[Path]:
    """Pages in out_dir that this command generates (by name and first line) but did not build now."""
    collections = [f"collections/{p.name}" for p in sorted((out_dir / "collections").glob("*.md"))]
    names = [p.name for p in PAGES] + list(plugin_pages) + collections
    out = []
    for name in names:
        path = out_dir / name
        if name in contents or not path.is_file():
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            if f.readline() == HEADER:
                out.append(path)
    return out


def write_leaderboards(
    runs_dir: Path,
    out_dir: Path,
    *,
    plots: bool = True,
    bench_dir: Path | None = None,
    splits_dir: Path | None = None,
    allow_empty: bool = False,
    reported: bool = False,
    registries: Registries | None = None,
) -> list[Path]:
    """Load the board, build every page (and plot) in memory, then write them all; on any error nothing
    is written. Returns the paths written. See load_board for the arguments."""
    board = load_board(
        runs_dir,
        splits_dir=splits_dir,
        bench_dir=bench_dir,
        allow_empty=allow_empty,
        plots=plots,
        reported=reported,
        registries=registries,
    )
    return write_pages(leaderboard_files(board), out_dir, plugin_pages=plugin_page_names(board))


def summary(board: Board) -> str:
    """A few lines for the terminal: per collection, the runs and the best by Success@8 (percent)."""
    if not board.runs:
        return f"no results under {board.runs_dir}"
    lines = []
    for c in board.collections:
        names = board.names(c)
        s8 = {n: float(np.mean([r["metrics"]["success@8"] for r in board.runs[(c, n)]])) for n in names}
        best = sorted(names, key=lambda n: (-s8[n], n))[:3]
        lines.append(f"{c}: {len(names)} run(s); best Success@8: " + ", ".join(f"{n} {100 * s8[n]:.1f}%" for n in best))
    return "\n".join(lines)
