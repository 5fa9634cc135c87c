import random
from dataclasses import replace

import pytest

from harness.data.collection import load_collection
from harness.data.demo import demo_collection
from harness.errors import DataError
from harness.evaluation.manifests import read_manifest, write_manifest
from harness.evaluation.split import check_split
from harness.evaluation.split_builder import build_split
from harness.evaluation.split_settings import SEEDS
from harness.evaluation.split_store import get_split
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


def test_kept_pan19_uncapped_manifests_are_the_split_before_the_cap(corpora):
    """The manifests the moved pan19-en runs (leaderboards/stale/pan19-en-v2-uncapped) were made on:
    pan19-en-v2-uncapped (the second release, no cap, author fraction 0.5) builds them, byte for byte but
    for the collection's name."""
    import json

    from harness.data.builtin import pan_collection

    c = pan_collection("pan19-en-v2-uncapped", corpora)
    for seed in SEEDS:
        kept = json.loads((RECORD / "pan19-en-v2-uncapped" / f"seed-{seed}.json").read_text(encoding="utf-8"))
        built = json.loads(build_split(c, seed).to_json())
        assert kept.pop("collection") == "pan19-en" and built.pop("collection") == "pan19-en-v2-uncapped"
        kept.pop("sha256"), built.pop("sha256")
        assert kept == built


def test_no_committed_pan19_manifest_gives_one_author_over_a_quarter_of_the_queries():
    from harness.evaluation.split_counts import largest_author_share

    for seed in SEEDS:
        split = read_manifest(RECORD / "pan19-en" / f"seed-{seed}.json")
        author, n = largest_author_share(split)
        assert 4 * n <= len(split.queries), f"seed {seed}: {author} has {n} of {len(split.queries)} queries"
        assert split.builder["max_per_author_genre"] == 22 and split.builder["author_fraction"] == 1.0


def test_manifest_from_other_data_is_refused(tmp_path, small_collection_file):
    c = load_collection("small", [small_collection_file])
    get_split(c, 0, tmp_path)
    write_jsonl(small_collection_file, [doc(1, "a", "g1"), doc(2, "a", "g2"), doc(9, "b", "g1"), doc(5, "b", "g3")])
    changed = load_collection("small", [small_collection_file])
    with pytest.raises(DataError, match="different documents"):
        get_split(changed, 0, tmp_path)


def _prolific(tmp_path, order=1):
    """Author `big` with 30 documents in g1 and 12 in g2; six others with 2 + 2."""
    recs = [doc(i, "big", "g1") for i in range(30)] + [doc(100 + i, "big", "g2") for i in range(12)]
    recs += [doc(200 + 4 * a + j, f"a{a}", f"g{1 + j % 2}") for a in range(6) for j in range(4)]
    return load_collection("prolific", [write_jsonl(tmp_path / "prolific.jsonl", recs[::order])])


def _per_author_genre(split, collection):
    counts: dict = {}
    for d in [*(q.documentID for q in split.queries), *split.candidates]:
        for a in collection.documents[d].authorIDs:
            key = (a, collection.documents[d].genre)
            counts[key] = counts.get(key, 0) + 1
    return counts


def test_the_cap_keeps_at_most_n_documents_per_author_and_genre(tmp_path):
    c = _prolific(tmp_path)
    for seed in SEEDS:
        s = build_split(c, seed, 1.0, max_per_author_genre=5)
        assert max(_per_author_genre(s, c).values()) == 5
        assert _per_author_genre(s, c)[("a0", "g1")] == 2  # smaller cells are left whole
        assert s.builder["max_per_author_genre"] == 5 and s.builder["left_out_by_cap"] == 25 + 7
        check_split(s, c)
    assert "max_per_author_genre" not in build_split(c, 0, 1.0).builder  # no cap: the builder record as before


def test_the_cap_depends_on_the_seed_alone(tmp_path):
    c = _prolific(tmp_path)
    a = build_split(c, 1001, 1.0, max_per_author_genre=5).to_json()
    random.seed(7)  # global randomness must not matter
    assert build_split(_prolific(tmp_path / "again"), 1001, 1.0, max_per_author_genre=5).to_json() == a
    reversed_file = _prolific(tmp_path / "reversed", order=-1)  # nor the order of the documents
    assert build_split(reversed_file, 1001, 1.0, max_per_author_genre=5).to_json() == a
    kept = [{q.documentID for q in build_split(c, seed, 1.0, max_per_author_genre=5).queries} for seed in SEEDS]
    assert len({frozenset(k) for k in kept}) > 1  # another seed keeps other documents


def test_the_cap_is_recorded_and_rebuilt(tmp_path, monkeypatch):
    from harness.evaluation.split_store import check_by_rebuilding

    monkeypatch.setenv("AA_HARNESS_CACHE", str(tmp_path / "cache"))
    c = _prolific(tmp_path)
    capped = replace(c, split_defaults={"author_fraction": 1.0, "max_per_author_genre": 5})
    split = get_split(capped, 0, tmp_path / "splits")
    path = tmp_path / "splits" / "prolific" / "seed-0.json"
    assert read_manifest(path).builder["max_per_author_genre"] == 5
    check_by_rebuilding(read_manifest(path), path, c)  # the manifest's settings, not the collection's, rebuild it
    assert get_split(capped, 0, tmp_path / "splits") == split
    with pytest.raises(DataError, match=r"at most 5 documents per \(author, genre\), asked for at most 6"):
        get_split(capped, 0, tmp_path / "splits", max_per_author_genre=6)
    with pytest.raises(DataError, match="asked for no cap"):
        get_split(capped, 0, tmp_path / "splits", max_per_author_genre=0)


@pytest.mark.parametrize("cap", [-1, 1.5, True, "5"])
def test_a_cap_out_of_range_is_one_line(tmp_path, cap):
    from harness.errors import HarnessError

    with pytest.raises(
        HarnessError,
        match=r"^max documents per \(author, genre\) must be a whole number of at least 1 "
        r"\(0: no cap\), got .*$",
    ):
        build_split(_prolific(tmp_path), 0, 1.0, max_per_author_genre=cap)


@pytest.mark.parametrize("fraction", [0, -0.5, 1.5])
def test_an_author_fraction_out_of_range_is_one_line(demo, fraction):
    from harness.errors import HarnessError

    with pytest.raises(HarnessError, match=r"^author fraction must be in \(0, 1\], got "):
        build_split(demo, 0, fraction)
