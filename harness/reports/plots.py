"""Success@k figures that stay readable with many runs.

- at most `MAX_SERIES` (8) curves in one panel: the collection's figure shows the baselines and the
  best run of each system; `success-at-k-<collection>-more.png` shows every other run, in panels of
  the baselines plus up to six runs, grouped by system;
- within a panel every curve has its own colour *and* marker; the baselines (the runs of systems whose
  metadata role is baseline) are dashed and keep the grey style their plugin declares, everywhere;
- the legend sits outside the axes, to the right; titles are never cut (the saved image is fitted
  to everything drawn);
- the axis is in percent; each curve carries a 95% bootstrap band over the seeds' pooled queries.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np

from harness.foundation.atomic import atomic_open
from harness.reports.system_catalog import Catalog, registered

MAX_SERIES = 8
DEFAULT_CAP = MAX_SERIES
# tab10 without its grey (kept for the baselines): eight colours a panel can tell apart.
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")
MARKERS = ("^", "D", "v", "P", "X", "<", ">", "h")
KS = np.arange(1, 101)
MARK_AT = (1, 2, 4, 8, 16, 32, 64, 100)  # markers at these k (log-spaced), not on all 100 points
LEGEND_WIDTH_IN = 4.6  # room to the right of each panel for the legend


def curve_band(
    results: list[dict], *, resamples: int = 1000, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean Success@k over seeds, band low, band high) for k = 1..100, in percent.

    The band is a percentile bootstrap over the pooled queries of all seeds.
    """
    mean = 100 * np.mean([r["success_curve"][: len(KS)] for r in results], axis=0)
    ranks = np.array(
        [np.inf if x is None else x for r in results for x in r["first_needle_rank"].values()], dtype=float
    )
    if len(ranks) == 0:
        return mean, mean, mean
    rng = np.random.default_rng(seed)
    clipped = np.minimum(ranks, len(KS) + 1).astype(np.int64)  # a miss (or rank > 100) counts nowhere
    sample = clipped[rng.integers(0, len(ranks), size=(resamples, len(ranks)))]
    counts = np.zeros((resamples, len(KS) + 2))
    np.add.at(counts, (np.arange(resamples)[:, None], sample), 1)
    hits = np.cumsum(counts, axis=1)[:, 1 : len(KS) + 1] / len(ranks)  # share with first needle rank <= k
    lo, hi = np.percentile(100 * hits, [2.5, 97.5], axis=0)
    return mean, lo, hi


def _s8(runs: dict, collection: str, name: str) -> float:
    return float(np.mean([r["metrics"]["success@8"] for r in runs[(collection, name)]]))


def _system(runs: dict, collection: str, name: str) -> str:
    return runs[(collection, name)][0]["system"]


def plan_panels(
    runs: dict, collection: str, cap: int = MAX_SERIES, *, catalog: Catalog | None = None
) -> tuple[list[str], list[list[str]]]:
    """(the main panel's runs, the further panels' runs); catalog: the systems' metadata (default: the
    registered systems'), which says which runs are baselines.

    Main: the baselines and the best run of each other system by mean Success@8 (the best systems
    when there are more than fit). Further panels: every run not in the main one, ordered by system
    then Success@8, each panel with the baselines repeated and at most `cap` curves in all.
    """
    names = sorted(n for c, n in runs if c == collection)
    if len(names) <= cap:  # all fit in one panel
        return sorted(names, key=lambda n: (-_s8(runs, collection, n), n)), []
    base = (catalog or registered()).baselines(runs, collection, names)
    room = max(cap - len(base), 1)
    ranked = sorted((n for n in names if n not in base), key=lambda n: (-_s8(runs, collection, n), n))
    best_of: dict[str, str] = {}
    for n in ranked:
        best_of.setdefault(_system(runs, collection, n), n)
    leaders = [n for n in ranked if n in best_of.values()][:room]
    main = sorted(base + leaders, key=lambda n: (-_s8(runs, collection, n), n))
    rest = sorted(
        (n for n in ranked if n not in leaders),
        key=lambda n: (_system(runs, collection, n), -_s8(runs, collection, n), n),
    )
    panels = [base + rest[i : i + room] for i in range(0, len(rest), room)]
    return main, panels


def split_series(
    runs: dict, collection: str, cap: int = MAX_SERIES, *, catalog: Catalog | None = None
) -> tuple[list[str], list[str]]:
    """(runs of the main figure, runs only in the `-more` figure)."""
    main, panels = plan_panels(runs, collection, cap, catalog=catalog)
    return main, [n for p in panels for n in p if n not in main]


def _style(runs: dict, collection: str, names: list[str], catalog: Catalog) -> dict[str, tuple[str, str, str]]:
    """name -> (colour, marker, line style): baselines grey and dashed, the others in panel order."""
    out, i = {}, 0
    for n in names:
        system = _system(runs, collection, n)
        if catalog.is_baseline(system):
            colour, marker = catalog.plot_style(system)
            out[n] = (colour, marker, "--")
        else:
            out[n] = (COLOURS[i % len(COLOURS)], MARKERS[i % len(MARKERS)], "-")
            i += 1
    return out


