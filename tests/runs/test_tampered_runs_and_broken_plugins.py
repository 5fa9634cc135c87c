"""Bad input, tampering and broken plugins: one test (or more) for each way found to break a run or a page.

Most tests copy a committed demo run (leaderboards/runs/demo/bm25, on the committed splits)
into a temporary folder and damage it, so they rank nothing and run in well under a second.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys

import numpy as np
import pytest

from harness.cli import main
from harness.errors import DataError, HarnessError
from harness.hookspecs import hookimpl
from harness.plugins import load_registry, plugin_manager
from harness.specs import SystemSpec
from tests.conftest import RECORD, ROOT, doc, write_jsonl

SPLITS = RECORD
COMMITTED = ROOT / "leaderboards" / "runs"


def _run(tmp_path, *args, runs=None, splits=None):
    return main(
        [
            "run",
            *args,
            "--runs-dir",
            str(runs or tmp_path / "runs"),
            "--splits-dir",
            str(splits or tmp_path / "splits"),
            "--no-progress",
        ]
    )


def _copy_run(tmp_path, run="bm25", collection="demo", as_name=None):
    """A committed run, copied into tmp_path/runs (checked against the committed splits) without its seal, as
    results written before sealing are: the checks by recomputation, not the seal, must catch each edit."""
    dst = tmp_path / "runs" / collection / (as_name or run)
    shutil.copytree(COMMITTED / collection / run, dst)
    for path in dst.glob("seed-*.json"):
        obj = json.loads(path.read_text(encoding="utf-8"))
        obj.pop("result_sha256", None)
        path.write_text(json.dumps(obj, indent=2, sort_keys=True), encoding="utf-8")
    return dst


def _leaderboard(tmp_path, runs=None, out=None, *extra):
    return main(
        [
            "leaderboard",
            "--runs-dir",
            str(runs or tmp_path / "runs"),
            "--out",
            str(out or tmp_path / "lb"),
            "--splits-dir",
            str(SPLITS),
            "--no-plots",
            *extra,
        ]
    )


def _registry(*plugins):
    return load_registry(plugin_manager(entrypoints=False, extra=plugins))


def _job(tmp_path, **kw):
    from harness.runs.run_job import RunJob

    base = dict(
        systems=["bm25"], collection="demo", seeds=[0], runs_dir=tmp_path / "runs", splits_dir=SPLITS, progress=False
    )
    return RunJob(**{**base, **kw})


def _quiet(*_):
    pass


# --- plugins used by several tests -------------------------------------------------------------------------


class Behaviour:
    """What the fake systems below do; set by each test."""

    rank = None
    encode = None
    describe = None
    calls = 0


class FakeRanker:
    def __init__(self, config):
        pass

    def rank(self, queries, candidates, k):
        Behaviour.calls += 1
        return Behaviour.rank(queries, candidates, k)

    def describe(self):
        return Behaviour.describe() if Behaviour.describe else {}


class FakeEncoder:
    def __init__(self, config):
        pass

    def encode(self, documents):
        return Behaviour.encode(documents)


class FakeReranker:
    def __init__(self, config):
        pass

    def rerank(self, queries, candidate_lists):
        return [np.arange(len(c), dtype=float) for c in candidate_lists]


class FakePlugin:
    @hookimpl
    def register_systems(self, register):
        register(SystemSpec("fake-ranker", f"{__name__}:FakeRanker", "plugins.bm25.config:BM25Config"))
        register(
            SystemSpec(
                "fake-encoder", f"{__name__}:FakeEncoder", "plugins.bm25.config:BM25Config", capabilities=("encode",)
            )
        )
        register(
            SystemSpec(
                "fake-reranker", f"{__name__}:FakeReranker", "plugins.bm25.config:BM25Config", capabilities=("rerank",)
            )
        )


@pytest.fixture
def fake(monkeypatch):
    Behaviour.rank = lambda qs, cs, k: {q.documentID: [(c.documentID, 1.0) for c in cs[:k]] for q in qs}
    Behaviour.encode = lambda docs: np.ones((len(docs), 4))
    Behaviour.describe = None
    Behaviour.calls = 0
    return _registry(FakePlugin())


# --- 1. run names --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["../../../../tmp/pwn", "ABSOLUTE", "../demo/bm25", ".", "..", "a/b", "", ".hidden", "a\\b", "x y"]
)
def test_run_name_must_be_one_safe_path_component(tmp_path, capsys, name):
    # "ABSOLUTE" stands for an absolute path (the issue's /etc/x), kept inside tmp_path should the check ever break
    name = str(tmp_path / "etc" / "x") if name == "ABSOLUTE" else name
    runs = tmp_path / "a" / "b" / "runs"
    assert _run(tmp_path, "bm25", "--seeds", "0", "--name", name, runs=runs, splits=SPLITS) == 2
    assert "is not allowed" in capsys.readouterr().err
    assert not list(tmp_path.rglob("seed-*.json"))
    assert not (ROOT / "leaderboards" / "runs" / "demo" / "pwn").exists()


def test_safe_run_names_are_accepted():
    from harness.runs.results import check_run_name

    for name in ("bm25", "sadiri-v2-smollm2+reranker-q+p+r-half", "v2_qwen3.8b", "A-1"):
        assert check_run_name(name) == name


def test_rerank_run_names_are_checked_too(tmp_path, fake):
    from harness.runs.rerank_job import RerankJob, rerank_job

    _copy_run(tmp_path)
    for kw in ({"run_name": "../../escape"}, {"first_stage": "../bm25"}):
        job = RerankJob(
            **{
                "system": "fake-reranker",
                "first_stage": "bm25",
                "collection": "demo",
                "seeds": [0],
                "runs_dir": tmp_path / "runs",
                "splits_dir": SPLITS,
                **kw,
            }
        )
        with pytest.raises(HarnessError, match="is not allowed"):
            rerank_job(fake, job, log=_quiet)
    assert not (tmp_path / "escape").exists()


# --- 2. NaN and infinities -----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN", "Infinity"])
def test_config_floats_must_be_finite(tmp_path, capsys, value):
    assert _run(tmp_path, "bm25", "--seeds", "0", "--set", f"k1={value}", splits=SPLITS) == 2
    err = capsys.readouterr().err
    assert "k1" in err and "not a finite number" in err
    assert not (tmp_path / "runs").exists()


def test_top_k_refuses_nan_scores_instead_of_returning_empty_rankings():
    from harness.evaluation.ranking import NonFiniteScoreError, top_k

    scores = np.array([[0.5, 0.2, 0.1], [np.nan, 0.3, 0.2]])
    with pytest.raises(NonFiniteScoreError, match=r"query 'q2'.*nan.*'c1'"):
        top_k(scores, ["c1", "c2", "c3"], 2, ["q1", "q2"])
    with pytest.raises(NonFiniteScoreError):
        top_k(np.array([[np.inf, 0.0, 1.0]]), ["a", "b", "c"], 1)


def test_ranker_scores_nan_is_an_error_naming_system_query_and_value(tmp_path, fake):
    from harness.runs.run_job import run_job

    Behaviour.rank = lambda qs, cs, k: {q.documentID: [(c.documentID, float("nan")) for c in cs[:k]] for q in qs}
    with pytest.raises(HarnessError, match=r"system 'fake-ranker': query '[^']+' gives '[^']+' a non-finite score nan"):
        run_job(fake, _job(tmp_path, systems=["fake-ranker"]), log=_quiet)
    assert not list(tmp_path.rglob("seed-*"))


def test_encoder_nan_vectors_are_an_error_naming_system_document_and_value(tmp_path, fake):
    from harness.runs.run_job import run_job

    def encode(docs):
        v = np.ones((len(docs), 4))
        v[len(docs) // 2, 1] = np.nan
        return v

    Behaviour.encode = encode
    with pytest.raises(HarnessError, match=r"system 'fake-encoder': encode\(\).*document '[^']+'.*non-finite.*nan"):
        run_job(fake, _job(tmp_path, systems=["fake-encoder"]), log=_quiet)
    assert not list(tmp_path.rglob("seed-*"))


def test_encoder_returning_fewer_vectors_than_texts_is_an_error(tmp_path, fake):
    from harness.runs.run_job import run_job

    Behaviour.encode = lambda docs: np.ones((max(len(docs) - 5, 1), 4))  # zip would drop 5 queries silently
    with pytest.raises(
        HarnessError, match=r"system 'fake-encoder': encode\(\) .* returned \d+ vectors for \d+ documents"
    ):
        run_job(fake, _job(tmp_path, systems=["fake-encoder"]), log=_quiet)
    assert not list(tmp_path.rglob("seed-*"))


# --- 3. leaderboard with a mistyped runs folder ------------------------------------------------------------


def _committed_pages(tmp_path):
    out = tmp_path / "pages"
    out.mkdir()
    for name in ("main.md", "per-genre.md", "performance.md", "rerank.md", "training.md", "reported.md"):
        shutil.copy(ROOT / "leaderboards" / "pages" / name, out / name)
    return out, {p.name: p.read_bytes() for p in out.iterdir()}


@pytest.mark.parametrize("kind", ["missing", "empty"])
def test_leaderboard_with_missing_or_empty_runs_folder_writes_nothing(tmp_path, capsys, kind):
    out, before = _committed_pages(tmp_path)
    runs = tmp_path / "leaderbaords" / "runs"  # the typo
    if kind == "empty":
        runs.mkdir(parents=True)
    assert _leaderboard(tmp_path, runs, out) == 2
    assert "runs folder" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert _leaderboard(tmp_path, runs, out, "--allow-empty") == 0  # asked for
    assert "(no runs yet)" in (out / "main.md").read_text()


def test_leaderboard_writes_no_page_when_one_result_is_bad(tmp_path):
    _copy_run(tmp_path)
    (tmp_path / "runs" / "demo" / "bm25" / "seed-3001.json").write_text("[]")
    assert _leaderboard(tmp_path) == 2
    assert not (tmp_path / "lb").exists()


# --- 4. one run name, one config ---------------------------------------------------------------------------


def test_a_second_config_under_one_run_name_is_refused(tmp_path):
    from harness.runs.run_job import run_job

    _copy_run(tmp_path)
    before = (tmp_path / "runs" / "demo" / "bm25" / "seed-0.json").read_bytes()
    with pytest.raises(HarnessError, match=r"another config \(k1 \(1\.2 vs 0\.25\)"):
        run_job(load_registry(), _job(tmp_path, overrides={"k1": "1.2"}), log=_quiet)
    with pytest.raises(HarnessError, match="is not allowed"):  # --name "" used to mean "the system's name"
        run_job(load_registry(), _job(tmp_path, overrides={"k1": "1.2"}, run_name=""), log=_quiet)
    assert (tmp_path / "runs" / "demo" / "bm25" / "seed-0.json").read_bytes() == before


def test_leaderboard_refuses_a_run_mixing_configs(tmp_path, capsys):
    run = _copy_run(tmp_path)
    path = run / "seed-1001.json"
    res = json.loads(path.read_text())
    res["config"]["k1"] = 1.2
    path.write_text(json.dumps(res))
    assert _leaderboard(tmp_path) == 2
    assert "mixes configs" in (err := capsys.readouterr().err) and "k1 (0.25 vs 1.2)" in err


def test_leaderboard_refuses_a_copied_run_folder(tmp_path, capsys):
    _copy_run(tmp_path)
    _copy_run(tmp_path, as_name="bm25-copy")  # its files still say run "bm25": each seed would count twice
    assert _leaderboard(tmp_path) == 2
    assert "copied or renamed by hand" in capsys.readouterr().err


def test_duplicated_seed_in_a_run_is_refused():
    from pathlib import Path

    from harness.runs.results import check_run_consistent

    res = {"system": "bm25", "config": {"k1": 0.25}, "seed": 0, "run_name": "bm25", "collection": "demo"}
    with pytest.raises(DataError, match="seed 0 of run 'bm25' appears twice"):
        check_run_consistent([(Path("a/seed-0.json"), res), (Path("b/seed-0.json"), res)])


# --- 5. result files are verified --------------------------------------------------------------------------


def test_edited_metric_is_an_error_for_the_leaderboard_and_stale_for_run(tmp_path, capsys):
    from harness.runs.run_job import run_job

    run = _copy_run(tmp_path)
    path = run / "seed-0.json"
    res = json.loads(path.read_text())
    res["metrics"]["success@8"] = 0.99
    path.write_text(json.dumps(res))
    assert _leaderboard(tmp_path) == 2
    assert f"{path}: metrics" in capsys.readouterr().err
    logged = []
    out = run_job(load_registry(), _job(tmp_path), log=logged.append)
    assert [o.skipped for o in out] == [False] and any("recomputing" in m for m in logged)
    assert json.loads(path.read_text())["metrics"]["success@8"] != 0.99
    assert _leaderboard(tmp_path) == 0


@pytest.mark.parametrize("damage", ["delete", "truncate", "swap"])
def test_damaged_rankings_file_is_an_error_with_its_path(tmp_path, capsys, damage):
    from harness.runs.results import rankings_path

    run = _copy_run(tmp_path)
    target = rankings_path(run / "seed-0.json")
    if damage == "delete":
        target.unlink()
    elif damage == "truncate":
        target.write_bytes(target.read_bytes()[:200])
    else:
        shutil.copy(rankings_path(run / "seed-1001.json"), target)
    assert _leaderboard(tmp_path) == 2
    err = capsys.readouterr().err
    assert "seed-0" in err and ("rankings" in err or "differ" in err)


def test_run_with_deleted_rankings_is_not_up_to_date(tmp_path):
    from harness.runs.run_job import run_job

    run = _copy_run(tmp_path)
    (run / "seed-0.rankings.jsonl.gz").unlink()
    out = run_job(load_registry(), _job(tmp_path), log=_quiet)
    assert [o.skipped for o in out] == [False]
    assert (run / "seed-0.rankings.jsonl.gz").is_file()


def test_new_results_store_the_rankings_sha256(tmp_path, fake):
    import hashlib

    from harness.runs.results import rankings_path, read_result
    from harness.runs.run_job import run_job

    out = run_job(fake, _job(tmp_path, systems=["fake-ranker"]), log=_quiet)
    res = read_result(out[0].path)
    assert res["rankings_sha256"] == hashlib.sha256(rankings_path(out[0].path).read_bytes()).hexdigest()
    assert res["schema_version"] == 1


def test_rerank_with_a_deleted_first_stage_rankings_file_is_an_error(tmp_path, fake):
    from harness.runs.rerank_job import RerankJob, rerank_job

    run = _copy_run(tmp_path)
    (run / "seed-0.rankings.jsonl.gz").unlink()
    job = RerankJob(
        system="fake-reranker",
        first_stage="bm25",
        collection="demo",
        seeds=[0],
        runs_dir=tmp_path / "runs",
        splits_dir=SPLITS,
    )
    with pytest.raises(HarnessError, match="rankings file not found"):
        rerank_job(fake, job, log=_quiet)


# --- 6. co-authored documents -------------------------------------------------------------------------------


def _coauthored(tmp_path):
    recs = [{**doc(0, "a", "g1"), "authorIDs": ["a", "b"]}]  # a and b wrote d0 together
    recs += [
        doc(1, "a", "g2"),
        doc(2, "a", "g3"),
        doc(3, "b", "g2"),
        doc(4, "b", "g1"),
        doc(5, "c", "g1"),
        doc(6, "c", "g3"),
        doc(7, "d", "g1"),
        doc(8, "e", "g2"),
    ]
    return write_jsonl(tmp_path / "co.jsonl", recs)


def _invariants(split, collection):
    docs = collection.documents
    cands = set(split.candidates)
    assert split.queries
    for q in split.queries:
        assert q.documentID not in cands
        assert split.needles[q.documentID]
        for n in split.needles[q.documentID]:
            assert n in cands
            assert set(docs[n].authorIDs) & set(docs[q.documentID].authorIDs)
            assert docs[n].genre != q.genre


def test_coauthored_documents_build_every_seed_with_the_needle_rule(tmp_path):
    from harness.data.collection import load_collection
    from harness.evaluation.split_builder import build_split

    collection = load_collection("co", [_coauthored(tmp_path)])
    for seed in range(8):
        for fraction in (0.5, 1.0):
            split = build_split(collection, seed, fraction)
            _invariants(split, collection)
            assert build_split(collection, seed, fraction).sha256 == split.sha256


def test_no_manifest_is_written_unless_every_seed_builds(tmp_path, monkeypatch):
    import harness.evaluation.split_store as split_store
    from harness.data.collection import load_collection

    collection = load_collection("co", [_coauthored(tmp_path)])
    real = split_store.build_split

    def fails_on_seed_2(c, seed, fraction=0.5, **settings):
        if seed == 2:
            raise DataError("seed 2 cannot be built")
        return real(c, seed, fraction, **settings)

    monkeypatch.setattr(split_store, "build_split", fails_on_seed_2)
    with pytest.raises(DataError):
        split_store.get_splits(collection, [0, 1, 2], tmp_path / "splits")
    assert not (tmp_path / "splits").exists()


# --- 7. manifests are checked against the collection ------------------------------------------------------


def _tampered_manifest(tmp_path, change):
    from harness.data.collection import Collection
    from harness.evaluation.manifests import read_manifest, write_manifest
    from harness.evaluation.split import Split
    from harness.runs.job import open_collection

    collection: Collection = open_collection(load_registry(), "demo")
    split = read_manifest(SPLITS / "demo" / "seed-0.json")
    needles = {k: list(v) for k, v in split.needles.items()}
    queries = list(split.queries)
    change(collection, split, needles, queries)
    bad = Split(
        split.collection,
        split.seed,
        tuple(queries),
        split.candidates,
        {k: tuple(v) for k, v in needles.items()},
        split.builder,
        split.source_sha256,
    )
    write_manifest(bad, tmp_path / "splits")  # the hash is recomputed: only the content is wrong
    return collection


def test_manifest_with_a_needle_of_another_author_is_refused(tmp_path):
    from harness.evaluation.split_store import get_split

    def swap(collection, split, needles, queries):
        q = queries[0]
        docs = collection.documents
        other = next(
            c for c in split.candidates if not set(docs[c].authorIDs) & set(q.authorIDs) and docs[c].genre != q.genre
        )
        needles[q.documentID][0] = other

    collection = _tampered_manifest(tmp_path, swap)
    with pytest.raises(DataError, match="shares no author"):
        get_split(collection, 0, tmp_path / "splits")


def test_manifest_with_a_relabelled_query_genre_or_unknown_id_is_refused(tmp_path):
    from harness.evaluation.split import Query
    from harness.evaluation.split_store import get_split

    def relabel(collection, split, needles, queries):
        q = queries[0]
        needle_genre = collection.documents[needles[q.documentID][0]].genre
        queries[0] = Query(q.documentID, q.authorIDs, needle_genre)  # the needle now "shares" the query's genre

    collection = _tampered_manifest(tmp_path, relabel)
    with pytest.raises(DataError, match="genre"):
        get_split(collection, 0, tmp_path / "splits")

    def unknown(collection, split, needles, queries):
        needles[queries[0].documentID].append("no-such-document")

    collection = _tampered_manifest(tmp_path, unknown)
    with pytest.raises(DataError, match="no-such-document"):
        get_split(collection, 0, tmp_path / "splits")


# --- 8. errors, not tracebacks -----------------------------------------------------------------------------


def test_runs_dir_that_is_a_file_is_an_error_before_ranking(tmp_path, capsys, fake):
    from harness.runs.run_job import run_job

    runs = tmp_path / "runs"
    runs.write_text("not a folder")
    with pytest.raises(HarnessError, match="is a file"):
        run_job(fake, _job(tmp_path, systems=["fake-ranker"]), log=_quiet)
    assert Behaviour.calls == 0
    assert _run(tmp_path, "bm25", "--seeds", "0", runs=runs, splits=SPLITS) == 2
    assert "is a file" in capsys.readouterr().err


@pytest.mark.parametrize("setting", ["max_features=-5", "min_df=0", "max_features=0"])
def test_char_ngram_bad_counts_are_config_errors(tmp_path, capsys, setting):
    assert _run(tmp_path, "char-ngram", "--seeds", "0", "--set", setting, splits=SPLITS) == 2
    assert "CharNgramConfig" in capsys.readouterr().err


@pytest.mark.parametrize(
    "content,message",
    [
        (b"\xff\xfe{}", "not UTF-8"),
        (b"[1, 2]", "must be a JSON object"),
        (b'{"schema_version": 1}', "lacks field"),
    ],
)
def test_bad_result_files_are_errors_naming_the_file(tmp_path, capsys, content, message):
    run = _copy_run(tmp_path)
    (run / "seed-0.json").write_bytes(content)
    assert _leaderboard(tmp_path) == 2
    err = capsys.readouterr().err
    assert "seed-0.json" in err and message in err
    assert not (tmp_path / "lb").exists()


def test_result_lacking_per_genre_is_an_error(tmp_path, capsys):
    run = _copy_run(tmp_path)
    res = json.loads((run / "seed-0.json").read_text())
    del res["per_genre"]
    (run / "seed-0.json").write_text(json.dumps(res))
    assert _leaderboard(tmp_path) == 2
    assert "per_genre" in capsys.readouterr().err


@pytest.mark.parametrize(
    "behaviour,message",
    [
        (lambda qs, cs, k: 1 / 0, r"rank\(\) failed: ZeroDivisionError"),
        (
            lambda qs, cs, k: {q.documentID: [c.documentID for c in cs[:k]] for q in qs},
            "expected \\(candidateID, score\\) pairs",
        ),
        (
            lambda qs, cs, k: {q.documentID: [(c.documentID, "0.5") for c in cs[:k]] for q in qs},
            "non-numeric score '0.5'",
        ),
        (
            lambda qs, cs, k: {q.documentID: [(c.documentID, None) for c in cs[:k]] for q in qs},
            "non-numeric score None",
        ),
        (lambda qs, cs, k: None, "must return a mapping"),
    ],
)
def test_broken_rank_output_is_an_error_naming_the_system(tmp_path, capsys, fake, behaviour, message):
    from harness.runs.run_job import run_job

    Behaviour.rank = behaviour
    with pytest.raises(HarnessError, match=f"'fake-ranker'.*{message}"):
        run_job(fake, _job(tmp_path, systems=["fake-ranker"]), log=_quiet)
    assert not list(tmp_path.rglob("seed-*"))


def test_non_json_describe_leaves_no_rankings_file(tmp_path, fake):
    from harness.runs.run_job import run_job

    Behaviour.describe = lambda: {"model": object()}
    with pytest.raises(HarnessError, match=r"'fake-ranker': describe\(\) returned something JSON cannot store"):
        run_job(fake, _job(tmp_path, systems=["fake-ranker"]), log=_quiet)
    assert not list(tmp_path.rglob("seed-*"))


class BrokenPlugin:
    @hookimpl
    def register_systems(self, register):
        register(SystemSpec("half-registered", f"{__name__}:FakeRanker", "plugins.bm25.config:BM25Config"))
        raise RuntimeError("cannot find my weights")


class ImpostorPlugin:
    @hookimpl
    def register_systems(self, register):
        register(SystemSpec("bm25", f"{__name__}:FakeRanker", "plugins.bm25.config:BM25Config"))


def test_a_plugin_failing_while_registering_is_reported_and_the_rest_work():
    warnings = []
    reg = load_registry(plugin_manager(entrypoints=False, extra=(BrokenPlugin(),)), warn=warnings.append)
    assert "bm25" in reg.systems and "half-registered" not in reg.systems
    assert len(warnings) == 1 and "cannot find my weights" in warnings[0]


def test_a_plugin_that_fails_to_import_is_reported_and_systems_still_lists(tmp_path, monkeypatch):
    import subprocess

    site = tmp_path / "site"
    (site / "aa_broken_plugin-0.1.dist-info").mkdir(parents=True)
    (site / "aa_broken_plugin.py").write_text("raise ImportError('needs a library that is not installed')\n")
    (site / "aa_broken_plugin-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: aa-broken-plugin\nVersion: 0.1\n"
    )
    (site / "aa_broken_plugin-0.1.dist-info" / "entry_points.txt").write_text(
        "[aa_harness]\nbroken = aa_broken_plugin\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    env.pop("AA_HARNESS_DISABLE_PLUGIN_AUTOLOAD", None)
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "systems"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert "bm25" in proc.stdout
    assert "broken (package aa-broken-plugin)" in proc.stderr and "not installed" in proc.stderr


def test_a_plugin_registering_an_existing_name_is_an_error_naming_both():
    with pytest.raises(HarnessError, match=r"'bm25' is registered by both plugins\.bm25 and .*ImpostorPlugin"):
        load_registry(plugin_manager(entrypoints=False, extra=(ImpostorPlugin(),)))


class SubmittedImpostorPlugin:
    @hookimpl
    def register_systems(self, register):
        register(SystemSpec("submitted", f"{__name__}:FakeRanker", "plugins.bm25.config:BM25Config"))


def test_a_plugin_registering_the_name_of_submitted_rankings_is_an_error():
    """`submitted` marks rankings made outside the harness; a plugin's runs must not pass for them."""
    with pytest.raises(HarnessError, match=r"registers the system 'submitted', a name reserved"):
        load_registry(plugin_manager(entrypoints=False, extra=(SubmittedImpostorPlugin(),)))


