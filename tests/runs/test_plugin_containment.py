"""Plugin code stays inside its own system's run: document copies, every exit caught, encoders held
to their contract, results written where the user said."""

from __future__ import annotations

import dataclasses
import os
import signal
import sys

import numpy as np
import pytest

from harness.hookspecs import hookimpl
from harness.specs import SystemSpec
from tests.conftest import ROOT, doc, write_jsonl
from tests.hostile import hostile, one_line_error, run_cli

EXAMPLE_SRC = ROOT / "examples" / "aa-harness-example" / "src"


@dataclasses.dataclass(frozen=True)
class FakeConfig:
    pass


@dataclasses.dataclass(frozen=True)
class FakeBatchConfig:
    batch_size: int = 16


class Act:
    """What the fake systems do; set by each test."""

    build = None
    rank = None
    encode = None
    describe = None
    rerank = None


class FakeRanker:
    def __init__(self, config):
        if Act.build:
            Act.build()

    def rank(self, queries, candidates, k):
        out = {q.documentID: [(c.documentID, 0.0) for c in candidates] for q in queries}
        if Act.rank:  # after its answer: what it does to the documents can only harm the others
            Act.rank(queries, candidates)
        return out

    def describe(self):
        if Act.describe:
            Act.describe()
        return {}


class FakeEncoder:
    def __init__(self, config):
        if Act.build:
            Act.build()

    def encode(self, documents):
        if Act.encode:
            return Act.encode(documents)
        return np.stack([_honest(d.fullText) for d in documents]) if documents else np.zeros((0, 8))


class FakeReranker:
    def __init__(self, config):
        pass

    def rerank(self, queries, candidate_lists):
        if Act.rerank:
            Act.rerank()
        return [np.zeros(len(c)) for c in candidate_lists]


def _honest(text: str) -> np.ndarray:
    v = np.array([text.count(ch) for ch in "etaoinsr"], dtype=np.float64) + 1
    return v / np.linalg.norm(v)


class Plugin:
    @hookimpl
    def register_systems(self, register):
        here = __name__
        register(SystemSpec("fake-ranker", f"{here}:FakeRanker", f"{here}:FakeConfig", capabilities=("rank",)))
        register(SystemSpec("fake-encoder", f"{here}:FakeEncoder", f"{here}:FakeConfig", capabilities=("encode",)))
        register(
            SystemSpec("fake-batch-encoder", f"{here}:FakeEncoder", f"{here}:FakeBatchConfig", capabilities=("encode",))
        )
        register(SystemSpec("fake-reranker", f"{here}:FakeReranker", f"{here}:FakeConfig", capabilities=("rerank",)))


@pytest.fixture
def fake(monkeypatch):
    import harness.cli
    from harness.plugins import load_registry, plugin_manager

    for k in ("build", "rank", "encode", "describe", "rerank"):
        setattr(Act, k, None)
    reg = load_registry(plugin_manager(entrypoints=False, extra=(Plugin(),)))
    monkeypatch.setattr(harness.cli, "_registry", lambda: reg)
    yield reg


@pytest.fixture
def coll(tmp_path):
    recs, i = [], 0
    for a in range(8):
        for g in ("g1", "g2", "g3")[: 2 + a % 2]:
            for _ in range(2):
                recs.append(doc(i, f"a{a}", g, f"text {i} by a{a} in {g} " + "e" * (a + 1) + " t" * (i % 5)))
                i += 1
    return write_jsonl(tmp_path / "tiny.jsonl", recs)


def _base(tmp_path, coll):
    return [
        "--collection",
        coll,
        "--runs-dir",
        tmp_path / "runs",
        "--splits-dir",
        tmp_path / "splits",
        "--seeds",
        "0",
        "--no-progress",
    ]


def _s8(tmp_path, run):
    import json

    return json.loads((tmp_path / "runs" / "tiny" / run / "seed-0.json").read_text())["metrics"]


# --- each system gets its own copies of the documents ---------------------------------------------------


def _rewrite(kind):
    def act(*lists):
        for docs in lists:
            for i, d in enumerate(docs):
                if kind == "text":
                    object.__setattr__(d, "fullText", "same text for everyone")
                elif kind == "authors":
                    object.__setattr__(d, "authorIDs", ("zz",))
                elif kind == "genre":
                    object.__setattr__(d, "genre", "g1")
                elif kind == "id":
                    object.__setattr__(d, "documentID", f"renamed{i}")
                elif kind == "id swap" and i % 2 and i:
                    a, b = docs[i - 1], d
                    ia, ib = a.documentID, b.documentID
                    object.__setattr__(a, "documentID", ib)
                    object.__setattr__(b, "documentID", ia)
                elif kind == "extra":
                    d.extra["injected"] = True
                elif kind == "list emptied" and i == 0:
                    docs.clear()
                    break

    return act


