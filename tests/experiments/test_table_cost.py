"""benchmarks/table_cost.py: an experiment's GPU-minutes, measured for what is done and projected
for what is left, as `reproduce --dry-run` judges done; the performance page shows it."""

from __future__ import annotations

from tests.conftest import ROOT


def test_table_cost_splits_done_from_left_as_reproduce_does(tmp_path):
    from aa_harness_bench.performance import table_cost_table
    from benchmarks.table_cost import table_cost
    from harness.experiments.plan import Plan
    from harness.experiments.reproduce import load
    from harness.plugins import load_registry

    path = ROOT / "experiments" / "table1-public.toml"
    runs = ROOT / "leaderboards" / "runs"
    record = table_cost(str(path), runs)
    steps = {s["step"]: s for s in record["results"]["steps"]}
    registry = load_registry()
    exp = load(path, registry)
    plan = Plan(exp, registry, runs.resolve())
    assert set(steps) == {a for a, s in exp.steps.items() if s.kind in ("train", "run", "rerank")}
    for address, s in steps.items():
        if s["kind"] != "train":
            missing = plan.missing_results(exp.steps[address])
            assert s["left"] == [c for c in exp.steps[address].collections if missing[c]]
            assert s["seeds_left"] == sum(len(m) for m in missing.values())
            every = len(exp.steps[address].collections) * len(exp.seeds)
            assert (s["measured"] is not None) <= (s["seeds_left"] < every)  # only current seeds are measured
    assert steps["run.bm25"]["measured"] is None  # a CPU run costs no GPU-minutes
    total = sum(s["measured"] or 0 for s in steps.values())
    assert record["results"]["measured_gpu_minutes"] == round(total, 1)
    assert "`" + record["experiment"] + "`" in table_cost_table([record])


def test_a_step_half_done_is_measured_and_projected_seed_by_seed(tmp_path):
    """Of a run's collections only reddit-xsub has results, then only two of its four seeds: the
    measured figure is those seeds' wall time, and what is left is priced per missing seed."""
    import json
    import shutil
    from dataclasses import replace

    from benchmarks.table_cost import table_cost
    from harness.experiments.plan import Plan
    from harness.experiments.projection import Projection
    from harness.experiments.reproduce import load
    from harness.plugins import load_registry

    path = ROOT / "experiments" / "table1-public.toml"
    name = "sadiri-v2-qwen2.5-1.5b-cosine-b16-lr1e-4"
    run = tmp_path / "runs" / "reddit-xsub" / name
    run.mkdir(parents=True)
    for result in (ROOT / "leaderboards" / "runs" / "reddit-xsub" / name).glob("seed-*.json"):
        shutil.copy(result, run)
    walls = {
        s: json.loads((run / f"seed-{s}.json").read_text())["provenance"]["wall_seconds"] for s in (0, 1001, 2001, 3001)
    }

    def cost():
        steps = {s["step"]: s for s in table_cost(str(path), tmp_path / "runs")["results"]["steps"]}
        return steps[f"run.{name}"]

    whole = cost()
    for seed in (2001, 3001):
        (run / f"seed-{seed}.json").unlink()
    half = cost()
    assert whole["seeds_left"] == 16 and half["seeds_left"] == 18  # four other collections, none run here
    assert abs(whole["measured"] - sum(walls.values()) / 60) <= 0.05
    assert abs(half["measured"] - (walls[0] + walls[1001]) / 60) <= 0.05
    registry = load_registry()
    exp = load(path, registry)
    plan, projection = Plan(exp, registry, (tmp_path / "runs").resolve()), Projection(exp)
    step = exp.steps[f"run.{name}"]
    on_reddit = projection.minutes(replace(step, collections=("reddit-xsub",)), plan)  # its four seeds
    assert abs((half["projected"] - whole["projected"]) - on_reddit / 2) <= 0.1  # two more seeds of four


