"""Experiments as code: experiment files are checked whole before any work (one line naming the
file, the key and what was expected), the step graph orders and refuses cycles, model ids come
from cards, and `aa-harness reproduce` runs what is not done, side by side on several GPUs when
asked, and then nothing."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.cli import main
from harness.experiments.graph import order
from harness.experiments.spec import read_experiment
from harness.runs.model_cards import model_id
from tests.conftest import ROOT

EXPERIMENTS = ROOT / "experiments"

DEMO_RUNS = """
[experiment]
name = "two-baselines"
seeds = [0]

[run.bm25]
system = "bm25"
collections = ["demo"]
{gpus}

[run.char-ngram]
system = "char-ngram"
collections = ["demo"]
{gpus}

[leaderboard]
plots = false
"""


def _write(tmp_path: Path, text: str, name: str = "exp.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _tiny_training(tmp_path: Path, name: str, docs: Path, more: str = "") -> Path:
    """An experiment training sadiri on a tiny BERT over the file `docs` (its sha256 pinned), with
    `more` tables after the training."""
    from harness.experiments.plan import file_sha256

    text = f"""
[experiment]
name = "{name}"
seeds = [0]
[data.train]
file = "{docs.name}"
sha256 = "{file_sha256(docs)}"
[backbones.tiny-bert]
tiny = "bert"
seed = 0
[train.s]
system = "sadiri"
data = "train"
backbone = "tiny-bert"
"""
    return _write(tmp_path, text + more)


def _one_line_error(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("aa-harness: error: "), err
    assert "Traceback" not in err
    return err


# ---- bad input: one line, nothing written ------------------------------------------------------

BAD = [
    (
        "[experiment]\nname = 'x'\nfoo = 1\n[run.a]\nsystem = 'bm25'\ncollections = ['demo']\n",
        "[experiment] unknown key 'foo'",
    ),
    (
        "[experiment]\nname = 'x'\n[run.a]\nsystem = 'bm25'\ncollections = ['demo']\nmodle = 'train.x'\n",
        "[run.a] unknown key 'modle'",
    ),
    (
        "[experiment]\nname = 'x'\n[data.d]\nfile = 'nowhere.jsonl.gz'\nsha256 = '" + "0" * 64 + "'\n"
        "[backbones.b]\ntiny = 'bert'\n[curate.c]\ninputs = ['d']\nembedder = 'b'\n",
        "[data.d] file 'nowhere.jsonl.gz' not found",
    ),
    (
        "[experiment]\nname = 'x'\n[data.d]\ngenerate = 'demo-train'\nsha256 = '" + "0" * 64 + "'\n"
        "[backbones.b]\ntiny = 'bert'\n[curate.c]\ninputs = ['d']\nembedder = 'b'\n",
        "[data.d]",
    ),  # a sha256 that does not match the generated file
    (
        "[experiment]\nname = 'x'\n[data.d]\nfile = 'x.jsonl'\nsha256 = 'abc'\n[run.a]\nsystem = 'bm25'\n"
        "collections = ['demo']\n",
        "[data.d] sha256 must be 64 lowercase hex digits",
    ),
    (
        "[experiment]\nname = 'x'\n[run.a]\nsystem = 'sadiri'\nbackbone = 'nope'\ncollections = ['demo']\n",
        "[run.a] backbone = 'nope' is no [backbones.*] table",
    ),
    (
        "[experiment]\nname = 'x'\n[backbones.b]\nid = 'org/some-model-that-is-not-here'\nrevision = 'main'\n"
        "[run.a]\nsystem = 'sadiri'\nbackbone = 'b'\ncollections = ['demo']\n",
        "[backbones.b] model 'org/some-model",
    ),
    (
        "[experiment]\nname = 'x'\n[backbones.b]\nid = 'org/m'\n[run.a]\nsystem = 'bm25'\ncollections = ['demo']\n",
        "[backbones.b] pin the weights",
    ),
    (
        "[experiment]\nname = 'x'\n[run.a]\nsystem = 'sadiri-v2-reranker'\ncollections = ['demo']\n",
        "[run.a] system 'sadiri-v2-reranker' cannot run",
    ),
    (
        "[experiment]\nname = 'x'\n[rerank.a]\nsystem = 'sadiri-v2-reranker'\nfirst_stage = 'rerank.b'\n"
        "collections = ['demo']\n[rerank.b]\nsystem = 'sadiri-v2-reranker'\nfirst_stage = 'rerank.a'\n"
        "collections = ['demo']\n",
        "the steps form a cycle: rerank.a -> rerank.b -> rerank.a",
    ),
    (
        "[experiment]\nname = 'x'\n[run.a]\nsystem = 'bm25'\ncollections = ['nope']\n",
        "[run.a] collection 'nope' is not registered",
    ),
    (
        "[experiment]\nname = 'x'\n[run.a]\nsystem = 'bm25'\ncollections = ['demo']\nset = { k1 = 'high' }\n",
        "[run.a.set]",
    ),
    (
        "[experiment]\nname = 'x'\n[run.a]\nsystem = 'bm25'\ncollections = ['demo']\ngpus = 2\n",
        "only a train step runs on several GPUs",
    ),
    ("[experiment\nname = 'x'\n", "not valid TOML"),
]


@pytest.mark.parametrize("text,expected", BAD, ids=[e for _, e in BAD])
def test_bad_experiment_files_are_one_line_and_write_nothing(tmp_path, capsys, text, expected, monkeypatch):
    monkeypatch.setenv("AA_HARNESS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    path = _write(tmp_path, text)
    runs = tmp_path / "runs"
    err = _one_line_error(capsys, ["reproduce", str(path), "--runs-dir", str(runs)])
    assert expected in err, err
    assert not runs.exists() and not (tmp_path / "home" / "store" / "models").exists()  # checked before any work


def test_a_missing_experiment_file_and_an_unknown_step_are_one_line(tmp_path, capsys):
    err = _one_line_error(capsys, ["reproduce", str(tmp_path / "none.toml"), "--dry-run"])
    assert "experiment file not found" in err
    path = _write(tmp_path, DEMO_RUNS.format(gpus=""))
    err = _one_line_error(capsys, ["reproduce", str(path), "--only", "train.x", "--dry-run"])
    assert "--only 'train.x' names no step" in err


def test_two_train_steps_of_one_model_are_one_line(tmp_path, capsys, monkeypatch):
    """Steps that differ only in how they train (fast_training) make one model id: side by side they
    would race for one store entry, and in turn the second would be skipped as done."""
    monkeypatch.setenv("AA_HARNESS_HOME", str(tmp_path / "home"))
    smoke = (ROOT / "experiments" / "smoke.toml").read_text(encoding="utf-8")
    assert '[train.retriever]\nsystem = "sadiri-v2-retriever"\ndata = "curate.demo-train"' in smoke
    text = smoke + (
        '\n[train.retriever-plain]\nsystem = "sadiri-v2-retriever"\ndata = "curate.demo-train"\nbackbone = "tiny-qwen3"\n'
        'set = { authors_per_batch = 16, max_length = 128, similarity = "cosine", lr = 1e-3, device = "cpu", '
        "fast_training = false }\ngpus = 0\n"
    )
    path = _write(tmp_path, text)
    err = _one_line_error(capsys, ["reproduce", str(path), "--dry-run", "--runs-dir", str(tmp_path / "runs")])
    assert "[train.retriever] and [train.retriever-plain] train the same model" in err, err
    assert (
        main(["reproduce", str(ROOT / "experiments" / "smoke.toml"), "--dry-run", "--runs-dir", str(tmp_path / "r")])
        == 0
    )


def test_slurm_executor_without_submitit_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "submitit", None)
    path = _write(tmp_path, DEMO_RUNS.format(gpus=""))
    err = _one_line_error(capsys, ["reproduce", str(path), "--runs-dir", str(tmp_path / "runs"), "--executor", "slurm"])
    assert "needs submitit" in err


# ---- the graph and the ids ---------------------------------------------------------------------


def test_steps_come_after_what_they_need():
    exp = read_experiment(EXPERIMENTS / "smoke.toml")
    seq = order(exp)
    for before, after in [
        ("curate.demo-train", "train.sadiri"),
        ("train.retriever", "run.retriever"),
        ("run.retriever", "rerank.reranker"),
        ("train.reranker", "rerank.reranker"),
        ("rerank.reranker", "leaderboard"),
    ]:
        assert seq.index(before) < seq.index(after)


def test_model_id_is_what_decides_the_weights():
    card = {
        "system": "sadiri",
        "recipe": {"lr": 1e-5, "backbone": "b"},
        "training_data": {"sha256": "a" * 64},
        "training_run": {"max_steps": 0, "checkpoint_every": 50},
        "trained_at": "then",
        "commit": "abc",
        "device": "cuda",
    }
    same = {
        **card,
        "trained_at": "now",
        "commit": "def",
        "device": "cpu",
        "training_run": {"max_steps": 0, "checkpoint_every": 0, "micro_batch": 4},
    }
    assert model_id(card) == model_id(same) and model_id(card).startswith("sadiri-")
    for changed in (
        {"recipe": {"lr": 2e-5, "backbone": "b"}},
        {"training_data": {"sha256": "b" * 64}},
        {"training_run": {"max_steps": 3}},
        {"system": "luar"},
    ):
        assert model_id({**card, **changed}) != model_id(card)


@pytest.mark.parametrize("name", ["smoke", "table1-public", "table2-public", "paper-scale"])
def test_committed_experiment_files_check_and_plan(name, capsys, tmp_path):
    """Every committed experiment file reads, its graph orders, and its dry run plans without data."""
    assert main(["reproduce", str(EXPERIMENTS / f"{name}.toml"), "--dry-run", "--runs-dir", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    assert "| step" in out and "steps to run" in out
    assert not (tmp_path / "r").exists()


# ---- running -----------------------------------------------------------------------------------


def test_reproduce_runs_what_is_not_done_then_nothing(tmp_path, capsys):
    path = _write(tmp_path, DEMO_RUNS.format(gpus="gpus = 0"))
    runs = tmp_path / "runs"
    assert main(["reproduce", str(path), "--runs-dir", str(runs), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "3 of 3 steps to run" in out
    assert (runs / "demo" / "bm25" / "seed-0.json").is_file() and (runs / "leaderboard" / "main.md").is_file()
    assert main(["reproduce", str(path), "--runs-dir", str(runs)]) == 0
    assert "nothing to do, all 3 steps are done or not needed" in capsys.readouterr().out
    # a result made with another config is not this step's: the step is to run again (and refuses to mix)
    res = runs / "demo" / "bm25" / "seed-0.json"
    path.write_text(path.read_text().replace('system = "bm25"\n', 'system = "bm25"\nset = { k1 = 0.9 }\n'))
    assert main(["reproduce", str(path), "--runs-dir", str(runs), "--dry-run"]) == 0
    assert "config differs: k1" in capsys.readouterr().out
    assert json.loads(res.read_text())["config"]["k1"] != 0.9


def test_a_step_cut_off_half_way_makes_only_the_seeds_not_current(tmp_path, corpora, caplog):
    """A run step over two collections whose first is current runs the second alone, and of a
    collection half done only the seeds without a current result: what is current is not written
    again."""
    path = _write(
        tmp_path,
        '[experiment]\nname = "two"\nseeds = [0, 1001]\n[run.bm25]\nsystem = "bm25"\ncollections = ["demo", "pan18-en"]\n',
    )
    runs = tmp_path / "runs"
    argv = ["reproduce", str(path), "--runs-dir", str(runs), "--data-dir", str(corpora), "--no-progress"]
    assert main(argv) == 0
    kept = [runs / "demo" / "bm25" / f"seed-{s}.json" for s in (0, 1001)] + [runs / "pan18-en" / "bm25" / "seed-0.json"]
    redone = runs / "pan18-en" / "bm25" / "seed-1001.json"
    before = [p.stat().st_mtime_ns for p in kept]
    redone.unlink()
    with caplog.at_level(logging.INFO, logger="harness.experiments.actions"):
        assert main(argv) == 0
    assert redone.is_file() and [p.stat().st_mtime_ns for p in kept] == before
    assert any("demo current; running pan18-en seed 1001" in r.getMessage() for r in caplog.records)
    # results made with another config (an earlier model, say) are replaced, every seed of them
    path.write_text(path.read_text().replace('system = "bm25"\n', 'system = "bm25"\nset = { k1 = 0.9 }\n'))
    assert main(argv) == 0
    assert {json.loads(p.read_text())["config"]["k1"] for p in [*kept, redone]} == {0.9}


def test_side_by_side_starts_the_longest_chain_first():
    """A long training and the run after it go before short independent runs; the graph order
    stays among equals, and a step still comes after the steps it needs."""
    from harness.experiments.executors import critical_first

    todo = ["run.short", "train.big", "run.other", "run.big"]
    deps = {"run.big": ["train.big"]}
    minutes = {"run.short": 1.0, "train.big": 6.0, "run.other": 1.0, "run.big": 2.0}
    got = critical_first(todo, deps, minutes)
    assert got == ["train.big", "run.big", "run.short", "run.other"]
    assert critical_first(todo, deps, {}) == todo


def test_side_by_side_steps_get_their_own_gpu(tmp_path, capsys):
    """--gpus 2: the two run steps go to two processes, each told its GPU by CUDA_VISIBLE_DEVICES."""
    path = _write(tmp_path, DEMO_RUNS.format(gpus="gpus = 1"))
    runs = tmp_path / "runs"
    assert main(["reproduce", str(path), "--runs-dir", str(runs), "--gpus", "2"]) == 0
    out = capsys.readouterr().out
    assert "run.bm25: done" in out and "run.char-ngram: done" in out and "leaderboard: done" in out
    logs = runs / ".reproduce" / "logs"
    assert {p.name for p in logs.glob("*.log")} == {"run.bm25.log", "run.char-ngram.log", "leaderboard.log"}
    assert (runs / "demo" / "char-ngram" / "seed-0.json").is_file()


def test_side_by_side_steps_share_the_hosts_cores():
    """Each of N steps side by side sizes its thread pools to its share of the cores, at least one;
    a pool the user sized is left to the user."""
    from harness.experiments.executors import THREAD_POOLS, thread_share

    assert thread_share(4, 64, {}) == dict.fromkeys(THREAD_POOLS, "16")
    assert thread_share(3, 2, {}) == dict.fromkeys(THREAD_POOLS, "1")
    assert thread_share(2, 32, {"OMP_NUM_THREADS": "8"}) == {n: "16" for n in THREAD_POOLS if n != "OMP_NUM_THREADS"}


def test_side_by_side_processes_are_given_their_share(tmp_path, monkeypatch):
    """What the step processes are started with: their GPU and their share of the host's cores."""
    from harness.experiments import executors

    path = _write(tmp_path, DEMO_RUNS.format(gpus="gpus = 1"))
    for name in executors.THREAD_POOLS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(executors, "host_cores", lambda: 8)
    envs = []

    class Done:
        returncode = 0

        def __init__(self, command, env, **kwargs):
            envs.append(env)

        def poll(self):
            return 0

    monkeypatch.setattr(executors, "subprocess", SimpleNamespace(Popen=Done, STDOUT=-2, DEVNULL=-3))
    assert main(["reproduce", str(path), "--runs-dir", str(tmp_path / "runs"), "--gpus", "2", "--only", "run"]) == 0
    assert sorted(e["CUDA_VISIBLE_DEVICES"] for e in envs) == ["0", "1"]
    assert all(e[name] == "4" for e in envs for name in executors.THREAD_POOLS)