KINDS = ["text", "authors", "genre", "id", "id swap", "extra", "list emptied"]


@hostile("document rewriting", "held")
@pytest.mark.parametrize("kind", KINDS)
def test_a_ranker_rewriting_its_documents_cannot_change_the_next_system(fake, tmp_path, coll, capsys, kind):
    """A ranker that rewrote the shared documents once took the following bm25 from 0.067 to 0.000."""
    base = _base(tmp_path, coll)
    assert run_cli(capsys, "run", "bm25", *base, "--name", "alone")[0] == 0
    Act.rank = _rewrite(kind)
    run_cli(capsys, "run", "fake-ranker", "bm25", *base)
    assert _s8(tmp_path, "bm25") == _s8(tmp_path, "alone")


@hostile("document rewriting", "held")
@pytest.mark.parametrize("kind", KINDS)
def test_an_encoder_rewriting_its_documents_changes_nothing_it_is_not_asked(fake, tmp_path, coll, capsys, kind):
    base = _base(tmp_path, coll)
    assert run_cli(capsys, "run", "fake-encoder", *base, "--name", "clean")[0] == 0

    def encode(docs):
        vecs = np.stack([_honest(d.fullText) for d in docs])
        _rewrite(kind)(docs)
        return vecs

    Act.encode = encode
    assert run_cli(capsys, "run", "fake-encoder", "bm25", *base, "--name", "dirty")[0] == 2  # --name needs one system
    assert run_cli(capsys, "run", "fake-encoder", *base, "--name", "dirty")[0] == 0
    assert run_cli(capsys, "run", "bm25", *base)[0] == 0
    assert _s8(tmp_path, "dirty") == _s8(tmp_path, "clean")
    assert run_cli(capsys, "run", "bm25", *base, "--name", "bm25-alone")[0] == 0
    assert _s8(tmp_path, "bm25") == _s8(tmp_path, "bm25-alone")


# --- every way out of plugin code is that system's one-line error ----------------------------------------


class Custom(BaseException):
    pass


EXITS = {
    "sys.exit(0)": lambda *a: sys.exit(0),
    "sys.exit(3)": lambda *a: sys.exit(3),
    "sys.exit('bye')": lambda *a: sys.exit("bye"),
    "raise SystemExit": lambda *a: (_ for _ in ()).throw(SystemExit()),
    "KeyboardInterrupt without Ctrl-C": lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()),
    "GeneratorExit": lambda *a: (_ for _ in ()).throw(GeneratorExit()),
    "custom BaseException": lambda *a: (_ for _ in ()).throw(Custom("x")),
    "RecursionError": lambda *a: (_ for _ in ()).throw(RecursionError("deep")),
}
ENTRY = {
    "build": ("fake-ranker", "build"),
    "rank": ("fake-ranker", "rank"),
    "describe": ("fake-ranker", "describe"),
    "encode": ("fake-encoder", "encode"),
    "rerank": ("fake-reranker", "rerank"),
}


@hostile("plugin exits", "clear error")
@pytest.mark.parametrize("entry", sorted(ENTRY))
@pytest.mark.parametrize("how", sorted(EXITS))
def test_an_exit_from_plugin_code_is_that_systems_one_line_error(fake, tmp_path, coll, capsys, how, entry):
    """A plugin calling sys.exit(0) once ended `run` with exit 0, no result and no message."""
    system, hook = ENTRY[entry]
    base = _base(tmp_path, coll)
    if entry == "rerank":
        assert run_cli(capsys, "run", "bm25", *base)[0] == 0
        args = ["rerank", system, "--first-stage", "bm25", *[a for a in base if a != "--no-progress"]]
    else:
        args = ["run", system, *base]
    setattr(Act, hook, EXITS[how])
    line = one_line_error(*run_cli(capsys, *args)[::2])
    assert repr(system) in line
    assert not list((tmp_path / "runs" / "tiny").glob(f"{system}*/seed-*.json"))


@hostile("plugin exits", "held")
def test_a_real_ctrl_c_still_interrupts(fake, tmp_path, coll, capsys):
    Act.rank = lambda *a: os.kill(os.getpid(), signal.SIGINT)
    rc, _, err = run_cli(capsys, "run", "fake-ranker", *_base(tmp_path, coll))
    assert rc == 130 and "interrupted" in err