def _draw_panel(ax, runs: dict, collection: str, names: list[str], title: str, catalog: Catalog) -> dict:
    import matplotlib.ticker

    styles = _style(runs, collection, names, catalog)
    mark = [k - 1 for k in MARK_AT]
    for name in names:
        res = runs[(collection, name)]
        colour, marker, line = styles[name]
        mean, lo, hi = curve_band(res)
        ax.fill_between(KS, lo, hi, color=colour, alpha=0.10, linewidth=0)
        ax.plot(
            KS,
            mean,
            color=colour,
            marker=marker,
            markevery=mark,
            markersize=5.5,
            linestyle=line,
            linewidth=1.7,
            label=f"{name}\nS@8 {100 * _s8(runs, collection, name):.1f}%, {len(res)} seed{'s' * (len(res) != 1)}",
        )
    ax.set_xscale("log")
    ax.set_xlim(1, 100)
    ax.set_xticks(MARK_AT, [str(k) for k in MARK_AT])
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_ylim(0, 100)
    ax.yaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(100, decimals=0))
    ax.set_xlabel("k (log scale)")
    ax.set_ylabel("Success@k, mean over seeds")
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title("\n".join(textwrap.wrap(title, 110)), fontsize=11, loc="left")
    ax.legend(
        fontsize=8.5,
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
        borderaxespad=0.0,
        frameon=False,
        labelspacing=0.7,
        title="dashed: baselines",
        title_fontsize=8.5,
    )
    return {"names": list(names), "styles": [styles[n] for n in names], "title": title}


def save_png(fig, path: Path) -> None:
    """Save fitted to everything drawn (no title or legend cut), as a 256-colour PNG: a third of the
    bytes of the RGBA image, and the same to the eye."""
    import io

    from PIL import Image

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None}, bbox_inches="tight", pad_inches=0.15)
    buffer.seek(0)
    image = (
        Image.open(buffer)
        .convert("RGB")
        .quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    )
    with atomic_open(path, "wb") as f:
        image.save(f, format="PNG", optimize=True)


def draw_panels(
    runs: dict,
    collection: str,
    panels: list[tuple[str, list[str]]],
    path: Path,
    *,
    catalog: Catalog | None = None,
) -> list[dict]:
    """One figure of stacked panels, (title, runs) each; returns what each panel drew (for tests):
    names, (colour, marker, line style) per curve, title, and whether its legend is outside the axes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(panels), 1, figsize=(8.5 + LEGEND_WIDTH_IN, 4.3 * len(panels)), dpi=100, squeeze=False)
    catalog = catalog or registered()
    drawn = [_draw_panel(ax, runs, collection, names, title, catalog) for ax, (title, names) in zip(axes[:, 0], panels)]
    fig.text(0.0, 0.0, "bands: 95% bootstrap over the seeds' queries", fontsize=7, color="0.35")
    fig.tight_layout(rect=(0, 0.02, 1, 1))  # makes room for the legends outside the axes too
    fig.canvas.draw()
    for ax, d in zip(axes[:, 0], drawn):
        d["legend_outside"] = bool(ax.get_legend().get_window_extent().x0 >= ax.get_window_extent().x1)
        d["percent_axis"] = all(t.get_text().endswith("%") for t in ax.get_yticklabels() if t.get_text())
    save_png(fig, path)
    plt.close(fig)
    return drawn


def plot_collection(
    runs: dict, collection: str, out_dir: Path, cap: int = MAX_SERIES, *, catalog: Catalog | None = None
) -> list[Path]:
    """The collection's figure (baselines and each system's best run) and, when other runs exist, the
    `-more` figure with all of them in panels."""
    catalog = catalog or registered()
    main, panels = plan_panels(runs, collection, cap, catalog=catalog)
    total = sum(1 for c, _ in runs if c == collection)
    paths = [Path(out_dir) / f"success-at-k-{collection}.png"]
    head = (
        f"Success@k on {collection}: the baselines and the best run of each system ({len(main)} of {total} runs)"
        if panels
        else f"Success@k on {collection}: all {total} runs"
    )
    draw_panels(runs, collection, [(head, main)], paths[0], catalog=catalog)
    if panels:
        paths.append(Path(out_dir) / f"success-at-k-{collection}-more.png")
        titled = []
        for i, names in enumerate(panels, 1):
            systems = sorted({s for n in names if not catalog.is_baseline(s := _system(runs, collection, n))})
            title = (
                f"Success@k on {collection}, other runs ({i} of {len(panels)}): {', '.join(systems)} "
                "(baselines repeated)"
            )
            titled.append((title, names))
        draw_panels(runs, collection, titled, paths[1], catalog=catalog)
    return paths