# --- 9. genre labels ----------------------------------------------------------------------------------------


def test_genre_labels_are_compared_after_normalising_whitespace(tmp_path):
    from harness.data.collection import load_collection
    from harness.evaluation.split_builder import build_split

    recs = [
        doc(1, "a", "blog"),
        doc(2, "a", " blog"),
        doc(3, "a", "news"),
        doc(4, "a", "blog\n"),
        doc(5, "b", "blog"),
        doc(6, "b", "news "),
        doc(7, "c", " news"),
    ]
    collection = load_collection("g", [write_jsonl(tmp_path / "g.jsonl", recs)])
    assert {d.genre for d in collection.documents.values()} == {"blog", "news"}
    for seed in range(6):
        split = build_split(collection, seed, 1.0)
        _invariants(split, collection)


# --- 10. housekeeping ---------------------------------------------------------------------------------------


def test_stale_tmp_files_are_cleaned_on_the_next_write(tmp_path):
    import time

    from harness.foundation.atomic import STALE_SECONDS, atomic_write_text

    target = tmp_path / "seed-0.json"
    dead = tmp_path / ".seed-0.json.99999999.abcd1234.tmp"  # no process has that id
    old = tmp_path / ".seed-0.json.abcd1234.tmp"  # a writer before pids were recorded
    live = tmp_path / f".seed-0.json.{os.getppid()}.abcd1234.tmp"  # a writer still running
    fresh_old = tmp_path / ".seed-0.json.zzzz9999.tmp"
    for p in (dead, old, live, fresh_old):
        p.write_text("partial")
    past = time.time() - STALE_SECONDS - 10
    os.utime(old, (past, past))
    atomic_write_text(target, "done")
    assert target.read_text() == "done"
    assert not dead.exists() and not old.exists()
    assert live.exists() and fresh_old.exists()