# --- encoders: one finite row per text, whatever the chunking ---------------------------------------------


def _per_call(fn):
    def encode(docs):
        return fn(np.stack([_honest(d.fullText) for d in docs]))

    return encode


def _too_many_then_too_few():
    state = {"n": 0}

    def encode(docs):
        state["n"] += 1
        rows = np.stack([_honest(d.fullText) for d in docs])
        if state["n"] % 2:
            return np.vstack([rows, rows[:1]])
        return rows[:-1]

    return encode


CHUNK_DEPENDENT = {
    "z-scored per call": _per_call(lambda v: (v - v.mean(0)) / (v.std(0) + 1e-9) if len(v) > 1 else v),
    "centred per call": _per_call(lambda v: v - v.mean(0) if len(v) > 1 else v),
    "scaled by call size": _per_call(lambda v: v * len(v)),
    "position in call": _per_call(lambda v: v + np.arange(len(v))[:, None] * 0.5),
    "row too many then too few": _too_many_then_too_few(),
    "NaN": _per_call(lambda v: np.where(v > 0.3, np.nan, v)),
    "infinite": _per_call(lambda v: v / 0.0),
    "one row short": _per_call(lambda v: v[:-1]),
    "1-d": _per_call(lambda v: v[:, 0]),
    "width per call": _per_call(lambda v: v[:, : 4 + len(v) % 3]),
    "strings": lambda docs: [["a"] * 8 for _ in docs],
}


@hostile("chunk-dependent or broken encoders", "clear error")
@pytest.mark.parametrize("case", sorted(CHUNK_DEPENDENT))
def test_an_encoder_that_depends_on_chunking_or_breaks_its_contract_is_refused(fake, tmp_path, coll, capsys, case):
    Act.encode = CHUNK_DEPENDENT[case]
    line = one_line_error(*run_cli(capsys, "run", "fake-encoder", *_base(tmp_path, coll))[::2])
    assert "'fake-encoder'" in line and "encode()" in line
    assert not (tmp_path / "runs" / "tiny" / "fake-encoder").exists()


@hostile("chunk-dependent or broken encoders", "held")
@pytest.mark.parametrize("noise", [1e-7, 1e-5, 1e-4])
def test_an_honest_encoder_with_float_noise_passes(fake, tmp_path, coll, capsys, noise):
    rng = np.random.default_rng(0)
    Act.encode = _per_call(lambda v: v * (1 + noise * rng.standard_normal(v.shape)))
    assert run_cli(capsys, "run", "fake-encoder", *_base(tmp_path, coll))[0] == 0


@pytest.fixture
def example(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLE_SRC))
    import aa_example.system

    yield aa_example
    for name in [m for m in sys.modules if m.startswith("aa_example")]:
        sys.modules.pop(name)


def test_the_example_plugin_scores_each_document_on_its_own(example, coll):
    from aa_example.config import FunctionWordConfig
    from aa_example.system import FunctionWordEncoder

    from harness.data.collection import read_documents
    from harness.runs.containment import CheckedEncoder, check_chunking

    docs = list(read_documents([coll]).values())
    enc = FunctionWordEncoder(FunctionWordConfig())
    check_chunking(CheckedEncoder("function-words", enc), docs)
    whole = enc.encode(docs)
    one_by_one = np.vstack([enc.encode([d]) for d in docs])
    assert np.allclose(whole, one_by_one, atol=1e-6)


# --- where results go ----------------------------------------------------------------------------------


@hostile("runs folder", "clear error")
@pytest.mark.parametrize("which", ["run folder", "collection folder"])
def test_a_symlinked_run_or_collection_folder_is_refused(fake, tmp_path, coll, capsys, which):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    runs = tmp_path / "runs"
    if which == "run folder":
        (runs / "tiny").mkdir(parents=True)
        (runs / "tiny" / "bm25").symlink_to(elsewhere)
    else:
        runs.mkdir()
        (runs / "tiny").symlink_to(elsewhere)
    line = one_line_error(*run_cli(capsys, "run", "bm25", *_base(tmp_path, coll))[::2])
    assert "symbolic link" in line
    assert not list(elsewhere.rglob("*"))


