"""HRS-like collections: topic labels, role pools, the paper's pool, the dissimilarity rule."""

import json
import random

import pytest

from harness.data.role_collections import role_collection
from harness.data.topic_labels import (
    TopicSettings,
    derive_topics,
    input_fingerprint,
    load_or_derive,
    read_labels,
    write_labels,
)
from harness.evaluation.dissimilarity import DissimilarityRule
from harness.evaluation.split_builder import build_split
from harness.evaluation.split_settings import SEEDS
from harness.evaluation.split_store import get_split
from tests.conftest import RECORD, write_jsonl

THEMES = {
    "sea": "boat harbour sail wave tide anchor fish coast",
    "food": "bread oven flour butter recipe dough bake sugar",
    "code": "python compiler bug function loop variable debug server",
}
SMALL = TopicSettings(k=3, svd_dims=4, min_df=1, max_df=0.9)


def themed_records(n_fg=6, n_bg=12):
    """Foreground authors write about two or three themes, background authors one post each."""
    rng = random.Random(5)
    themes = sorted(THEMES)
    recs = []
    for a in range(n_fg):
        for j, t in enumerate(themes[: 2 + a % 2]):
            words = THEMES[t].split()
            text = " ".join(rng.choice(words) for _ in range(40)) + f" signature{a}"
            recs.append(
                {
                    "documentID": f"fg{a}-{j}",
                    "authorIDs": [f"fg{a}"],
                    "fullText": text,
                    "genre": "blog",
                    "role": "foreground",
                }
            )
    for b in range(n_bg):
        words = THEMES[themes[b % 3]].split()
        recs.append(
            {
                "documentID": f"bg{b}",
                "authorIDs": [f"bg{b}"],
                "genre": "blog",
                "role": "background",
                "fullText": " ".join(rng.choice(words) for _ in range(40)),
            }
        )
    return recs


def test_topic_labelling_is_deterministic_and_finds_the_themes():
    texts = {r["documentID"]: r["fullText"] for r in themed_records()}
    a = derive_topics(texts, SMALL)
    random.seed(99)  # global randomness must not matter
    shuffled = dict(sorted(texts.items(), reverse=True))  # nor the input order
    b = derive_topics(shuffled, SMALL)
    assert a.to_json() == b.to_json() and a.sha256 == b.sha256
    # each theme is one topic
    theme_of = {
        d: next(t for t in THEMES if THEMES[t].split()[0] in x or THEMES[t].split()[1] in x) for d, x in texts.items()
    }
    assert len({(theme_of[d], lab) for d, lab in a.labels.items()}) == 3
    assert a.summary()["settings"]["k"] == 3 and a.summary()["labels_sha256"] == a.sha256


def test_labels_file_round_trip_and_reuse(tmp_path):
    texts = {r["documentID"]: r["fullText"] for r in themed_records()}
    labels = derive_topics(texts, SMALL)
    path = write_labels(labels, tmp_path / "labels.json")
    assert read_labels(path) == labels
    # a stored file for the same texts and settings is used as is
    obj = json.loads(path.read_text())
    assert load_or_derive(texts, SMALL, path).labels == labels.labels
    assert obj["input_sha256"] == input_fingerprint(texts)
    # tampering is detected
    obj["labels"]["fg0-0"] = "topic:9"
    path.write_text(json.dumps(obj))
    with pytest.raises(Exception, match="labels_sha256"):
        read_labels(path)


def test_role_collection_with_topics_gives_byte_identical_manifests_that_record_the_labels(tmp_path):
    path = write_jsonl(tmp_path / "pool.jsonl", themed_records())
    c1 = role_collection("x", path, topics=SMALL, split_defaults={"author_fraction": 1.0, "pool": "paper"})
    c2 = role_collection("x", path, topics=SMALL, split_defaults={"author_fraction": 1.0, "pool": "paper"})
    assert all(d.startswith("bg") for d in c1.background_ids)
    s1, s2 = build_split(c1, 0), build_split(c2, 0)
    assert s1.to_json() == s2.to_json()
    labels = s1.builder["derivation"]["topic_labels"]
    assert labels["labels_sha256"] == derive_topics({d: x.fullText for d, x in c1.documents.items()}, SMALL).sha256
    assert labels["settings"]["k"] == 3
    for q in s1.queries:
        assert all(c1.documents[n].genre != q.genre for n in s1.needles[q.documentID])


def test_single_genre_foreground_author_is_haystack(tmp_path):
    recs = [
        {"documentID": "a1", "authorIDs": ["a"], "fullText": "x y", "genre": "r:one", "role": "foreground"},
        {"documentID": "a2", "authorIDs": ["a"], "fullText": "x z", "genre": "r:two", "role": "foreground"},
        {"documentID": "b1", "authorIDs": ["b"], "fullText": "x w", "genre": "r:one", "role": "foreground"},
        {"documentID": "b2", "authorIDs": ["b"], "fullText": "x v", "genre": "r:one", "role": "foreground"},
        {"documentID": "c1", "authorIDs": ["c"], "fullText": "x u", "genre": "r:two", "role": "background"},
    ]
    c = role_collection("r", write_jsonl(tmp_path / "r.jsonl", recs))
    assert c.background_ids == {"b1", "b2", "c1"}
    assert c.foreground_authors() == ["a"]


