"""HIATUS TA1 sample folders read as shipped (a synthetic folder in the released layout)."""

import pytest

from harness.data.hiatus import find_ta1_folders, ta1_collection
from harness.errors import DataError
from harness.evaluation.split_builder import build_split
from tests.conftest import write_jsonl


def _folder(root, sample, label, queries, candidates, truth):
    base = f"HRS1_english_long_sample-{sample}_{label}"
    folder = root / "HRS1_english_long" / "TA1" / base
    write_jsonl(folder / "data" / f"{base}_TA1_input_queries.jsonl", queries)
    write_jsonl(folder / "data" / f"{base}_TA1_input_candidates.jsonl", candidates)
    write_jsonl(folder / "groundtruth" / f"{base}_TA1_groundtruth.jsonl", truth)
    return folder


def _docs(ids):
    return [{"documentID": i, "fullText": f"text of {i}"} for i in ids]


def test_ta1_folder_becomes_a_given_split(tmp_path):
    truth = [
        {"documentID": d, "authorIDs": [a]}
        for d, a in [("q1", "A"), ("q2", "B"), ("c1", "A"), ("c2", "B"), ("c3", "B"), ("c4", "C")]
    ]
    _folder(tmp_path, 0, "perGenre-HRS1.3", _docs(["q1", "q2"]), _docs(["c1", "c2", "c3", "c4"]), truth)
    found = find_ta1_folders(tmp_path)
    assert list(found) == ["hrs1-perGenre-HRS1.3"]
    c = ta1_collection("hrs1-perGenre-HRS1.3", found["hrs1-perGenre-HRS1.3"])
    split = build_split(c, 0)
    assert split.needles == {"q1": ("c1",), "q2": ("c2", "c3")}
    assert {q.genre for q in split.queries} == {"perGenre-HRS1.3"}
    assert split.candidates == ("c1", "c2", "c3", "c4")
    with pytest.raises(Exception, match="fixed splits for seed"):
        build_split(c, 1001)


def test_ta1_document_without_groundtruth(tmp_path):
    truth = [{"documentID": "q1", "authorIDs": ["A"]}, {"documentID": "c1", "authorIDs": ["A"]}]
    _folder(tmp_path, 0, "crossGenre", _docs(["q1"]), _docs(["c1", "c9"]), truth)
    with pytest.raises(DataError, match="'c9' has no groundtruth authors"):
        ta1_collection("hrs1-crossGenre", find_ta1_folders(tmp_path)["hrs1-crossGenre"])


def test_hrs_collections_are_registered_from_the_environment(tmp_path, monkeypatch):
    from harness.plugins import load_registry

    truth = [{"documentID": "q1", "authorIDs": ["A"]}, {"documentID": "c1", "authorIDs": ["A"]}]
    _folder(tmp_path, 0, "perGenre-HRS1.1", _docs(["q1"]), _docs(["c1"]), truth)
    monkeypatch.setenv("AA_HARNESS_HRS_DIR", str(tmp_path))
    reg = load_registry()
    c = reg.collection("hrs1-perGenre-HRS1.1").load()
    assert build_split(c, 0).needles == {"q1": ("c1",)}


def test_hrs_foreground_background_layout(tmp_path, monkeypatch):
    from harness.plugins import load_registry

    fg = [
        {"documentID": f"f{i}", "authorIDs": [a], "genre": g, "fullText": "x"}
        for i, (a, g) in enumerate([("A", "news"), ("A", "forum"), ("B", "news"), ("B", "reviews")])
    ]
    write_jsonl(tmp_path / "hrs1" / "foreground.jsonl", fg)
    write_jsonl(
        tmp_path / "hrs1" / "background.jsonl",
        [{"documentID": "b1", "authorIDs": ["Z"], "genre": "news", "fullText": "y"}],
    )
    monkeypatch.setenv("AA_HARNESS_HRS_DIR", str(tmp_path))
    c = load_registry().collection("hrs1").load()
    assert c.background_ids == {"b1"} and c.foreground_authors() == ["A", "B"]
