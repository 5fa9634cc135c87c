"""Bad input is one clear error naming where and what, and writes nothing: every parameter error,
malformed or invalid input file (collection files among them), unknown name and failed write is one
line naming the parameter or path and the cause: exit 2, no traceback, nothing written half-way."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import unicodedata

import pytest

from harness.cli import main
from harness.data.collection import load_collection
from harness.errors import DataError, UnknownNameError
from harness.plugins import load_registry
from tests.conftest import doc, write_jsonl, write_record
from tests.hostile import (
    COMMITTED,
    committed_splits,
    hostile,
    one_line_error,
    run_cli,
    snapshot,
)

SPLITS = committed_splits()


@pytest.fixture
def corpus(tmp_path):
    """Forty single-genre posts on four topics, enough for small k."""
    topics = [
        "cats dogs pets animals fur",
        "stocks market money trading bank",
        "football goal match team league",
        "rain storm weather cloud wind",
    ]
    recs = [doc(i, f"a{i % 7}", "posts", " ".join([topics[i % 4]] * 6) + f" extra{i}") for i in range(40)]
    return write_jsonl(tmp_path / "posts.jsonl", recs)


TOPICS = {
    "k 0": ["--k", "0"],
    "k -3": ["--k", "-3"],
    "k larger than the corpus": ["--k", "41"],
    "k study with k 1": ["--k", "1", "2"],
    "k study with k 0": ["--k", "0", "3"],
    "svd-dims 0": ["--svd-dims", "0"],
    "svd-dims -1": ["--svd-dims", "-1"],
    "svd-dims above the vocabulary": ["--svd-dims", "5000"],
    "seed -1": ["--seed", "-1"],
    "seed 2**32": ["--seed", str(2**32)],
}


@hostile("topics parameters", "clear error")
@pytest.mark.parametrize("case", sorted(TOPICS))
def test_topics_parameter_errors_are_one_line(corpus, tmp_path, capsys, case):
    out = tmp_path / "labels.json"
    line = one_line_error(*run_cli(capsys, "topics", "--input", corpus, "--out", out, *TOPICS[case])[::2])
    assert "--k" in line or "--svd-dims" in line or "--seed" in line or "topics" in line
    assert not out.exists()


@hostile("topics parameters", "clear error")
def test_topics_on_one_document(tmp_path, capsys):
    one = write_jsonl(tmp_path / "one.jsonl", [doc(1, "a", "posts", "just one text here")])
    line = one_line_error(*run_cli(capsys, "topics", "--input", one, "--k", "1")[::2])
    assert "at least 2 documents" in line


@hostile("topics parameters", "clear error")
def test_topics_out_and_labelled_out_the_same_file(corpus, tmp_path, capsys):
    same = tmp_path / "x.json"
    one_line_error(
        *run_cli(
            capsys, "topics", "--input", corpus, "--k", "4", "--svd-dims", "3", "--out", same, "--labelled-out", same
        )[::2]
    )
    assert not same.exists()


@hostile("output sets", "held")
def test_topics_labels_and_relabelled_corpus_are_one_set(corpus, tmp_path, capsys):
    out, lab = tmp_path / "a" / "labels.json", tmp_path / "b" / "labelled.jsonl.gz"
    assert (
        run_cli(
            capsys, "topics", "--input", corpus, "--k", "4", "--svd-dims", "3", "--out", out, "--labelled-out", lab
        )[0]
        == 0
    )
    import gzip

    labels = json.loads(out.read_text())["labels"]
    with gzip.open(lab, "rt") as f:
        relabelled = {r["documentID"]: r["genre"] for r in map(json.loads, f)}
    assert relabelled == labels
    assert not [p for p in tmp_path.rglob(".aa-output-set*")]


@pytest.fixture
def demo_runs(tmp_path):
    for run in ("bm25", "char-ngram"):
        shutil.copytree(COMMITTED / "demo" / run, tmp_path / "runs" / "demo" / run)
    return tmp_path / "runs"


@hostile("parameters", "clear error")
@pytest.mark.parametrize("value", ["0", "-5"])
def test_compare_resamples_below_one(demo_runs, capsys, value):
    line = one_line_error(
        *run_cli(
            capsys,
            "compare",
            "bm25",
            "char-ngram",
            "--collection",
            "demo",
            "--runs-dir",
            demo_runs,
            "--splits-dir",
            SPLITS,
            "--resamples",
            value,
        )[::2]
    )
    assert "--resamples" in line


@hostile("parameters", "clear error")
@pytest.mark.parametrize("value", ["0", "-1"])
def test_topic_share_k_below_one(demo_runs, capsys, value):
    line = one_line_error(
        *run_cli(
            capsys,
            "topic-share",
            "bm25",
            "--collection",
            "demo",
            "--runs-dir",
            demo_runs,
            "--splits-dir",
            SPLITS,
            "--k",
            value,
        )[::2]
    )
    assert "--k" in line


@hostile("parameters", "held")
def test_topic_share_addresses_a_path_collection(tmp_path, capsys):
    recs, i = [], 0
    for a in range(8):
        for g in ("g1", "g2", "g3")[: 2 + a % 2]:
            for _ in range(2):
                recs.append(doc(i, f"a{a}", g, f"text {i} by a{a} in {g}"))
                i += 1
    path = write_jsonl(tmp_path / "tiny.jsonl", recs)
    runs = tmp_path / "runs"
    assert (
        run_cli(capsys, "run", "bm25", "--collection", path, "--runs-dir", runs, "--seeds", "0", "--no-progress")[0]
        == 0
    )
    rc, out, err = run_cli(capsys, "topic-share", "bm25", "--collection", path, "--runs-dir", runs)
    assert rc == 0, err
    assert "bm25" in out


@hostile("parameters", "clear error")
@pytest.mark.parametrize("depth", ["5", "99", "0", "-1"])
@pytest.mark.parametrize("verb", ["run", "rerank"])
def test_a_depth_below_100_is_refused(demo_runs, tmp_path, capsys, depth, verb):
    """rerank --depth 5 once reported a Success@100 of 6.7% against the first stage's 86.7%."""
    args = ["run", "bm25"] if verb == "run" else ["rerank", "sadiri-v2-reranker", "--first-stage", "bm25"]
    line = one_line_error(
        *run_cli(
            capsys,
            *args,
            "--collection",
            "demo",
            "--seeds",
            "0",
            "--runs-dir",
            demo_runs,
            "--splits-dir",
            SPLITS,
            "--depth",
            depth,
        )[::2]
    )
    assert "--depth" in line
    assert sorted(p.name for p in (demo_runs / "demo").iterdir()) == ["bm25", "char-ngram"]