def test_paper_pool_leaves_out_foreground_authors_not_sampled(tmp_path):
    path = write_jsonl(tmp_path / "pool.jsonl", themed_records(n_fg=8))
    c = role_collection("x", path, topics=SMALL)
    paper = build_split(c, 1001, 0.5, pool="paper")
    full = build_split(c, 1001, 0.5, pool="all")
    sampled = {a for q in paper.queries for a in q.authorIDs}
    for d in paper.candidates:
        assert d in c.background_ids or set(c.documents[d].authorIDs) & sampled
    assert len(full.candidates) > len(paper.candidates)
    assert paper.builder["pool_sizes"] == {"all": len(full.candidates), "paper": len(paper.candidates)}
    assert paper.needles == full.needles


def test_dissimilarity_rule_drops_queries_with_a_close_needle(tmp_path):
    recs = themed_records()
    # fg0's posts share a long run of private words: lexically close across topics
    for r in recs:
        if r["authorIDs"] == ["fg0"]:
            r["fullText"] += " zebulon quixotic marmalade " * 20
    path = write_jsonl(tmp_path / "pool.jsonl", recs)
    c = role_collection("x", path, topics=SMALL, split_defaults={"author_fraction": 1.0})
    plain = build_split(c, 0, dissimilarity=False)
    ruled = build_split(c, 0, dissimilarity=DissimilarityRule(threshold=0.3))
    kept = {q.documentID for q in ruled.queries}
    assert not any(q.startswith("fg0-") for q in kept)
    assert kept < {q.documentID for q in plain.queries}
    info = ruled.builder["dissimilarity"]
    assert info["threshold"] == 0.3 and info["queries_before"] == len(plain.queries)
    assert info["queries_dropped"] == len(plain.queries) - len(kept)
    assert ruled.candidates == plain.candidates  # queries go, the pool stays
    # a committed manifest with another rule is refused
    get_split(c, 0, tmp_path / "splits", dissimilarity=DissimilarityRule(threshold=0.3))
    with pytest.raises(Exception, match="dissimilarity"):
        get_split(c, 0, tmp_path / "splits", dissimilarity=DissimilarityRule(threshold=0.2))


def test_a_view_without_the_rule_records_each_querys_needle_cosine(tmp_path):
    recs = themed_records()
    for r in recs:
        if r["authorIDs"] == ["fg0"]:
            r["fullText"] += " zebulon quixotic marmalade " * 20
    path = write_jsonl(tmp_path / "pool.jsonl", recs)
    measure = {k: v for k, v in DissimilarityRule().as_dict().items() if k != "threshold"}
    ruled_c = role_collection(
        "x", path, topics=SMALL, split_defaults={"author_fraction": 1.0, "dissimilarity": {"threshold": 0.3}}
    )
    all_c = role_collection(
        "x-all", path, topics=SMALL, split_defaults={"author_fraction": 1.0, "needle_cosine": measure}
    )
    ruled, every = build_split(ruled_c, 0), build_split(all_c, 0)
    cosine = every.builder["needle_cosine"]["by_query"]
    assert set(cosine) == {q.documentID for q in every.queries} and "threshold" not in every.builder["needle_cosine"]
    # the rule's view is exactly the queries of the full view below the threshold, on the same pool
    assert {q.documentID for q in ruled.queries} == {q for q, v in cosine.items() if v < 0.3}
    assert ruled.candidates == every.candidates
    assert max(v for q, v in cosine.items() if q.startswith("fg0-")) >= 0.3


@pytest.mark.slow
@pytest.mark.parametrize("name", ["reddit-xsub", "blogs-xtopic"])
def test_committed_manifests_are_reproduced(corpora, name):
    from harness.data import builtin

    loader = {"reddit-xsub": builtin.reddit_xsub_collection, "blogs-xtopic": builtin.blogs_xtopic_collection}[name]
    c = loader(corpora)
    for seed in SEEDS:
        path = RECORD / name / f"seed-{seed}.json"
        assert path.read_text(encoding="utf-8") == build_split(c, seed).to_json(), f"{path} is stale"


@pytest.mark.slow
def test_committed_blogs_topic_labels_are_rederived(corpora):
    from harness.data.builtin import BLOGS_TOPICS, topic_labels_path
    from harness.data.collection import read_documents

    docs = read_documents([corpora / "blogs-xtopic.jsonl.gz"])
    labels = derive_topics({d: x.fullText for d, x in docs.items()}, TopicSettings(**BLOGS_TOPICS))
    assert labels.to_json() == topic_labels_path("blogs-xtopic").read_text(encoding="utf-8")