def test_a_writer_killed_with_sigkill_leaves_a_tmp_file_that_the_next_write_removes(tmp_path):
    import signal
    import subprocess
    import time

    from harness.foundation.atomic import atomic_write_text

    target = tmp_path / "seed-0.rankings.jsonl.gz"
    code = (
        "import sys, time; from harness.foundation.atomic import atomic_open\n"
        f"with atomic_open({str(target)!r}, 'w', gz=True) as f:\n"
        "    f.write('partial'); f.flush(); print('writing', flush=True); time.sleep(60)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert proc.stdout.readline().strip() == "writing"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    left = list(tmp_path.glob(".seed-0.rankings.jsonl.gz.*.tmp"))
    assert len(left) == 1 and not target.exists()  # kill -9 skips every cleanup
    time.sleep(0.01)
    atomic_write_text(target, "whole")
    assert not list(tmp_path.glob("*.tmp")) and target.read_text() == "whole"


def test_written_files_follow_the_umask_the_process_started_with(tmp_path, monkeypatch):
    """The mode comes from the umask read when the harness was imported; one set later (by a plugin)
    changes nothing."""
    from harness.foundation import atomic
    from harness.foundation.atomic import atomic_write_text

    previous = os.umask(0o000)
    try:
        monkeypatch.setattr(atomic, "_START_UMASK", 0o022)
        atomic_write_text(tmp_path / "a.json", "x")
        monkeypatch.setattr(atomic, "_START_UMASK", 0o077)
        atomic_write_text(tmp_path / "sub" / "b.json", "x")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "sub" / "b.json").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "sub").stat().st_mode) == 0o700