def _record(**kw):
    return {"documentID": "d1", "authorIDs": ["a"], "genre": "g1", "fullText": "some text", **kw}


SURROGATES = {
    "documentID": '{"documentID": "d\\ud800", "authorIDs": ["a"], "genre": "g1", "fullText": "t"}',
    "authorIDs": '{"documentID": "d1", "authorIDs": ["a\\udfff"], "genre": "g1", "fullText": "t"}',
    "genre": '{"documentID": "d1", "authorIDs": ["a"], "genre": "g\\ud83d", "fullText": "t"}',
    "fullText": '{"documentID": "d1", "authorIDs": ["a"], "genre": "g1", "fullText": "t\\udc00 x"}',
    "an extra field": '{"documentID": "d1", "authorIDs": ["a"], "genre": "g1", "fullText": "t", "x": ["\\ud800"]}',
    "a key": '{"documentID": "d1", "authorIDs": ["a"], "genre": "g1", "fullText": "t", "\\ud800": 1}',
    "100,000-deep line": "[" * 100000 + "]" * 100000,
    "100,000-deep field": '{"documentID": "d1", "x": ' + "[" * 100000 + "]" * 100000 + "}",
}


@hostile("hostile input JSONL", "clear error")
@pytest.mark.parametrize("case", sorted(SURROGATES))
@pytest.mark.parametrize("verb", ["run", "topics"])
def test_a_hostile_jsonl_line_is_one_line(tmp_path, capsys, case, verb):
    good = [json.dumps(doc(i, f"a{i % 3}", f"g{i % 2}")) for i in range(6)]
    path = write_jsonl(tmp_path / "bad.jsonl", [*good[:3], SURROGATES[case], *good[3:]])
    args = (
        ["run", "bm25", "--collection", path, "--runs-dir", tmp_path / "runs", "--no-progress"]
        if verb == "run"
        else ["topics", "--input", path, "--k", "2"]
    )
    line = one_line_error(*run_cli(capsys, *args)[::2])
    assert "bad.jsonl:4" in line
    assert not (tmp_path / "runs").exists()