def test_collections_cut_runs_and_reranks_but_not_trainings(tmp_path):
    """A table's cost on its headline collections: each run and rerank counts the results of the
    collections named only, each training counts whole; a collection no step names is one line."""
    import pytest

    from aa_harness_bench.performance import table_cost_table
    from benchmarks.table_cost import table_cost

    path = ROOT / "experiments" / "table2-public.toml"
    runs = ROOT / "leaderboards" / "runs"
    every = {s["step"]: s for s in table_cost(str(path), runs)["results"]["steps"]}
    headline = ["reddit-xsub", "blogs-xtopic", "pan19-en"]
    record = table_cost(str(path), runs, headline)
    cut = {s["step"]: s for s in record["results"]["steps"]}
    assert set(cut) == set(every) and record["collections"] == headline
    others = table_cost(str(path), runs, ["reddit-xsub-all", "blogs-xtopic-all"])["results"]["steps"]
    for other in others:
        a, whole = cut[other["step"]], every[other["step"]]
        if whole["kind"] == "train":
            assert a["measured"] == other["measured"] == whole["measured"]
        elif whole["measured"] is not None:
            # each part is rounded to 0.1 minute: the two parts sum to the whole within that rounding
            assert abs((a["measured"] or 0) + (other["measured"] or 0) - whole["measured"]) <= 0.1 + 1e-9
    assert "reddit-xsub, blogs-xtopic, pan19-en" in table_cost_table([record])
    with pytest.raises(SystemExit, match=r"--collections pan18-en: no run or rerank there names it"):
        table_cost(str(path), runs, ["pan19-en", "pan18-en"])


def test_two_tables_together_count_a_shared_step_once(tmp_path):
    """Table 2 trains and runs Table 1's best retriever too (the same model and run, by content):
    the page's row of the two files together counts those steps once."""
    from aa_harness_bench.performance import table_cost_table
    from benchmarks.table_cost import table_cost

    runs = ROOT / "leaderboards" / "runs"
    one, two = (table_cost(str(ROOT / "experiments" / f"table{k}-public.toml"), runs) for k in (1, 2))
    made = [{s["makes"]: s for s in r["results"]["steps"]} for r in (one, two)]
    shared = set(made[0]) & set(made[1])
    assert any(m.startswith("runs/sadiri-v2-qwen2.5-1.5b") for m in shared) and len(shared) >= 2
    expected = sum((s["measured"] or 0) + (s["projected"] or 0) for s in {**made[0], **made[1]}.values())
    row = next(line for line in table_cost_table([one, two]).splitlines() if "together" in line)
    assert row.split("|")[7].strip() == f"{expected:.0f}"
    separate = sum(
        r["results"]["measured_gpu_minutes"] + r["results"]["projected_gpu_minutes_left"] for r in (one, two)
    )
    shared_minutes = sum((made[0][m]["measured"] or 0) + (made[0][m]["projected"] or 0) for m in shared)
    assert abs(separate - shared_minutes - expected) <= 0.1 * (len(made[0]) + len(made[1]))  # rounding of each step


def test_together_a_shared_step_counts_its_measured_figure_over_a_projection():
    """Two reruns sharing a step, one that measured it and one (written later) that only projected
    it: the row of both together counts the measurement; of two measurements, the newer."""
    from aa_harness_bench.performance import table_cost_table

    def record(name: str, finished: str, steps: list[tuple[str, float | None, float | None]]) -> dict:
        return {
            "name": name,
            "experiment": f"experiments/{name}.toml",
            "label": "rerun-x",
            "collections": ["pan19-en"],
            "finished_at": finished,
            "results": {
                "steps": [{"makes": m, "kind": "run", "measured": a, "projected": b} for m, a, b in steps],
                "no_precedent": [],
            },
        }

    measured = record("one", "2026-01-02", [("runs/shared", 1.0, None), ("runs/a", 3.0, None)])
    projected = record("two", "2026-01-03", [("runs/shared", None, 9.0), ("runs/b", 5.0, None)])
    row = next(line for line in table_cost_table([measured, projected]).splitlines() if "together" in line)
    assert [c.strip() for c in row.split("|")[4:8]] == ["9.0", "0.0", "0.0", "9"]  # 1 + 3 + 5, no 9 projected
    newer = record("three", "2026-01-04", [("runs/shared", 2.0, None)])
    row = next(line for line in table_cost_table([measured, newer]).splitlines() if "together" in line)
    assert [c.strip() for c in row.split("|")[4:8]] == ["5.0", "0.0", "0.0", "5"]  # 2 + 3