def test_a_repeated_seed_is_ranked_once(tmp_path, fake):
    from harness.runs.run_job import run_job

    out = run_job(fake, _job(tmp_path, systems=["fake-ranker"], seeds=[0, 0]), log=_quiet)
    assert len(out) == 1 and Behaviour.calls == 1


def test_a_folder_given_as_collection_says_it_is_a_folder(tmp_path, capsys):
    (tmp_path / "data.jsonl").mkdir()
    assert _run(tmp_path, "bm25", "--collection", str(tmp_path / "data.jsonl")) == 2
    assert "is a folder" in capsys.readouterr().err
    (tmp_path / "corpus").mkdir()
    assert _run(tmp_path, "bm25", "--collection", str(tmp_path / "corpus")) == 2
    assert "is a folder" in capsys.readouterr().err


@pytest.mark.parametrize("gz", [False, True])
def test_a_utf8_bom_is_accepted(tmp_path, gz):
    import gzip

    from harness.data.collection import load_collection

    body = "".join(json.dumps(r) + "\n" for r in (doc(1, "a", "g1"), doc(2, "a", "g2"), doc(3, "b", "g1")))
    data = "\ufeff".encode("utf-8") + body.encode("utf-8")
    path = tmp_path / ("bom.jsonl.gz" if gz else "bom.jsonl")
    path.write_bytes(gzip.compress(data) if gz else data)
    collection = load_collection("bom", [path])
    assert set(collection.documents) == {"d1", "d2", "d3"}