SPACES = {
    "trailing space": "a0 ",
    "leading tab": "\ta0",
    "newline": "a0\n",
    "no-break space": "a0\u00a0",
    "NFD": None,
    "inner double space": None,
}


@hostile("author ids", "held")
@pytest.mark.parametrize("case", sorted(SPACES))
def test_author_ids_are_canonicalised_like_genres(tmp_path, case):
    from harness.data.collection import read_documents

    base, variant = "a0", SPACES[case]
    if case == "NFD":
        base, variant = unicodedata.normalize("NFC", "José"), unicodedata.normalize("NFD", "José")
    elif case == "inner double space":
        base, variant = "jo se", "jo  se"
    path = write_jsonl(
        tmp_path / "c.jsonl",
        [
            _record(authorIDs=[base]),
            _record(documentID="d2", authorIDs=[variant]),
            _record(documentID="d3", authorIDs=[base, variant]),
        ],
    )
    docs = read_documents([path])
    assert docs["d1"].authorIDs == docs["d2"].authorIDs == docs["d3"].authorIDs == (base,)


@hostile("author ids", "held")
def test_a_variant_author_id_makes_a_needle_not_a_second_author(tmp_path):
    from harness.data.collection import load_collection
    from harness.evaluation.split_builder import build_split

    recs = [
        _record(documentID="q", authorIDs=["a0"], genre="g1"),
        _record(documentID="n", authorIDs=["a0 "], genre="g2"),
        _record(documentID="x", authorIDs=["b"], genre="g1"),
        _record(documentID="y", authorIDs=["b"], genre="g2"),
    ]
    coll = load_collection("c", [write_jsonl(tmp_path / "c.jsonl", recs)])
    assert sorted(coll.foreground_authors()) == ["a0", "b"]
    split = build_split(coll, 0, 1.0)
    assert all(len(v) == 1 for v in split.needles.values())


FIXES = {
    "not JSON": "[{",
    "an object": '{"commit": "x"}',
    "an entry a number": "[1]",
    "commit missing": '[{"date": "2024-01-01", "systems": ["bm25"], "what": "x"}]',
    "systems a string": '[{"commit": "abc", "date": "d", "systems": "bm25", "what": "x"}]',
    "mark a number": '[{"commit": "abc", "date": "d", "systems": ["bm25"], "what": "x", "mark": 3}]',
    "lone surrogate": '[{"commit": "abc", "date": "d", "systems": ["bm25"], "what": "\\ud800"}]',
    "100,000 deep": "[" * 100000 + "]" * 100000,
    "not UTF-8": b"\xff[]",
}


@hostile("malformed fixes.json", "clear error")
@pytest.mark.parametrize("case", sorted(FIXES))
def test_a_malformed_fixes_registry_is_one_line(demo_runs, tmp_path, capsys, case):
    data = FIXES[case]
    (tmp_path / "fixes.json").write_bytes(data if isinstance(data, bytes) else data.encode())
    record = write_record(
        tmp_path / "record", runs=demo_runs, pages=tmp_path / "lb", splits=SPLITS, fixes=tmp_path / "fixes.json"
    )
    line = one_line_error(*run_cli(capsys, "leaderboard", "--record", record, "--no-plots")[::2])
    assert "fixes.json" in line
    assert not (tmp_path / "lb").exists()