def test_a_reruns_training_log_in_timings_wins_for_its_model(tmp_path):
    """--timings: a training log read after the experiment's own folders (a rerun's, kept beside its
    results) is the measured figure of the model it trained."""
    import json

    from benchmarks.table_cost import table_cost

    path = ROOT / "experiments" / "table2-public.toml"
    runs = ROOT / "leaderboards" / "runs"
    before = {s["step"]: s for s in table_cost(str(path), runs)["results"]["steps"]}
    step = "train.reranker-q_p_r"
    rerun = next(
        p
        for p in (ROOT / "leaderboards" / "training").glob("reranker-*q_p_r*.train_log.json")
        if before[step]["makes"] == _model_id(p)
    )
    log = json.loads(rerun.read_text())
    for entry in log["log"]:
        if "epoch_seconds" in entry:
            entry["epoch_seconds"] = 344.08
    (tmp_path / "rerun" / "some-model-id").mkdir(parents=True)  # as a store keeps it
    (tmp_path / "rerun" / "some-model-id" / "train_log.json").write_text(json.dumps(log))
    record = table_cost(str(path), runs, timings=[tmp_path / "rerun"])
    after = {s["step"]: s for s in record["results"]["steps"]}
    assert before[step]["measured"] != 5.7 and after[step]["measured"] == 5.7  # 344.08 s
    assert all(after[a]["measured"] == before[a]["measured"] for a in before if a != step)
    assert record["timings"] == [(tmp_path / "rerun").as_posix()]


def _model_id(log_path) -> str:
    import json

    from harness.runs.model_cards import model_id

    return model_id(json.loads(log_path.read_text())["card"])


def test_a_labelled_rerun_gets_its_own_file_and_row_and_is_added_up_alone(tmp_path, monkeypatch):
    """--label: a rerun's record (its own runs folder) is written beside the record's own, not over
    it, and the page shows it as its own row, never summed with the other files' steps."""
    import json

    import pytest

    import benchmarks.table_cost as tc
    from aa_harness_bench.performance import table_cost_table

    monkeypatch.setattr(tc, "RESULTS", tmp_path)
    path = ROOT / "experiments" / "table2-public.toml"
    empty = tmp_path / "runs"
    empty.mkdir()
    assert tc.main([str(path), "--runs-dir", str(empty), "--collections", "pan19-en", "--label", "rerun-x"]) == 0
    record = json.loads((tmp_path / "table-cost-table2-public-pan19-en-rerun-x.json").read_text())
    assert record["label"] == "rerun-x" and record["runs_dir"] == empty.as_posix()
    assert [p.name for p in tmp_path.glob("*.json")] == ["table-cost-table2-public-pan19-en-rerun-x.json"]
    own = tc.table_cost(str(path), ROOT / "leaderboards" / "runs", ["pan19-en"])
    one = tc.table_cost(str(ROOT / "experiments" / "table1-public.toml"), ROOT / "leaderboards" / "runs", ["pan19-en"])
    lines = table_cost_table([own, one, record]).splitlines()
    assert any("`" + record["experiment"] + "`, rerun-x" in line for line in lines)
    together = [line for line in lines if "together" in line]
    assert len(together) == 1 and "rerun-x" not in together[0]  # the two record files, not the rerun
    with pytest.raises(SystemExit):
        tc.main([str(path), "--runs-dir", str(empty), "--label", "../x"])