def test_side_by_side_uses_the_gpus_it_is_given(tmp_path, monkeypatch, caplog):
    """Two reproduce commands on one machine, each given its own CUDA_VISIBLE_DEVICES, hand out
    only those cards; asking for more than are named is one line."""
    path = _write(tmp_path, DEMO_RUNS.format(gpus="gpus = 1"))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5,7")
    with caplog.at_level(logging.INFO, logger="harness.experiments.executors"):
        assert main(["reproduce", str(path), "--runs-dir", str(tmp_path / "runs"), "--gpus", "2"]) == 0
    started = sorted(
        r.getMessage().split(" started on ")[1].split(" ")[1]
        for r in caplog.records
        if "started on GPU" in r.getMessage()
    )
    assert started == ["5", "7"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    assert main(["reproduce", str(path), "--runs-dir", str(tmp_path / "again"), "--gpus", "2"]) == 2


def _slurm_up() -> bool:
    if shutil.which("sinfo") is None:
        return False
    try:
        return subprocess.run(["sinfo", "-h"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.mark.slow
@pytest.mark.parametrize("executor", ["local", "slurm"])
def test_smoke_experiment_end_to_end(tmp_path, executor, capsys, monkeypatch):
    """The smoke experiment on tiny models: curate, train three systems, run, rerank and the
    leaderboard, under the local executor and as Slurm jobs; run again, it does nothing."""
    pytest.importorskip("torch")
    if executor == "slurm" and not _slurm_up():
        if os.environ.get("AA_HARNESS_REQUIRE_SLURM"):
            pytest.fail("AA_HARNESS_REQUIRE_SLURM is set but no Slurm cluster answers (sinfo)")
        pytest.skip("no Slurm cluster here (sinfo)")
    monkeypatch.setenv("AA_HARNESS_STORE", str(tmp_path / "store"))
    runs = tmp_path / "runs"
    monkeypatch.chdir(tmp_path)  # Slurm jobs start where the command was given
    argv = [
        "reproduce",
        str(EXPERIMENTS / "smoke.toml"),
        "--runs-dir",
        str(runs),
        "--executor",
        executor,
        "--no-progress",
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "9 of 9 steps to run" in out and "leaderboard: done" in out
    board = (runs / "leaderboard" / "main.md").read_text()
    for run in ("bm25", "sadiri", "retriever", "reranker"):
        assert (runs / "demo" / run / "seed-0.json").is_file()
        assert f"`{run}`" in board or f"| {run} " in board or run in board
    cards = sorted((tmp_path / "store" / "models").glob("*/model/aa_model.json"))
    assert len(cards) == 3 and all(model_id(json.loads(c.read_text())) == c.parent.parent.name for c in cards)
    assert main(argv) == 0
    assert "nothing to do, all 9 steps are done or not needed" in capsys.readouterr().out
    assert main(["models"]) == 0
    listed = capsys.readouterr().out
    assert all(c.parent.parent.name in listed for c in cards)


def test_no_progress_silences_the_bars_inside_a_training_step(tmp_path, monkeypatch):
    """--no-progress reaches a train step's own bars (its epochs, its hard-negative mining), not
    only a run's: a step run in its own process writes no bars into its log."""
    import harness.runs.train_job as train_job_module
    from harness.experiments.actions import perform
    from harness.experiments.plan import Plan
    from harness.experiments.reproduce import load
    from harness.foundation import progress
    from harness.plugins import load_registry

    corpora = tmp_path / "corpora"
    corpora.mkdir()
    docs = corpora / "train.jsonl"
    docs.write_text('{"documentID": "d0", "authorIDs": ["a0"], "fullText": "t", "genre": "g"}\n')
    exp_path = _tiny_training(tmp_path, "quiet", docs)
    monkeypatch.setenv("AA_HARNESS_STORE", str(tmp_path / "store"))
    registry = load_registry()
    plan = Plan(load(exp_path, registry), registry, tmp_path / "runs", data_dir=str(corpora))
    seen: list[bool] = []

    def fake_train_job(*args, **kwargs):
        seen.append(progress.is_enabled())
        raise RuntimeError("stop here")

    monkeypatch.setattr(train_job_module, "train_job", fake_train_job)
    for on in (False, True):
        with pytest.raises(RuntimeError, match="stop here"):
            perform(plan, "train.s", progress=on)
    assert seen == [False, True]


def test_stage_packs_in_chunks_and_unpacks_only_when_whole(tmp_path, capsys, monkeypatch):
    """Backbones and data cut into chunks; unpack waits for the last chunk, then every file's sha256 holds."""
    from harness.experiments.plan import file_sha256

    corpora = tmp_path / "corpora"
    corpora.mkdir()
    data = corpora / "train.jsonl"
    data.write_bytes(os.urandom(3 << 20))
    model = tmp_path / "models" / "tiny-enc"
    (model / "sub").mkdir(parents=True)
    (model / "config.json").write_text("{}")
    (model / "model.safetensors").write_bytes(os.urandom((2 << 20) + 7))
    (model / "sub" / "vocab.txt").write_text("a\nb\n")
    monkeypatch.setenv("AA_HARNESS_MODEL_DIR", str(tmp_path / "models"))
    exp = _write(
        tmp_path,
        f"""
[experiment]
name = "staged"
[data.train]
file = "train.jsonl"
sha256 = "{file_sha256(data)}"
[backbones.enc]
id = "org/tiny-enc"
file = "model.safetensors"
sha256 = "{file_sha256(model / "model.safetensors")}"
[run.a]
system = "bm25"
collections = ["demo"]
""",
    )
    out = tmp_path / "stage"
    assert (
        main(["stage", "pack", str(out), "--experiment", str(exp), "--data-dir", str(corpora), "--chunk-mib", "1"]) == 0
    )
    chunks = sorted(out.glob("stage.0*"))
    assert len(chunks) == 6 and all(c.stat().st_size <= 1 << 20 for c in chunks)
    there = tmp_path / "there"
    last = chunks[-1].read_bytes()
    chunks[-1].unlink()
    assert main(["stage", "unpack", str(out), "--dest", str(there)]) == 3
    assert chunks[-1].name in capsys.readouterr().out and not there.exists()
    chunks[-1].write_bytes(last)
    assert main(["stage", "unpack", str(out), "--dest", str(there)]) == 0
    assert file_sha256(there / "corpora" / "train.jsonl") == file_sha256(data)
    for f in ("config.json", "model.safetensors", "sub/vocab.txt"):
        assert (there / "models" / "tiny-enc" / f).read_bytes() == (model / f).read_bytes()
    chunks[0].write_bytes(b"x" + chunks[0].read_bytes()[1:])
    assert "sha256 differs" in _one_line_error(capsys, ["stage", "unpack", str(out), "--dest", str(there)])


def _dry_run_states(capsys, experiment: str, runs: Path, *extra: str) -> dict[str, tuple[str, str, str]]:
    """step -> (state, why, GPU-minutes) from `reproduce FILE --dry-run` over the runs folder."""
    assert main(["reproduce", str(EXPERIMENTS / experiment), "--dry-run", "--runs-dir", str(runs), *extra]) == 0
    rows = [line.split("|") for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    return {r[1].strip(): (r[2].strip(), r[3].strip(), r[4].strip()) for r in rows if r[1].strip() != "step"}


def test_table_1_is_done_on_the_committed_record(capsys):
    """Table 1's dry run on the committed runs lists nothing to run: every run current, no curation
    or training needed (the cards give the ids its train steps would make; the store here is
    empty), its pages made from these results."""
    rows = _dry_run_states(capsys, "table1-public.toml", ROOT / "leaderboards" / "runs")
    for step, (state, why, _) in rows.items():
        if step.startswith(("curate.", "train.")):
            assert state == "not needed", (step, why)
        else:
            assert state == "done", (step, why)


def test_a_run_made_on_a_split_since_rebuilt_is_still_to_run_and_says_so(tmp_path, capsys):
    """The untrained 1.5B's pan19-en seeds made on pan19-en v1 (kept apart in stale/): to run again."""
    runs = tmp_path / "runs"
    shutil.copytree(ROOT / "leaderboards" / "stale" / "gguf-not-loaded" / "pan19-en", runs / "pan19-en")
    args = ("--collections", "pan19-en", "--only", "run.qwen2.5-1.5b-untrained")
    state, why, _ = _dry_run_states(capsys, "table1-public.toml", runs, *args)["run.qwen2.5-1.5b-untrained"]
    assert state == "to run" and "pan19-en seed 0 (made on another split)" in why


def test_collections_limit_run_steps_and_travel_with_each_step(tmp_path, capsys):
    """--collections: run steps only on the named collections (a name no step runs on is one line),
    and a step run in its own process is given the same limit."""
    from harness.experiments.executors import step_command

    path = _write(
        tmp_path,
        DEMO_RUNS.format(gpus="gpus = 0").replace('collections = ["demo"]', 'collections = ["demo", "pan18-en"]'),
    )
    runs = tmp_path / "runs"
    assert main(["reproduce", str(path), "--runs-dir", str(runs), "--collections", "demo", "--no-progress"]) == 0
    assert "3 of 3 steps to run" in capsys.readouterr().out
    assert (runs / "demo" / "bm25" / "seed-0.json").is_file() and not (runs / "pan18-en").exists()
    assert main(["reproduce", str(path), "--runs-dir", str(runs), "--collections", "demo"]) == 0
    assert "nothing to do" in capsys.readouterr().out
    assert main(["reproduce", str(path), "--runs-dir", str(runs), "--dry-run"]) == 0
    assert "no current result for pan18-en seed 0" in capsys.readouterr().out
    err = _one_line_error(capsys, ["reproduce", str(path), "--runs-dir", str(runs), "--collections", "reddit-xsub"])
    assert "--collections reddit-xsub: no step runs on it" in err
    command = step_command(read_experiment(path), "run.bm25", runs, 1, collections=["demo"])
    assert command[-2:] == ["--collections", "demo"]


def test_only_the_data_the_steps_to_run_read_must_be_present(tmp_path, capsys):
    """A training file nothing left to run reads (its curation or model already made) need not be
    on this machine; one a step to run reads is checked before any work."""
    text = DEMO_RUNS.format(gpus="gpus = 0").replace(
        "[run.bm25]", '[data.train]\nfile = "absent.jsonl.gz"\nsha256 = "' + "0" * 64 + '"\n\n[run.bm25]', 1
    )
    path = _write(tmp_path, text)
    runs = tmp_path / "runs"
    assert main(["reproduce", str(path), "--runs-dir", str(runs), "--no-progress"]) == 0
    assert (runs / "demo" / "bm25" / "seed-0.json").is_file()
    capsys.readouterr()
    path.write_text(
        text + '\n[train.sadiri]\nsystem = "sadiri"\ndata = "train"\nbackbone = "tiny"\n'
        '\n[backbones.tiny]\ntiny = "bert"\n',
        encoding="utf-8",
    )
    err = _one_line_error(capsys, ["reproduce", str(path), "--runs-dir", str(runs), "--only", "train.sadiri"])
    assert "[data.train] file 'absent.jsonl.gz' not found" in err


def test_a_run_without_the_leaderboard_step_names_no_pages(tmp_path, capsys):
    path = _write(tmp_path, DEMO_RUNS.format(gpus="gpus = 0"))
    assert main(["reproduce", str(path), "--runs-dir", str(tmp_path / "runs"), "--only", "run.bm25"]) == 0
    out = capsys.readouterr().out
    assert "1 steps done" in out and "the pages" not in out


def test_stage_carries_the_files_of_the_collections_the_steps_run_on(tmp_path, capsys):
    """A GPU machine without the corpora gets the evaluation collections' files too (CollectionSpec.files)."""
    corpora = tmp_path / "corpora"
    corpora.mkdir()
    for f in ("pan18-en.jsonl.gz", "blogs-background.jsonl.gz", "enron.jsonl.gz"):
        (corpora / f).write_bytes(os.urandom(1000))
    exp = _write(tmp_path, '[experiment]\nname = "c"\n[run.a]\nsystem = "bm25"\ncollections = ["demo", "pan18-en"]\n')
    out = tmp_path / "stage"
    assert main(["stage", "pack", str(out), "--experiment", str(exp), "--data-dir", str(corpora)]) == 0
    assert main(["stage", "unpack", str(out), "--dest", str(tmp_path / "there")]) == 0
    got = sorted(p.name for p in (tmp_path / "there" / "corpora").iterdir())
    assert got == ["blogs-background.jsonl.gz", "enron.jsonl.gz", "pan18-en.jsonl.gz"]
    (corpora / "enron.jsonl.gz").unlink()
    err = _one_line_error(
        capsys, ["stage", "pack", str(tmp_path / "again"), "--experiment", str(exp), "--data-dir", str(corpora)]
    )
    assert "collection 'pan18-en': its file enron.jsonl.gz is not in" in err and not (tmp_path / "again").exists()


def test_stage_naming_steps_carries_their_backbones_and_collections(tmp_path, monkeypatch):
    """--only with steps alone: the backbones those steps load and the files of the collections they
    run on travel, the other step's do not; a collection named as well narrows them to it."""
    corpora = tmp_path / "corpora"
    corpora.mkdir()
    for f in ("pan18-en.jsonl.gz", "blogs-background.jsonl.gz", "enron.jsonl.gz", "reddit-xsub.jsonl.gz"):
        (corpora / f).write_bytes(os.urandom(100))
    for name in ("enc-a", "enc-b"):
        (tmp_path / "models" / name).mkdir(parents=True)
        (tmp_path / "models" / name / "config.json").write_text("{}")
    monkeypatch.setenv("AA_HARNESS_MODEL_DIR", str(tmp_path / "models"))
    exp = _write(
        tmp_path,
        """
[experiment]
name = "named"
[backbones.a]
id = "org/enc-a"
revision = "main"
[backbones.b]
id = "org/enc-b"
revision = "main"
[run.a]
system = "sbert"
backbone = "a"
collections = ["pan18-en", "demo"]
[run.b]
system = "sbert"
backbone = "b"
collections = ["reddit-xsub"]
""",
    )

    def packed(*only: str) -> list[str]:
        out = tmp_path / "-".join(only)
        argv = ["stage", "pack", str(out), "--experiment", str(exp), "--data-dir", str(corpora)]
        assert main([*argv, "--runs-dir", str(tmp_path / "runs"), "--only", *only]) == 0
        return sorted(f["path"] for f in json.loads((out / "stage.json").read_text())["files"])

    pan18 = ["corpora/blogs-background.jsonl.gz", "corpora/enron.jsonl.gz", "corpora/pan18-en.jsonl.gz"]
    assert packed("run.a") == pan18 + ["models/enc-a/config.json"]
    assert packed("run.a", "demo") == ["models/enc-a/config.json"]
    assert packed("run.b") == ["corpora/reddit-xsub.jsonl.gz", "models/enc-b/config.json"]


def test_stage_carries_the_trained_models_the_steps_left_to_run_need(tmp_path, capsys, monkeypatch):
    """A model trained in an earlier allotment and kept in the store travels with the stage, so the
    machine there runs the steps that read it without training it again; one that is not made
    (or that nothing left to run reads) does not."""
    from harness.experiments.plan import Plan
    from harness.experiments.reproduce import load
    from harness.plugins import load_registry

    corpora = tmp_path / "corpora"
    corpora.mkdir()
    docs = corpora / "train.jsonl"
    docs.write_text(
        "".join(
            json.dumps(
                {"documentID": f"d{i}", "authorIDs": [f"a{i % 3}"], "fullText": f"text number {i}", "genre": "g"}
            )
            + "\n"
            for i in range(6)
        )
    )
    monkeypatch.setenv("AA_HARNESS_STORE", str(tmp_path / "store"))
    exp_path = _tiny_training(
        tmp_path,
        "carried",
        docs,
        """[run.s]
system = "sadiri"
model = "train.s"
collections = ["demo"]
[run.bm25]
system = "bm25"
collections = ["demo"]
""",
    )
    registry = load_registry()
    plan = Plan(load(exp_path, registry), registry, tmp_path / "runs", data_dir=str(corpora))
    folder = plan.model_folder(str(plan.model_id(plan.exp.steps["train.s"])))
    argv = [
        "stage",
        "pack",
        "--experiment",
        str(exp_path),
        "--data-dir",
        str(corpora),
        "--runs-dir",
        str(tmp_path / "runs"),
    ]
    assert main(argv[:2] + [str(tmp_path / "before")] + argv[2:]) == 0
    manifest = json.loads((tmp_path / "before" / "stage.json").read_text())
    assert not any(f["path"].startswith("store/") for f in manifest["files"])
    (folder / "model").mkdir(parents=True)
    (folder / "model" / "aa_model.json").write_text("{}")
    (folder / "model" / "weights.bin").write_bytes(os.urandom(5000))
    assert main(argv[:2] + [str(tmp_path / "stage")] + argv[2:]) == 0
    assert main(["stage", "unpack", str(tmp_path / "stage"), "--dest", str(tmp_path / "there")]) == 0
    assert "AA_HARNESS_STORE at" in capsys.readouterr().out
    got = tmp_path / "there" / "store" / "models" / folder.name / "model"
    assert (got / "weights.bin").read_bytes() == (folder / "model" / "weights.bin").read_bytes()
    # under --only: what the steps named read, and a done step named; naming no step at all (data, a
    # backbone, a collection), what every step left to run reads
    for only, carried in ((["run.bm25"], False), (["run.s"], True), (["train.s"], True), (["train", "demo"], True)):
        out = tmp_path / f"only-{'-'.join(only)}"
        assert main(argv[:2] + [str(out)] + argv[2:] + ["--only", *only]) == 0
        files = json.loads((out / "stage.json").read_text())["files"]
        assert any(f["path"].endswith("model/weights.bin") for f in files) is carried, only
    # a done step named travels also where no step left to run reads it (the same training, alone)
    alone = _write(tmp_path, exp_path.read_text().split("[run.s]")[0].replace('"carried"', '"alone"'), "alone.toml")
    out = tmp_path / "alone-named"
    assert main(argv[:2] + [str(out)] + ["--experiment", str(alone)] + argv[4:] + ["--only", "train.s"]) == 0
    files = json.loads((out / "stage.json").read_text())["files"]
    assert any(f["path"].endswith("model/weights.bin") for f in files)


def test_the_dry_run_prices_what_is_done_as_measured_and_what_is_left_as_projected(tmp_path, capsys):
    """The mpnet runs on the headline collections, two of three of them done on a GPU: the done steps
    show the minutes their results recorded, the trainings their logs' epochs; pan19-en, left, a
    projection from the committed precedents."""
    runs = tmp_path / "runs"
    for c in ("reddit-xsub", "blogs-xtopic"):
        for run in ("bm25", "sadiri-mpnet"):
            shutil.copytree(ROOT / "leaderboards" / "runs" / c / run, runs / c / run)
    args = ("--collections", "reddit-xsub", "blogs-xtopic", "pan19-en", "--only", "run.bm25", "run.sadiri-mpnet")
    rows = _dry_run_states(capsys, "table1-public.toml", runs, *args)
    assert rows["run.sadiri-mpnet"][0] == "to run" and rows["run.sadiri-mpnet"][2].endswith(" projected")
    assert "pan19-en seed 0" in rows["run.sadiri-mpnet"][1] and "reddit-xsub" not in rows["run.sadiri-mpnet"][1]
    assert rows["train.sadiri-mpnet"][2].endswith(" measured")
    assert rows["run.bm25"][2] == "—"  # bm25 runs on a CPU
    done = _dry_run_states(capsys, "table1-public.toml", runs, "--collections", "reddit-xsub", "blogs-xtopic")
    assert done["run.sadiri-mpnet"][0] == "done" and done["run.sadiri-mpnet"][2].endswith(" measured")


def test_stage_carries_the_results_a_step_left_half_done_reads(tmp_path, capsys, monkeypatch):
    """Table 2's n(r) rerank with two of its four blogs-xtopic-all seeds done: the stage carries
    those two seeds and the first stage's four (results and rankings), so the machine there
    verifies them and makes only the two left."""
    import hashlib

    from harness.experiments.plan import Plan

    # the reranker's backbone travels too: a stand-in folder, its pinned sha256 not checked here
    backbone = tmp_path / "models" / "Qwen2.5-Coder-0.5B-Instruct-GGUF"
    backbone.mkdir(parents=True)
    (backbone / "config.json").write_text("{}")
    monkeypatch.setenv("AA_HARNESS_MODEL_DIR", str(tmp_path / "models"))
    monkeypatch.setattr(Plan, "check_backbone", lambda self, name: None)

    step = "rerank.sadiri-v2-qwen2.5-1.5b-cosine-b16-lr1e-4+reranker-r-b4-all-authors"
    first = "sadiri-v2-qwen2.5-1.5b-cosine-b16-lr1e-4"
    names = {s: [f"seed-{s}.json", f"seed-{s}.rankings.jsonl.gz"] for s in (0, 1001, 2001, 3001)}
    have = [f"blogs-xtopic-all/{step.removeprefix('rerank.')}/{n}" for s in (0, 1001) for n in names[s]]
    have += [f"blogs-xtopic-all/{first}/{n}" for s in names for n in names[s]]
    runs = tmp_path / "runs"
    for name in have:  # from the committed record
        (runs / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "leaderboards" / "runs" / name, runs / name)
    corpora = tmp_path / "corpora"
    corpora.mkdir()
    (corpora / "blogs-xtopic.jsonl.gz").write_bytes(os.urandom(100))  # the collection's file travels too
    out, there = tmp_path / "stage", tmp_path / "there"
    args = ["--experiment", str(EXPERIMENTS / "table2-public.toml"), "--runs-dir", str(runs)]
    args += ["--data-dir", str(corpora), "--only", step, "blogs-xtopic-all"]
    assert main(["stage", "pack", str(out), *args]) == 0
    assert main(["stage", "unpack", str(out), "--dest", str(there)]) == 0
    assert f"copy {there / 'runs'} into the runs folder there" in capsys.readouterr().out
    got = sorted(str(p.relative_to(there / "runs")) for p in (there / "runs").rglob("*") if p.is_file())
    assert got == sorted(have)
    for name in got:
        assert (
            hashlib.sha256((there / "runs" / name).read_bytes()).digest()
            == hashlib.sha256((runs / name).read_bytes()).digest()
        )