LOGS = {
    "not JSON": "{",
    "a list": "[]",
    "log not a list": '{"log": 3}',
    "an entry a string": '{"log": ["x"]}',
    "loss a string": '{"log": [{"loss": "low"}]}',
    "lone surrogate": '{"log": [], "device": "\\udc00"}',
    "100,000 deep": "[" * 100000 + "]" * 100000,
    "config a list": None,
}


@hostile("malformed training log", "clear error")
@pytest.mark.parametrize("case", sorted(LOGS))
def test_a_malformed_training_log_is_one_line(demo_runs, tmp_path, capsys, case):
    training = tmp_path / "training"
    training.mkdir()
    if case == "config a list":
        (training / "m.train_log.json").write_text('{"log": [{"loss": 1.0}]}')
        (training / "m.train_config.json").write_text("[]")
    else:
        (training / "m.train_log.json").write_text(LOGS[case])
    record = write_record(tmp_path / "record", runs=demo_runs, pages=tmp_path / "lb", splits=SPLITS, training=training)
    line = one_line_error(*run_cli(capsys, "leaderboard", "--record", record, "--no-plots")[::2])
    assert "m.train_" in line
    assert not (tmp_path / "lb").exists()


CHECKPOINTS = [
    "progress not JSON",
    "progress a list",
    "step a string",
    "state missing",
    "state garbage",
    "state of another model",
    "state empty",
]


@hostile("malformed checkpoint", "clear error")
@pytest.mark.parametrize("case", CHECKPOINTS)
def test_a_malformed_checkpoint_is_one_error_naming_the_file(tmp_path, case):
    torch = pytest.importorskip("torch")
    from harness.errors import DataError
    from harness.neural.checkpoint import load_checkpoint

    model = torch.nn.Linear(3, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "progress.json").write_text('{"epoch": 0, "step": 1}')
    torch.save({"trainable": dict(model.named_parameters()), "optimizer": opt.state_dict()}, folder / "state.pt")
    if case == "progress not JSON":
        (folder / "progress.json").write_text("{")
    elif case == "progress a list":
        (folder / "progress.json").write_text("[]")
    elif case == "step a string":
        (folder / "progress.json").write_text('{"epoch": 0, "step": "1"}')
    elif case == "state missing":
        (folder / "state.pt").unlink()
    elif case == "state garbage":
        (folder / "state.pt").write_bytes(b"not a checkpoint")
    elif case == "state empty":
        (folder / "state.pt").write_bytes(b"")
    else:
        other = torch.nn.Linear(5, 4)
        torch.save({"trainable": dict(other.named_parameters()), "optimizer": opt.state_dict()}, folder / "state.pt")
    with pytest.raises(DataError, match="ckpt") as e:
        load_checkpoint(folder, model, opt)
    assert "\n" not in str(e.value)


