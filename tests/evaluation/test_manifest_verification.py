"""A split manifest is accepted when the builder, given the data and the manifest's own settings and
seed, builds the same manifest; its seed must match its file name."""

from __future__ import annotations

import json
import shutil

import pytest

from harness.evaluation.split import Split
from tests.conftest import doc, write_jsonl
from tests.hostile import COMMITTED, committed_splits, hostile, one_line_error, run_cli, snapshot

GENRES = ("g1", "g2", "g3")


@pytest.fixture
def coll(tmp_path):
    recs, i = [], 0
    for a in range(8):
        for g in GENRES[: 2 + a % 2]:
            for _ in range(2):
                recs.append(doc(i, f"a{a}", g, f"text {i} by a{a} in {g} " + "word " * (i % 7)))
                i += 1
    return write_jsonl(tmp_path / "tiny.jsonl", recs)


@pytest.fixture
def env(tmp_path, coll, capsys, monkeypatch):
    monkeypatch.setenv("AA_HARNESS_CACHE", str(tmp_path / "cache"))
    splits = tmp_path / "splits"
    base = ["--collection", coll, "--runs-dir", tmp_path / "runs", "--splits-dir", splits]
    assert run_cli(capsys, "split", *base, "--seeds", "0", "1001")[0] == 0
    return splits / "tiny", base


def _reseal(path, edit):
    obj = json.loads(path.read_text())
    edit(obj)
    obj.pop("sha256", None)
    # recompute the manifest's own sha256 exactly as the harness does
    from harness.evaluation.split import Query

    s = Split(
        collection=obj["collection"],
        seed=obj["seed"],
        queries=tuple(Query(q["documentID"], tuple(q["authorIDs"]), q["genre"]) for q in obj["queries"]),
        candidates=tuple(obj["candidates"]),
        needles={k: tuple(v) for k, v in obj["needles"].items()},
        builder=obj.get("builder", {}),
        source_sha256=obj.get("source_sha256", ""),
    )
    obj["sha256"] = s.sha256
    obj["counts"] = s.content()["counts"]
    path.write_text(json.dumps(obj, indent=1, sort_keys=True))


def _drop_first_query(o):
    q = o["queries"].pop(0)["documentID"]
    o["needles"].pop(q)


def _one_needle(o):
    q = next(k for k, v in o["needles"].items() if len(v) > 1)
    o["needles"][q] = o["needles"][q][:1]


def _keep_one_query(o):
    keep = o["queries"][0]
    o["queries"] = [keep]
    o["needles"] = {keep["documentID"]: o["needles"][keep["documentID"]]}


EDITS = {
    "a query dropped": _drop_first_query,
    "all queries but one dropped": _keep_one_query,
    "a query's needles cut to one": _one_needle,
    "a candidate removed": lambda o: (
        o["candidates"].pop(-1)
        if o["candidates"][-1] not in {n for v in o["needles"].values() for n in v}
        else o["candidates"].pop(0)
    ),
    "a distractor removed": lambda o: o["candidates"].remove(
        next(c for c in o["candidates"] if c not in {n for v in o["needles"].values() for n in v})
    ),
    "author fraction": lambda o: o["builder"].update(author_fraction=0.25),
    "pool": lambda o: o["builder"].update(pool="paper"),
    "a cap on documents per (author, genre)": lambda o: o["builder"].update(max_per_author_genre=1),
    "builder name": lambda o: o["builder"].update(name="hand-made"),
    "source fingerprint": lambda o: o.update(source_sha256="0" * 64),
    "query genre": lambda o: o["queries"][0].update(genre="g9"),
}


@hostile("tampered manifest, resealed", "clear error")
@pytest.mark.parametrize("verb", ["run", "split", "rerank"])
@pytest.mark.parametrize("edit", sorted(EDITS))
def test_a_resealed_hand_edit_is_refused(env, tmp_path, capsys, edit, verb):
    """Dropping the queries a system misses once took its Success@8 from 0.25 to 1.0."""
    folder, base = env
    path = folder / "seed-0.json"
    _reseal(path, EDITS[edit])
    before = snapshot(tmp_path / "splits")
    args = {
        "run": ["run", "bm25", "--no-progress"],
        "split": ["split"],
        "rerank": ["rerank", "sadiri-v2-reranker", "--first-stage", "bm25"],
    }[verb]
    line = one_line_error(*run_cli(capsys, *args, *base, "--seeds", "0")[::2])
    assert "seed-0.json" in line or "seed 0" in line
    assert snapshot(tmp_path / "splits") == before
    assert not list((tmp_path / "runs").rglob("seed-*.json"))


