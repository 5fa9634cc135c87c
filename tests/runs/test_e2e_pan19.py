"""End to end on the real pan19-en collection (needs the public corpora, $AA_HARNESS_CORPORA): the committed
CPU results are exactly what the code computes now."""

import pytest

from harness.plugins import load_registry
from harness.runs.results import read_result
from harness.runs.run_job import RunJob, run_job
from tests.conftest import RECORD, ROOT


@pytest.mark.slow
@pytest.mark.parametrize("system,seeds", [("bm25", [0, 1001, 2001, 3001]), ("char-ngram", [2001])])
def test_pan19_results_reproduce(corpora, tmp_path, system, seeds):
    job = RunJob(
        systems=[system],
        collection="pan19-en",
        seeds=seeds,
        data_dir=str(corpora),
        runs_dir=tmp_path,
        splits_dir=RECORD,
        progress=False,
    )
    run_job(load_registry(), job, log=lambda *_: None)
    for seed in seeds:
        mine = read_result(tmp_path / "pan19-en" / system / f"seed-{seed}.json")
        committed = read_result(ROOT / "leaderboards" / "runs" / "pan19-en" / system / f"seed-{seed}.json")
        assert mine["split_sha256"] == committed["split_sha256"]
        assert mine["metrics"] == committed["metrics"]
        assert mine["first_needle_rank"] == committed["first_needle_rank"]