@pytest.fixture
def read_only(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    (folder / "main.md").write_text("old")
    os.chmod(folder, 0o555)
    yield folder
    os.chmod(folder, 0o755)


WRITES = {
    "leaderboard into a read-only folder": lambda runs, ro, tmp: [
        "leaderboard",
        "--runs-dir",
        runs,
        "--out",
        ro,
        "--splits-dir",
        SPLITS,
        "--no-plots",
    ],
    "export into a read-only folder": lambda runs, ro, tmp: ["export", "--runs-dir", runs, "--out", ro],
    "export below a file": lambda runs, ro, tmp: ["export", "--runs-dir", runs, "--out", ro / "main.md" / "x"],
    "export with a name too long": lambda runs, ro, tmp: ["export", "--runs-dir", runs, "--out", tmp / ("x" * 300)],
    "split into a read-only folder": lambda runs, ro, tmp: [
        "split",
        "--collection",
        "demo",
        "--seeds",
        "5",
        "--splits-dir",
        ro,
    ],
}


@hostile("failed write (OSError)", "clear error")
@pytest.mark.parametrize("case", sorted(WRITES))
def test_a_failed_write_is_one_line_and_changes_nothing(demo_runs, read_only, tmp_path, capsys, case):
    if os.geteuid() == 0 and "read-only" in case:
        pytest.skip("root writes into read-only folders")
    before = snapshot(read_only)
    line = one_line_error(*run_cli(capsys, *WRITES[case](demo_runs, read_only, tmp_path))[::2])
    assert str(tmp_path) in line
    assert snapshot(read_only) == before


FULL = {
    "leaderboard": lambda runs, out, tmp: [
        "leaderboard",
        "--runs-dir",
        runs,
        "--out",
        out,
        "--splits-dir",
        SPLITS,
        "--no-plots",
    ],
    "export": lambda runs, out, tmp: ["export", "--runs-dir", runs, "--out", out],
    "topics": lambda runs, out, tmp: [
        "topics",
        "--input",
        tmp / "posts.jsonl",
        "--k",
        "4",
        "--svd-dims",
        "3",
        "--out",
        out / "labels.json",
        "--labelled-out",
        out / "labelled.jsonl",
    ],
    "split": lambda runs, out, tmp: ["split", "--collection", "demo", "--seeds", "0", "1001", "--splits-dir", out],
}


@hostile("failed write (OSError)", "clear error")
@pytest.mark.parametrize("after", [0, 1])
@pytest.mark.parametrize("verb", sorted(FULL))
def test_a_full_disk_mid_set_is_one_line_and_keeps_the_old_set(
    demo_runs, corpus, tmp_path, capsys, monkeypatch, verb, after
):
    from harness.foundation.output_set import Stage

    out = tmp_path / "out"
    args = FULL[verb](demo_runs, out, tmp_path)
    assert run_cli(capsys, *args)[0] == 0
    before = snapshot(out)
    written = []
    real = Stage.write

    def full(self, rel, data):
        if len(written) >= after:
            raise OSError(28, "No space left on device", str(self.folder / rel))
        written.append(rel)
        return real(self, rel, data)

    monkeypatch.setattr(Stage, "write", full)
    if verb == "split":  # new seeds, so the manifests are written again
        shutil.rmtree(out)
        shutil.copytree(SPLITS, out)
        args = ["split", "--collection", "demo", "--seeds", "7", "8", "--splits-dir", out]
        before = snapshot(out)
    line = one_line_error(*run_cli(capsys, *args)[::2])
    assert "No space left" in line
    assert snapshot(out) == before


@hostile("parameters", "clear error")
@pytest.mark.parametrize("resamples", ["0", "2000000000"])
def test_compare_resamples_out_of_range_is_one_line_before_any_work(tmp_path, capsys, resamples):
    from harness.cli import main

    runs = tmp_path / "runs"
    for system in ("bm25", "char-ngram"):
        assert (
            main(["run", system, "--collection", "demo", "--seeds", "0", "--runs-dir", str(runs), "--no-progress"]) == 0
        )
    capsys.readouterr()
    assert (
        main(
            ["compare", "bm25", "char-ngram", "--collection", "demo", "--runs-dir", str(runs), "--resamples", resamples]
        )
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"--resamples {resamples}: give 1 to 1,000,000" in err


REGISTRIES = {  # registry -> (the record's key, the file broken, the path the key names)
    "stale": ("stale", "stale.json", "stale.json"),
    "fixes": ("fixes", "fixes.json", "fixes.json"),
    "decontamination": ("decontamination", "training/decontamination.json", "training/decontamination.json"),
    "training sets": ("training_sets", "training/training-sets.json", "training/training-sets.json"),
    "training log": ("training", "training/x.train_log.json", "training"),
}
BROKEN = {"not UTF-8": b"\xff\xfe{}", "100,000 deep": b"[" * 100_000, "truncated": b'{"runs": ['}


@hostile("malformed record", "clear error")
@pytest.mark.parametrize("registry", sorted(REGISTRIES))
@pytest.mark.parametrize("broken", sorted(BROKEN))
def test_a_broken_record_file_is_one_line_and_writes_no_page(demo_runs, tmp_path, capsys, registry, broken):
    record, out = tmp_path / "record", tmp_path / "pages"
    key, broken_file, named = REGISTRIES[registry]
    path = record / broken_file
    path.parent.mkdir(parents=True)
    path.write_bytes(BROKEN[broken])
    write_record(record, runs=demo_runs, pages=out, **{key: record / named})
    line = one_line_error(*run_cli(capsys, "leaderboard", "--record", record, "--no-plots")[::2])
    assert str(path) in line and not out.exists()


@hostile("malformed record", "clear error")
@pytest.mark.parametrize("broken", sorted(BROKEN))
def test_a_broken_bench_result_is_one_line(demo_runs, tmp_path, capsys, broken, bench_installed):
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "x.json").write_bytes(BROKEN[broken])
    args = ["leaderboard", "--runs-dir", demo_runs, "--out", tmp_path / "pages", "--no-plots", "--bench-results", bench]
    line = one_line_error(*run_cli(capsys, *args)[::2])
    assert "the page 'performance.md'" in line and str(bench / "x.json") in line and not (tmp_path / "pages").exists()


@hostile("hostile input JSONL", "clear error")
@pytest.mark.parametrize("gz", [False, True])
def test_a_line_past_the_bound_is_one_line_not_a_memory_error(tmp_path, monkeypatch, gz):
    """A 2 GiB line (or a gzip bomb's endless one) once ended in a MemoryError; the bound is lowered here."""
    import gzip

    from harness.data import jsonl
    from harness.data.collection import load_collection
    from harness.errors import DataError

    monkeypatch.setattr(jsonl, "MAX_LINE_CHARS", 1000)
    text = json.dumps(doc(1, "a", "g1")) + "\n" + json.dumps(doc(2, "a", "g2", "x" * 5000)) + "\n"
    path = tmp_path / ("c.jsonl.gz" if gz else "c.jsonl")
    path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    with pytest.raises(DataError, match=r"c\.jsonl(\.gz)?:2: a line longer than 1,000 characters") as e:
        load_collection("c", [path])
    assert len(str(e.value).splitlines()) == 1


@hostile("malformed record", "clear error")
def test_a_json_file_past_the_bound_is_one_line(tmp_path, monkeypatch):
    from harness.data import jsonl
    from harness.errors import DataError

    monkeypatch.setattr(jsonl, "MAX_JSON_BYTES", 100)
    path = tmp_path / "stale.json"
    path.write_text(json.dumps({"runs": ["x" * 200]}))
    with pytest.raises(DataError, match=r"holds 2\d\d bytes, more than the 100 read at most"):
        jsonl.read_json(path, "stale-runs registry")


def _run(tmp_path, *args):
    return main(
        ["run", *args, "--runs-dir", str(tmp_path / "runs"), "--splits-dir", str(tmp_path / "splits"), "--no-progress"]
    )


def _nothing_written(tmp_path):
    return not (tmp_path / "runs").exists() and not (tmp_path / "splits").exists()


def test_malformed_json_names_file_and_line(tmp_path, capsys):
    path = write_jsonl(
        tmp_path / "bad.jsonl.gz", [doc(1, "a", "g1"), '{"documentID": "d2", oops', doc(3, "a", "g2")], gz=True
    )
    assert _run(tmp_path, "bm25", "--collection", str(path)) == 2
    err = capsys.readouterr().err
    assert f"{path}:2: malformed JSON" in err
    assert _nothing_written(tmp_path)


def test_missing_field(tmp_path):
    rec = doc(1, "a", "g1")
    del rec["genre"]
    path = write_jsonl(tmp_path / "c.jsonl", [doc(0, "a", "g2"), rec])
    with pytest.raises(DataError, match=r"c\.jsonl:2: record is missing field\(s\) 'genre'"):
        load_collection("c", [path])


def test_duplicate_document_id_across_files(tmp_path):
    a = write_jsonl(tmp_path / "a.jsonl", [doc(1, "a", "g1"), doc(2, "a", "g2")])
    b = write_jsonl(tmp_path / "b.jsonl", [doc(3, "z", "g1"), doc(1, "z", "g1")])
    with pytest.raises(DataError, match=r"b\.jsonl:2: duplicate documentID 'd1' \(first seen at .*a\.jsonl:1\)"):
        load_collection("c", [a], [b])


def test_empty_text(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", [doc(1, "a", "g1"), doc(2, "a", "g2", text="   \n")])
    with pytest.raises(DataError, match=r"c\.jsonl:2: document 'd2' has an empty 'fullText'"):
        load_collection("c", [path])


def test_foreground_author_with_one_genre(tmp_path):
    fg = write_jsonl(tmp_path / "foreground.jsonl", [doc(1, "a", "g1"), doc(2, "a", "g2"), doc(3, "b", "g1")])
    with pytest.raises(DataError, match="foreground author 'b' has documents in only one genre"):
        load_collection("hrs", [fg], explicit_foreground=True)


def test_collection_without_any_multi_genre_author(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", [doc(1, "a", "g1"), doc(2, "b", "g2")])
    with pytest.raises(DataError, match="no author has documents in two or more genres"):
        load_collection("c", [path])


def test_missing_data_folder(tmp_path, capsys):
    assert _run(tmp_path, "bm25", "--collection", "pan19-en", "--data-dir", str(tmp_path / "nowhere")) == 2
    err = capsys.readouterr().err
    assert "nowhere: public corpora folder not found" in err and "--data-dir" in err and "AA_HARNESS_CORPORA" in err
    assert _nothing_written(tmp_path)


def test_missing_hrs_location(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("AA_HARNESS_HRS_DIR", raising=False)
    assert _run(tmp_path, "bm25", "--collection", "hrs1") == 2
    assert "AA_HARNESS_HRS_DIR" in capsys.readouterr().err


def test_unknown_system_suggests_close_names(tmp_path, capsys):
    assert _run(tmp_path, "bm52", "--collection", "demo") == 2
    assert "unknown system 'bm52'; did you mean 'bm25'?" in capsys.readouterr().err
    assert _nothing_written(tmp_path)


def test_unknown_collection_suggests_close_names():
    with pytest.raises(UnknownNameError, match="did you mean 'pan19-en'"):
        load_registry().collection("pan19")


def test_unknown_config_key(tmp_path, capsys):
    assert _run(tmp_path, "bm25", "--set", "k=1.2") == 2
    assert "BM25Config has no key 'k'; did you mean 'k1'?" in capsys.readouterr().err


def test_bad_config_value(tmp_path, capsys):
    assert _run(tmp_path, "bm25", "--set", "b=7") == 2
    assert "0 <= b <= 1" in capsys.readouterr().err


def test_truncated_gzip(tmp_path):
    path = tmp_path / "t.jsonl.gz"
    data = gzip.compress(b'{"documentID": "d1", "authorIDs": ["a"], "fullText": "x", "genre": "g"}\n' * 50)
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(DataError, match="cannot read"):
        load_collection("t", [path])


def test_running_a_reranker_as_a_ranker_says_how_to_rerank(tmp_path, capsys):
    assert _run(tmp_path, "sadiri-v2-reranker") == 2
    assert "aa-harness rerank sadiri-v2-reranker --first-stage RUN" in capsys.readouterr().err
    assert _nothing_written(tmp_path)


@pytest.mark.parametrize("text", ["\u200b\u200b", "\ufeff \u2060", "\u200c\u200d\t", "\x00\x01"])
def test_a_text_of_invisible_characters_is_empty(tmp_path, text):
    path = write_jsonl(tmp_path / "c.jsonl", [doc(1, "a", "g1"), doc(2, "a", "g2", text=text)])
    with pytest.raises(DataError, match=r"c\.jsonl:2: document 'd2' has an empty 'fullText' \(nothing but spaces"):
        load_collection("c", [path])
    assert load_collection(
        "c", [write_jsonl(tmp_path / "ok.jsonl", [doc(1, "a", "g1"), doc(2, "a", "g2", text="\u200bé")])]
    )