@hostile("misnamed manifest", "clear error")
@pytest.mark.parametrize("verb", ["run", "split", "leaderboard"])
def test_a_manifest_copied_to_another_seed_name_is_refused(env, tmp_path, capsys, verb):
    """`cp seed-0.json seed-2001.json; run --seeds 2001` once ranked and wrote seed 0."""
    folder, base = env
    if verb == "leaderboard":
        assert run_cli(capsys, "run", "bm25", "--no-progress", *base, "--seeds", "0")[0] == 0
        res = tmp_path / "runs" / "tiny" / "bm25"
        shutil.copy(res / "seed-0.json", res / "seed-2001.json")
        shutil.copy(folder / "seed-0.json", folder / "seed-2001.json")
        args = [
            "leaderboard",
            "--runs-dir",
            tmp_path / "runs",
            "--splits-dir",
            tmp_path / "splits",
            "--out",
            tmp_path / "lb",
            "--no-plots",
        ]
    else:
        shutil.copy(folder / "seed-0.json", folder / "seed-2001.json")
        args = [*(["run", "bm25", "--no-progress"] if verb == "run" else ["split"]), *base, "--seeds", "2001"]
    line = one_line_error(*run_cli(capsys, *args)[::2])
    assert "seed-2001" in line
    assert not (tmp_path / "runs" / "tiny" / "bm25" / "seed-2001.rankings.jsonl.gz").exists() or verb == "leaderboard"


@hostile("misnamed manifest", "clear error")
def test_a_manifest_in_another_collections_folder_is_refused(env, tmp_path, capsys):
    folder, _ = env
    other = tmp_path / "splits" / "other"
    other.mkdir()
    shutil.copy(folder / "seed-0.json", other / "seed-0.json")
    from harness.errors import DataError
    from harness.evaluation.manifests import read_manifest

    with pytest.raises(DataError, match="folder 'other'"):
        read_manifest(other / "seed-0.json")


@hostile("split setting out of range", "clear error")
@pytest.mark.parametrize("verb", ["split", "run"])
@pytest.mark.parametrize(
    "option,value,words",
    [
        ("--max-per-author-genre", "-1", "max documents per (author, genre) must be a whole number of at least 1"),
        ("--author-fraction", "1.5", "author fraction must be in (0, 1]"),
        ("--author-fraction", "0", "author fraction must be in (0, 1]"),
    ],
)
def test_a_split_setting_out_of_range_is_one_line(tmp_path, coll, capsys, verb, option, value, words):
    args = {"split": ["split", "--overwrite"], "run": ["run", "bm25", "--no-progress"]}[verb]
    line = one_line_error(
        *run_cli(
            capsys,
            *args,
            "--collection",
            coll,
            "--runs-dir",
            tmp_path / "runs",
            "--splits-dir",
            tmp_path / "splits",
            option,
            value,
        )[::2]
    )
    assert words in line
    assert not (tmp_path / "splits").exists() and not (tmp_path / "runs").exists()


@hostile("tampered manifest, resealed", "clear error")
@pytest.mark.parametrize("cap", [-3, "many"])
def test_a_manifest_recording_a_cap_out_of_range_is_one_line(env, tmp_path, cap):
    from harness.data.collection import load_collection
    from harness.errors import DataError
    from harness.evaluation.manifests import read_manifest
    from harness.evaluation.split_store import check_by_rebuilding

    folder, base = env
    path = folder / "seed-0.json"
    _reseal(path, lambda o: o["builder"].update(max_per_author_genre=cap))
    with pytest.raises(
        DataError,
        match=r"^[^\n]*seed-0.json: rebuilding it from its builder record fails "
        r"\(max documents per \(author, genre\) must be a whole number of at least 1",
    ):
        check_by_rebuilding(read_manifest(path), path, load_collection("tiny", [base[1]]))


MALFORMED = {
    "not JSON": "{",
    "a list": "[]",
    "queries not a list": None,
    "an author id a number": None,
    "needles a string": None,
    "seed a string": None,
    "lone surrogate": None,
    "100,000 deep": "[" * 100000 + "]" * 100000,
    "not UTF-8": b"\xff\xfe",
    "empty": "",
}


@hostile("malformed manifest", "clear error")
@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_manifest_is_one_line(env, tmp_path, capsys, case):
    folder, base = env
    path = folder / "seed-0.json"
    obj = json.loads(path.read_text())
    if case == "queries not a list":
        obj["queries"] = {"q": 1}
    elif case == "an author id a number":
        obj["queries"][0]["authorIDs"] = [7]
    elif case == "needles a string":
        obj["needles"][next(iter(obj["needles"]))] = "d1"
    elif case == "seed a string":
        obj["seed"] = "0"
    if MALFORMED[case] is None and case != "lone surrogate":
        path.write_text(json.dumps(obj))
    elif case == "lone surrogate":
        path.write_text(json.dumps(obj).replace('"collection": "tiny"', '"collection": "tiny\\udc80"', 1))
    else:
        data = MALFORMED[case]
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
    line = one_line_error(*run_cli(capsys, "run", "bm25", "--no-progress", *base, "--seeds", "0")[::2])
    assert "seed-0.json" in line


