"""Figures people can read: at most 8 curves a panel, a colour and a marker each, baselines dashed,
legends outside the axes, a percent axis, whole titles; the training loss in panels."""

from __future__ import annotations

import numpy as np
import pytest

from harness.evaluation.metrics import headline, success_curve


def _runs(n: int, systems: int = 5) -> dict:
    """n runs on collection "c": bm25, char-ngram, then runs of `systems` other systems."""
    rng = np.random.default_rng(0)
    runs = {}
    for i in range(n):
        name = ["bm25", "char-ngram"][i] if i < 2 else f"run{i}"
        system = name if i < 2 else f"sys{i % systems}"
        ranks = {f"q{j}": int(rng.integers(1, 150)) if rng.random() < 0.3 + 0.02 * i else None for j in range(40)}
        vals = list(ranks.values())
        runs[("c", name)] = [
            {
                "system": system,
                "success_curve": success_curve(vals),
                "first_needle_rank": ranks,
                "metrics": headline(vals),
            }
        ]
    return runs


def test_the_main_panel_holds_the_baselines_and_each_systems_best_and_the_rest_fill_panels_of_eight():
    from harness.reports.plots import MAX_SERIES, plan_panels

    runs = _runs(30)
    main, panels = plan_panels(runs, "c")
    systems = {n: runs[("c", n)][0]["system"] for _, n in runs}
    assert {"bm25", "char-ngram"} <= set(main) and len(main) == 2 + 5  # one run per other system
    for s in {systems[n] for n in main} - {"bm25", "char-ngram"}:
        best = max((n for n in systems if systems[n] == s), key=lambda n: runs[("c", n)][0]["metrics"]["success@8"])
        assert best in main
    assert len(main) <= MAX_SERIES and all(len(p) <= MAX_SERIES and p[:2] == ["bm25", "char-ngram"] for p in panels)
    shown = set(main) | {n for p in panels for n in p}
    assert shown == set(systems) and sum(len(p) - 2 for p in panels) == 30 - 7  # every run once outside the baselines
    few = _runs(6)
    assert plan_panels(few, "c")[1] == [] and len(plan_panels(few, "c")[0]) == 6  # all fit: one figure


@pytest.mark.slow
def test_each_panel_has_distinct_styles_dashed_baselines_an_outside_legend_and_a_percent_axis(tmp_path):
    from harness.reports.plots import draw_panels, plan_panels, plot_collection

    runs = _runs(20)
    main, panels = plan_panels(runs, "c")
    title = "Success@k on c: a deliberately long title that must be kept whole, not clipped at the figure's edge " * 2
    drawn = draw_panels(
        runs, "c", [(title, main)] + [(f"panel {i}", p) for i, p in enumerate(panels)], tmp_path / "f.png"
    )
    for panel in drawn:
        styles = dict(zip(panel["names"], panel["styles"]))
        assert len(styles) <= 8
        assert len({c for c, _, _ in styles.values()}) == len(styles) and len(
            {m for _, m, _ in styles.values()}
        ) == len(styles)
        assert all((line == "--") == (n in ("bm25", "char-ngram")) for n, (_, _, line) in styles.items())
        assert panel["legend_outside"] and panel["percent_axis"]
    assert drawn[0]["title"] == title  # drawn whole (wrapped, never cut)
    paths = plot_collection(runs, "c", tmp_path)
    assert [p.name for p in paths] == ["success-at-k-c.png", "success-at-k-c-more.png"]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in paths)


@pytest.mark.slow
def test_the_training_loss_is_drawn_in_panels_of_at_most_eight(tmp_path):
    from harness.reports.training import loss_panels, plot_losses

    rng = np.random.default_rng(1)
    logs = {
        f"{system}-{i}": {
            "system": system,
            "log": [{"loss": float(5 * np.exp(-s / 50) + rng.random())} for s in range(200)],
        }
        for system, count in (("luar", 1), ("sadiri", 2), ("reranker", 11))
        for i in range(count)
    }
    panels = loss_panels(logs)
    # in system order; a system with more than 8 logs is split, and what fits shares a panel
    assert [len(names) for _, names in panels] == [1, 8, 5]
    assert panels[0][0].endswith(": luar") and panels[1][0].endswith(": reranker (1 of 2)")
    assert panels[2][0].endswith(": reranker (2 of 2), sadiri")
    drawn = plot_losses(logs, tmp_path / "loss.png")
    assert all(d["legend_outside"] and len(set(d["styles"])) == len(d["names"]) <= 8 for d in drawn)
    assert (tmp_path / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