@hostile("runs folder", "clear error")
def test_a_run_folder_swapped_for_a_link_mid_rank_is_refused(fake, tmp_path, coll, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def swap(*a):
        run_dir = tmp_path / "runs" / "tiny" / "fake-ranker"
        run_dir.parent.mkdir(parents=True, exist_ok=True)
        if run_dir.is_dir():
            run_dir.rmdir()
        run_dir.symlink_to(elsewhere)

    Act.rank = swap
    one_line_error(*run_cli(capsys, "run", "fake-ranker", *_base(tmp_path, coll))[::2])
    assert not list(elsewhere.rglob("*"))


@hostile("runs folder", "held")
@pytest.mark.parametrize("hook", ["build", "rank", "describe"])
def test_a_plugin_that_changes_directory_does_not_move_the_results(fake, tmp_path, coll, capsys, monkeypatch, hook):
    work = tmp_path / "work"
    work.mkdir()
    away = tmp_path / "away"
    away.mkdir()
    monkeypatch.chdir(work)
    setattr(Act, hook, lambda *a: os.chdir(away))
    args = [
        "run",
        "fake-ranker",
        "--collection",
        coll,
        "--runs-dir",
        "runs",
        "--splits-dir",
        "splits",
        "--seeds",
        "0",
        "--no-progress",
    ]
    assert run_cli(capsys, *args)[0] == 0
    assert (work / "runs" / "tiny" / "fake-ranker" / "seed-0.json").is_file()
    assert not list(away.rglob("*"))


@hostile("runs folder", "held")
def test_a_runs_folder_that_is_itself_a_link_is_used(fake, tmp_path, coll, capsys):
    real = tmp_path / "real-runs"
    real.mkdir()
    (tmp_path / "runs").symlink_to(real)
    assert run_cli(capsys, "run", "bm25", *_base(tmp_path, coll))[0] == 0
    assert (real / "tiny" / "bm25" / "seed-0.json").is_file()


@hostile("registering plugins", "held")
@pytest.mark.parametrize("how", ["sys.exit(0)", "GeneratorExit"])
def test_a_plugin_exiting_while_registering_is_left_out_with_a_warning(how):
    from harness.plugins import load_registry, plugin_manager

    class Bad:
        @hookimpl
        def register_systems(self, register):
            EXITS[how]()

    warnings = []
    reg = load_registry(plugin_manager(entrypoints=False, extra=(Bad(),)), warn=warnings.append)
    assert "bm25" in reg.systems and warnings


@hostile("plugin umask", "held")
def test_a_plugin_that_clears_the_umask_cannot_make_results_world_writable(fake, tmp_path, coll, capsys):
    import stat

    from harness.foundation import atomic

    Act.build = lambda: os.umask(0)
    before = os.umask(0o022)
    os.umask(before)
    try:
        assert run_cli(capsys, "run", "fake-ranker", *_base(tmp_path, coll))[0] == 0
    finally:
        os.umask(before)
    run = tmp_path / "runs" / "tiny" / "fake-ranker"
    for p in [tmp_path / "runs", tmp_path / "runs" / "tiny", run, *run.iterdir()]:
        mode = stat.S_IMODE(p.stat().st_mode)
        want = (0o777 if p.is_dir() else 0o666) & ~atomic._umask()
        assert mode == want and not mode & stat.S_IWOTH, (p, oct(mode))


# --- what rank() returns is checked as it is read: huge numbers, rankings that raise -----------------------


def _returns(make):
    def rank(self, queries, candidates, k):
        return make(queries, candidates)

    return rank


RETURNS = {
    "a score of 10**400": lambda qs, cs: {
        q.documentID: [(c.documentID, 10**400 if i == 0 else 1.0) for i, c in enumerate(cs)] for q in qs
    },
    "a ranking that raises when read": lambda qs, cs: {
        q.documentID: (x for x in [(cs[0].documentID, 1.0), 1 / 0]) for q in qs
    },
    "a mapping that raises when read": lambda qs, cs: type("Bad", (dict,), {"items": lambda self: 1 / 0})(),
    "a score that is a string": lambda qs, cs: {q.documentID: [(c.documentID, "high") for c in cs] for q in qs},
}


@hostile("plugin exits", "clear error")
@pytest.mark.parametrize("case", sorted(RETURNS))
def test_what_rank_returns_is_that_systems_one_line_error(fake, tmp_path, coll, capsys, monkeypatch, case):
    monkeypatch.setattr(FakeRanker, "rank", _returns(RETURNS[case]))
    line = one_line_error(*run_cli(capsys, "run", "fake-ranker", *_base(tmp_path, coll))[::2])
    assert "'fake-ranker'" in line
    assert not list((tmp_path / "runs" / "tiny").glob("fake-ranker/seed-*.json"))


@hostile("chunk-dependent or broken encoders", "clear error")
def test_an_encoder_that_depends_on_chunking_only_above_8_texts_is_caught_by_its_declared_batch(
    fake, tmp_path, coll, capsys
):
    """A sample of 8 let an encoder standardising only calls of more than 8 texts through; the sample
    now exceeds the batch the system declares (its config's batch_size, 16 here)."""
    Act.encode = _per_call(lambda v: (v - v.mean(0)) / (v.std(0) + 1e-9) if len(v) > 8 else v)
    line = one_line_error(*run_cli(capsys, "run", "fake-batch-encoder", *_base(tmp_path, coll))[::2])
    assert "'fake-batch-encoder'" in line and "encode()" in line
    assert run_cli(capsys, "run", "fake-encoder", *_base(tmp_path, coll))[0] == 0  # 8 texts alone: not seen


@hostile("plugin exits", "held")
def test_a_thread_left_running_does_not_keep_the_command_alive(tmp_path):
    """A plugin's non-daemon thread once made the command hang after it printed its summary."""
    import subprocess
    import time

    code = (
        "import threading, time\nfrom harness import cli\n"
        "threading.Thread(target=time.sleep, args=(120,), name='plugin-worker').start()\ncli.entry(['systems'])\n"
    )
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0 and "bm25" in done.stdout and time.monotonic() - start < 30
    assert "1 thread(s) left running by plugin code (plugin-worker)" in done.stderr


def _loader_returning_a_dict(data_dir=None):
    return {"documents": {}}


def _loader_raising(data_dir=None):
    raise KeyError("corpus")


@hostile("plugin exits", "clear error")
@pytest.mark.parametrize("loader", ["_loader_returning_a_dict", "_loader_raising", "_no_such_loader"])
def test_a_collection_loader_that_fails_or_returns_no_collection_is_one_line(tmp_path, capsys, monkeypatch, loader):
    import harness.cli
    from harness.api import CollectionSpec
    from harness.plugins import load_registry, plugin_manager

    class Plugin:
        @hookimpl
        def register_collections(self, register):
            register(CollectionSpec("odd", f"{__name__}:{loader}", "a plugin's collection"))

    reg = load_registry(plugin_manager(entrypoints=False, extra=(Plugin(),)))
    monkeypatch.setattr(harness.cli, "_registry", lambda: reg)
    line = one_line_error(*run_cli(capsys, "run", "bm25", "--collection", "odd", "--runs-dir", tmp_path / "runs")[::2])
    assert "collection 'odd': its loader" in line
    assert not (tmp_path / "runs").exists()


@hostile("plugin exits", "clear error")
def test_a_describe_nested_100000_deep_is_one_line(fake, tmp_path, coll, capsys, monkeypatch):
    deep: dict = {}
    node = deep
    for _ in range(100_000):
        node["x"] = {}
        node = node["x"]
    monkeypatch.setattr(FakeRanker, "describe", lambda self: deep)
    line = one_line_error(*run_cli(capsys, "run", "fake-ranker", *_base(tmp_path, coll))[::2])
    assert "'fake-ranker'" in line and "describe()" in line


@hostile("plugin exits", "held")
def test_rankings_a_plugin_thread_rewrites_after_rank_returned_are_scored_as_read(
    fake, tmp_path, coll, capsys, monkeypatch
):
    """A plugin thread that keeps rewriting the lists rank() returned once went unnoticed until the
    leaderboard found metrics that its rankings did not give. What the harness read is what it
    scores and writes: the result verifies whatever the thread does, or reading fails in one line."""
    import random
    import threading
    import time

    from harness.runs.verified import verified_results

    stop = threading.Event()

    def rank(self, queries, candidates, k):
        out = {q.documentID: [(c.documentID, float(i)) for i, c in enumerate(candidates)] for q in queries}

        def rewrite():
            rng = random.Random(0)
            while not stop.is_set():
                for ranking in out.values():
                    ranking.reverse()
                    i = rng.randrange(len(ranking))
                    ranking[i] = (ranking[i][0], rng.random())

        threading.Thread(target=rewrite, daemon=True).start()
        time.sleep(0.01)  # the thread is at work before the answer is read
        return out

    monkeypatch.setattr(FakeRanker, "rank", rank)
    base = _base(tmp_path, coll)
    try:
        rc, _, err = run_cli(capsys, "run", "fake-ranker", *base)
    finally:
        stop.set()
    if rc != 0:
        assert "reading what rank() returned" in one_line_error(rc, err)
        return
    found = verified_results(tmp_path / "runs", splits_dir=tmp_path / "splits", registry=fake)  # metrics recomputed
    assert [k for k in found] == [("tiny", "fake-ranker")]