# --- out of GPU memory --------------------------------------------------------------------------------------


def test_encoding_halves_its_token_budget_on_gpu_out_of_memory(capsys):
    torch = pytest.importorskip("torch")
    from harness.neural import oom
    from harness.neural.encoder import embed_features

    seen = []

    class Model:
        def fast_embed(self, features, device, max_tokens):
            seen.append(max_tokens)
            if max_tokens > 10_000:
                raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
            return np.ones((len(features), 3), dtype=np.float32)

    oom._warned.discard("encoding")
    out = embed_features(Model(), [1, 2, 3], torch.device("cpu"), max_tokens=65536)
    assert out.shape == (3, 3) and seen == [65536, 32768, 16384, 8192]
    out = embed_features(Model(), [1, 2], torch.device("cpu"), max_tokens=65536)
    err = capsys.readouterr().err
    assert err.count("out of GPU memory") == 1 and "retrying with 32768" in err  # said once


def test_reranking_halves_its_token_budget_and_gives_up_with_an_error(capsys):
    torch = pytest.importorskip("torch")
    from harness.neural import oom

    oom._warned.discard("reranking")
    calls = []

    def score(budget):
        calls.append(budget)
        if budget > 3000:
            raise torch.cuda.OutOfMemoryError("out of memory")
        return budget

    assert oom.retry_on_oom(score, 16384, what="reranking") == 2048
    assert "reranking: out of GPU memory" in capsys.readouterr().err
    with pytest.raises(HarnessError, match="out of GPU memory even at a budget of 256"):
        oom.retry_on_oom(lambda b: (_ for _ in ()).throw(torch.cuda.OutOfMemoryError("oom")), 1024, what="reranking")


def test_the_sadiri_v2_reranker_scores_through_the_oom_retry(capsys):
    torch = pytest.importorskip("torch")
    from harness.neural import oom
    from plugins.sadiri_v2.reranker import RerankerSystem

    oom._warned.discard("reranking")
    system = RerankerSystem.__new__(RerankerSystem)
    system.config = type("C", (), {"score_max_tokens": 8192})()
    budgets = []

    def at(prefix, continuations, max_tokens):
        budgets.append(max_tokens)
        if max_tokens > 4096:
            raise torch.cuda.OutOfMemoryError("out of memory")
        return np.zeros((len(continuations), 1))

    system._score_query_at = at
    assert system._score_query([1, 2], [[3], [4]]).shape == (2, 1)
    assert budgets == [8192, 4096]
