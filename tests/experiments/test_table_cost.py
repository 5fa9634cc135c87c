"""benchmarks/table_cost.py: an experiment's GPU-minutes, measured for what is done and projected
for what is left, as `reproduce --dry-run` judges done; the performance page shows it."""

from __future__ import annotations

from tests.conftest import ROOT


def test_table_cost_splits_done_from_left_as_reproduce_does(tmp_path):
    from benchmarks.table_cost import table_cost
    from harness.experiments.plan import Plan
    from harness.experiments.reproduce import load
    from harness.plugins import load_registry
    from harness.reports.performance import table_cost_table

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
            assert (s["measured"] is not None) <= (len(s["left"]) < len(exp.steps[address].collections))
    assert steps["run.bm25"]["measured"] is None  # a CPU run costs no GPU-minutes
    total = sum(s["measured"] or 0 for s in steps.values())
    assert record["results"]["measured_gpu_minutes"] == round(total, 1)
    assert "`" + record["experiment"] + "`" in table_cost_table([record])
