"""Success@k plots that stay readable with many runs.

- every series has its own colour *and* marker (so two runs never look alike, in colour or in grey);
- the legend sits outside the axes, to the right, and never covers a curve;
- each curve carries a 95% bootstrap band: the queries of all seeds are resampled (the same
  percentile bootstrap, fixed seed, that gives each result's `ci95`), from the stored first-needle ranks;
- at most `cap` runs in one figure: the best by Success@8 plus the baselines (bm25, char-ngram);
  the rest go to a second figure (`success-at-k-<collection>-more.png`).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.atomic import atomic_open

BASELINES = ("bm25", "char-ngram")
DEFAULT_CAP = 8
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h", "*", "p", "d", "8")
KS = np.arange(1, 101)
MARK_AT = (1, 2, 4, 8, 16, 32, 64, 100)  # markers at these k (log-spaced), not on all 100 points


def curve_band(results: list[dict], *, resamples: int = 1000, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean Success@k over seeds, band low, band high) for k = 1..100, in percent.

    The band is a percentile bootstrap over the pooled queries of all seeds.
    """
    mean = 100 * np.mean([r["success_curve"][: len(KS)] for r in results], axis=0)
    ranks = np.array([np.inf if x is None else x for r in results for x in r["first_needle_rank"].values()], dtype=float)
    if len(ranks) == 0:
        return mean, mean, mean
    rng = np.random.default_rng(seed)
    clipped = np.minimum(ranks, len(KS) + 1).astype(np.int64)  # a miss (or rank > 100) counts nowhere
    sample = clipped[rng.integers(0, len(ranks), size=(resamples, len(ranks)))]
    counts = np.zeros((resamples, len(KS) + 2))
    np.add.at(counts, (np.arange(resamples)[:, None], sample), 1)
    hits = np.cumsum(counts, axis=1)[:, 1:len(KS) + 1] / len(ranks)  # share with first needle rank <= k
    lo, hi = np.percentile(100 * hits, [2.5, 97.5], axis=0)
    return mean, lo, hi


def split_series(runs: dict, collection: str, cap: int = DEFAULT_CAP) -> tuple[list[str], list[str]]:
    """(runs for the main figure, the rest): the baselines plus the best others by mean Success@8."""
    names = [n for c, n in runs if c == collection]
    s8 = {n: float(np.mean([r["metrics"]["success@8"] for r in runs[(collection, n)]])) for n in names}
    base = [n for n in names if runs[(collection, n)][0]["system"] in BASELINES]
    others = sorted((n for n in names if n not in base), key=lambda n: (-s8[n], n))
    room = max(cap - len(base), 0)
    main = sorted(base + others[:room], key=lambda n: (-s8[n], n))
    return main, others[room:]


def _palette(n: int):
    import matplotlib

    if n <= 10:
        cmap = matplotlib.colormaps["tab10"]
        return [cmap(i) for i in range(n)]
    cmap = matplotlib.colormaps["tab20"]  # the dark shade of each hue first, then the light ones
    order = list(range(0, 20, 2)) + list(range(1, 20, 2))
    return [cmap(order[i % 20]) for i in range(n)]


def plot_success_curves(runs: dict, collection: str, names: list[str], path: Path, *, title: str,
                        style_index: dict[str, int] | None = None) -> dict:
    """One figure: a line with band, colour and marker per run; legend outside on the right.

    Returns what was drawn (for tests): {"styles": [(run, colour, marker)], "bands": n, "legend_outside": bool}.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    style_index = style_index or {n: i for i, n in enumerate(names)}
    colours = _palette(max(style_index.values(), default=0) + 1)
    fig, ax = plt.subplots(figsize=(9.5, 4.8), dpi=100)
    mark = [k - 1 for k in MARK_AT]
    styles = []
    for name in names:
        res = runs[(collection, name)]
        i = style_index[name]
        mean, lo, hi = curve_band(res)
        colour = colours[i]
        dashed = res[0]["system"] in BASELINES
        s8 = 100 * np.mean([r["metrics"]["success@8"] for r in res])
        ax.fill_between(KS, lo, hi, color=colour, alpha=0.12, linewidth=0)
        styles.append((name, tuple(round(float(x), 4) for x in colour), MARKERS[i % len(MARKERS)]))
        ax.plot(KS, mean, color=colour, marker=MARKERS[i % len(MARKERS)], markevery=mark, markersize=5,
                linestyle="--" if dashed else "-", linewidth=1.6,
                label=f"{name}  (S@8 {s8:.1f}, seeds={len(res)})")
    ax.set_xscale("log")
    ax.set_xlabel("k (log scale)")
    ax.set_ylabel("Success@k (%), mean over seeds")
    ax.set_title(title, fontsize=11)
    ax.set_xlim(1, 100)
    ax.set_xticks(MARK_AT, [str(k) for k in MARK_AT])
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_ylim(0, 100)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, frameon=False,
              title="run (dashed: baseline)", title_fontsize=8)
    fig.text(0.01, 0.01, "bands: 95% bootstrap over the seeds' queries", fontsize=7, color="0.35")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.canvas.draw()
    outside = ax.get_legend().get_window_extent().x0 >= ax.get_window_extent().x1
    with atomic_open(path, "wb") as f:
        fig.savefig(f, format="png", metadata={"Software": None})
    plt.close(fig)
    return {"styles": styles, "bands": len(ax.collections), "legend_outside": bool(outside)}


def plot_collection(runs: dict, collection: str, out_dir: Path, cap: int = DEFAULT_CAP) -> list[Path]:
    """The collection's figure(s): main (capped), and `-more` with the remaining runs when there are any."""
    main, rest = split_series(runs, collection, cap)
    order = main + rest
    style = {n: i for i, n in enumerate(order)}  # a run keeps its colour and marker across both figures
    paths = [Path(out_dir) / f"success-at-k-{collection}.png"]
    shown = f"top {len(main)} runs by Success@8 incl. baselines" if rest else f"{len(main)} runs"
    plot_success_curves(runs, collection, main, paths[0], title=f"Success@k on {collection} ({shown})", style_index=style)
    if rest:
        paths.append(Path(out_dir) / f"success-at-k-{collection}-more.png")
        base = [n for n in main if runs[(collection, n)][0]["system"] in BASELINES]
        plot_success_curves(runs, collection, base + rest, paths[1],
                            title=f"Success@k on {collection}: the other {len(rest)} runs (baselines repeated)",
                            style_index=style)
    return paths