def test_a_passed_check_is_cached_by_data_and_manifest(env, tmp_path, capsys, monkeypatch):
    _, base = env
    assert run_cli(capsys, "run", "bm25", "--no-progress", *base, "--seeds", "0")[0] == 0
    assert list((tmp_path / "cache" / "manifest-checks").glob("*.json"))

    from harness.evaluation import split_store

    def no_build(*a, **k):
        raise AssertionError("rebuilt although the check was cached")

    monkeypatch.setattr(split_store, "build_split", no_build)
    assert run_cli(capsys, "run", "bm25", "--no-progress", "--overwrite", *base, "--seeds", "0")[0] == 0


def test_a_check_record_planted_in_the_cache_grants_nothing(env, tmp_path, capsys, monkeypatch):
    """A passed check is trusted by its HMAC under the user's key, not for being in the cache: a
    record written by anyone else (here: the same JSON, its HMAC removed or made with another key)
    sends the manifest back to the rebuild."""
    _, base = env
    assert run_cli(capsys, "run", "bm25", "--no-progress", *base, "--seeds", "0")[0] == 0
    (record,) = list((tmp_path / "cache" / "manifest-checks").glob("*.json"))
    good = json.loads(record.read_text())
    from harness.evaluation import split_store

    rebuilt = []
    real = split_store.build_split
    monkeypatch.setattr(split_store, "build_split", lambda *a, **k: rebuilt.append(1) or real(*a, **k))
    for forged in ({k: v for k, v in good.items() if k != "hmac"}, {**good, "hmac": "0" * 64}):
        record.write_text(json.dumps(forged))
        assert run_cli(capsys, "run", "bm25", "--no-progress", "--overwrite", *base, "--seeds", "0")[0] == 0
    assert len(rebuilt) == 2  # each forged record was ignored and the manifest rebuilt
    assert json.loads(record.read_text())["hmac"] == good["hmac"]  # and the check recorded again, signed


@hostile("tampered manifest, resealed", "held")
def test_without_the_data_the_sha_and_structure_checks_still_apply(env, tmp_path, capsys, coll):
    """A results folder read where the corpus is absent: the manifest's own checks still hold."""
    folder, base = env
    assert run_cli(capsys, "run", "bm25", "--no-progress", *base, "--seeds", "0")[0] == 0
    coll.unlink()
    lb = [
        "leaderboard",
        "--runs-dir",
        tmp_path / "runs",
        "--splits-dir",
        tmp_path / "splits",
        "--out",
        tmp_path / "lb",
        "--no-plots",
    ]
    assert run_cli(capsys, *lb)[0] == 0
    text = (folder / "seed-0.json").read_text()
    (folder / "seed-0.json").write_text(text.replace('"a0"', '"a9"', 1))  # edited, not resealed
    one_line_error(*run_cli(capsys, *lb)[::2])


@pytest.mark.slow
@pytest.mark.corpora
def test_every_committed_manifest_rebuilds(corpora, tmp_path, monkeypatch):
    from harness.evaluation.manifests import read_manifest
    from harness.evaluation.split_store import check_by_rebuilding
    from harness.plugins import load_registry

    monkeypatch.setenv("AA_HARNESS_CACHE", str(tmp_path))
    monkeypatch.setenv("AA_HARNESS_CORPORA", str(corpora))
    from harness.reports.stale import load_stale

    reg = load_registry()
    # a collection's earlier manifests, kept under another name for the runs made on them, are checked
    # against the collection that reads that data in tests/evaluation/test_splits.py
    kept = {e.manifests for e in load_stale(COMMITTED.parent / "stale.json").values()}
    kept |= {
        p.name
        for p in committed_splits().iterdir()
        if p.is_dir() and json.loads(next(p.glob("seed-*.json")).read_text(encoding="utf-8"))["collection"] != p.name
    }
    n = 0
    for folder in sorted(p for p in committed_splits().iterdir() if p.is_dir() and p.name not in kept):
        collection = reg.collection(folder.name).load(None)
        for path in sorted(folder.glob("seed-*.json")):
            check_by_rebuilding(read_manifest(path), path, collection)
            n += 1
    assert n >= 20
