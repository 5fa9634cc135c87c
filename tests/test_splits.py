import random

import pytest

from harness.data.collection import load_collection
from harness.data.demo import demo_collection
from harness.errors import DataError
from harness.evaluation.splits import (
    SEEDS,
    build_split,
    check_split,
    get_split,
    read_manifest,
    write_manifest,
)
from tests.conftest import RECORD, doc, write_jsonl


@pytest.fixture(scope="module")
def demo():
    return demo_collection()


def test_same_seed_gives_byte_identical_manifest(demo, tmp_path):
    a = build_split(demo, 1001).to_json()
    random.seed(12345)  # global randomness must not matter
    random.random()
    b = build_split(demo_collection(), 1001).to_json()
    assert a == b


def test_seeds_differ_and_guarantees_hold(demo):
    splits = [build_split(demo, s) for s in SEEDS]
    assert len({s.sha256 for s in splits}) == 4
    for s in splits:
        check_split(s, demo)
        genre = s.query_genres
        for q, needles in s.needles.items():
            assert needles and all(demo.documents[n].genre != genre[q] for n in needles)
            assert all(set(demo.documents[n].authorIDs) & set(demo.documents[q].authorIDs) for n in needles)
        assert not {q.documentID for q in s.queries} & set(s.candidates)


def test_all_query_author_docs_in_chosen_genre_are_queries(demo):
    s = build_split(demo, 0)
    qids = {q.documentID for q in s.queries}
    for q in s.queries:
        same = {d for d, doc in demo.documents.items() if doc.authorIDs == q.authorIDs and doc.genre == q.genre}
        assert same <= qids


def test_author_fraction_controls_query_authors(demo):
    full = build_split(demo, 0, author_fraction=1.0)
    half = build_split(demo, 0, author_fraction=0.5)
    assert full.content()["counts"]["query_authors"] == 60
    assert half.content()["counts"]["query_authors"] == 30
    # non-sampled foreground authors stay in the pool as distractors
    assert len(half.candidates) > len(full.candidates)


def test_manifest_round_trip_and_tamper_detection(demo, tmp_path):
    s = build_split(demo, 2001)
    path = write_manifest(s, tmp_path)
    assert read_manifest(path) == s
    path.write_text(path.read_text().replace('"seed": 2001', '"seed": 2002'))
    with pytest.raises(DataError, match="sha256 does not match"):
        read_manifest(path)


def test_committed_demo_manifests_are_reproduced(demo):
    for seed in SEEDS:
        path = RECORD / "demo" / f"seed-{seed}.json"
        assert path.read_text(encoding="utf-8") == build_split(demo, seed).to_json(), f"{path} is stale"


def test_committed_pan19_manifests_are_reproduced(corpora):
    from harness.data.builtin import pan_collection

    c = pan_collection("pan19-en", corpora)
    for seed in SEEDS:
        path = RECORD / "pan19-en" / f"seed-{seed}.json"
        assert path.read_text(encoding="utf-8") == build_split(c, seed).to_json(), f"{path} is stale"


def test_kept_pan19_v1_manifests_are_the_first_release_split(corpora):
    """The manifests the stale pan19-en runs were made on: pan19-en-v1 (the first file) builds them, byte for byte
    but for the collection's name, which stays the one those runs were recorded under."""
    import json

    from harness.data.builtin import pan_collection

    c = pan_collection("pan19-en-v1", corpora)
    for seed in SEEDS:
        kept = json.loads((RECORD / "pan19-en-v1" / f"seed-{seed}.json").read_text(encoding="utf-8"))
        built = json.loads(build_split(c, seed).to_json())
        assert kept.pop("collection") == "pan19-en" and built.pop("collection") == "pan19-en-v1"
        kept.pop("sha256"), built.pop("sha256")
        assert kept == built


def test_manifest_from_other_data_is_refused(tmp_path, small_collection_file):
    c = load_collection("small", [small_collection_file])
    get_split(c, 0, tmp_path)
    write_jsonl(small_collection_file, [doc(1, "a", "g1"), doc(2, "a", "g2"), doc(9, "b", "g1"), doc(5, "b", "g3")])
    changed = load_collection("small", [small_collection_file])
    with pytest.raises(DataError, match="different documents"):
        get_split(changed, 0, tmp_path)
