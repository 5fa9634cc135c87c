"""Pool cleaning of the -all views: bots and near-copies out, everything else as the draws made it,
recorded in the manifest and rebuilt from it; bad settings are one line."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from harness.data.collection import load_collection
from harness.errors import DataError, HarnessError
from harness.evaluation.manifests import read_manifest
from harness.evaluation.pool_cleaning import PoolCleaning, bot_authors
from harness.evaluation.split import check_split
from harness.evaluation.split_builder import build_split
from harness.evaluation.split_settings import SEEDS
from harness.evaluation.split_store import check_by_rebuilding, get_split
from tests.conftest import RECORD, doc, write_jsonl

CLEAN = {"bots": True, "near_copy_cosine": 0.65}
WORDS = (
    "river garden lantern copper violin orchard harbor meadow pepper candle saddle marble thunder "
    "velvet canyon pillow falcon ginger quartz willow"
).split()


def _text(i: int) -> str:
    """A text of its own: a different run of words for each i, so no two share much vocabulary."""
    return " ".join(f"{WORDS[(i * 7 + k) % len(WORDS)]}{i}x{k % 5}" for k in range(40))


def _collection(tmp_path):
    recs = [
        doc(1, "x:helperbot", "g1", "Here is your summary. I am a bot, this action was performed automatically."),
        doc(2, "x:helperbot", "g2", "Another summary for you. I am a bot."),
        doc(3, "x:yungrobot", "g1", _text(3)),
        doc(4, "x:yungrobot", "g2", _text(4)),  # a person's name
        doc(5, "x:alice", "g1", _text(5)),
        doc(6, "x:alice", "g2", _text(5) + " again"),  # a cross-post
        doc(90, "x:loner", "g1", _text(90)),
    ]  # one genre: background
    recs += [doc(10 + 2 * a + j, f"x:p{a}", f"g{1 + j}", _text(10 + 2 * a + j)) for a in range(6) for j in range(2)]
    return load_collection("cleaning", [write_jsonl(tmp_path / "c.jsonl", recs)])


def test_bots_and_near_copies_leave_and_every_other_query_stays(tmp_path):
    c = _collection(tmp_path)
    assert bot_authors(c) == ["x:helperbot"]  # yungrobot's id ends in "bot", but nothing says it is one
    for seed in SEEDS:
        plain = build_split(c, seed, 1.0, pool_cleaning=False)
        clean = build_split(c, seed, 1.0, pool_cleaning=CLEAN)
        check_split(clean, c)
        docs = {q.documentID for q in clean.queries} | set(clean.candidates)
        assert not docs & {"d1", "d2"} and {"d3", "d4"} <= docs
        kept = {q.documentID for q in clean.queries}
        assert not kept & {"d5", "d6"}  # alice's query is the same text as its needle
        assert kept == {q.documentID for q in plain.queries} - {"d1", "d2", "d5", "d6"}
        assert all(clean.needles[q] == plain.needles[q] for q in kept)
        rec = clean.builder["pool_cleaning"]
        assert rec["bot_authors"] == ["x:helperbot"] and rec["queries_dropped_as_bots"] == 1
        assert rec["queries_dropped_near_copy"] == 1 and rec["bot_candidates_removed"] == 1
        assert set(plain.candidates) - set(clean.candidates) == {"d1", "d2"} & set(plain.candidates)


def test_the_cleaning_is_recorded_and_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("AA_HARNESS_CACHE", str(tmp_path / "cache"))
    c = replace(_collection(tmp_path), split_defaults={"author_fraction": 1.0, "pool_cleaning": CLEAN})
    split = get_split(c, 0, tmp_path / "splits")
    path = tmp_path / "splits" / "cleaning" / "seed-0.json"
    check_by_rebuilding(read_manifest(path), path, replace(c, split_defaults={}))  # rebuilt from the manifest's rule
    assert get_split(c, 0, tmp_path / "splits") == split
    with pytest.raises(DataError, match="built with pool cleaning .*, asked for None"):
        get_split(c, 0, tmp_path / "splits", pool_cleaning=False)


@pytest.mark.parametrize(
    "value, words",
    [
        ({"near_copy_cosine": "high"}, "near_copy_cosine must be a cosine"),
        ({"near_copy_cosine": 0}, "near_copy_cosine must be a cosine"),
        ({"bots": "yes"}, "bots must be true or false"),
        ({"bot": True}, "unknown key"),
        ("on", "must be a table"),
    ],
)
def test_a_bad_cleaning_setting_is_one_line(value, words):
    with pytest.raises(HarnessError, match=words) as e:
        PoolCleaning.from_value(value)
    assert len(str(e.value).splitlines()) == 1 and str(e.value).startswith("pool_cleaning")


def test_the_committed_all_views_are_the_uncleaned_ones_less_bots_and_near_copies():
    for c in ("reddit-xsub-all", "blogs-xtopic-all"):
        for seed in SEEDS:
            new = json.loads((RECORD / c / f"seed-{seed}.json").read_text(encoding="utf-8"))
            old = json.loads((RECORD / f"{c}-uncleaned" / f"seed-{seed}.json").read_text(encoding="utf-8"))
            rec = new["builder"]["pool_cleaning"]
            assert set(new["needles"]) <= set(old["needles"])
            assert all(new["needles"][q] == old["needles"][q] for q in new["needles"])
            cos = old["builder"]["needle_cosine"]["by_query"]
            near = {q for q in old["needles"] if cos[q] >= rec["near_copy_cosine"]}
            assert len(old["needles"]) - len(new["needles"]) == rec["queries_dropped_as_bots"] + len(near)
            assert rec["queries_dropped_near_copy"] == len(near)
            assert not near & set(new["needles"]) and max(new["builder"]["needle_cosine"]["by_query"].values()) < 0.65
    reddit = json.loads((RECORD / "reddit-xsub-all" / "seed-0.json").read_text(encoding="utf-8"))
    assert reddit["builder"]["pool_cleaning"]["bot_authors"] == [
        "reddit:AntiObnoxiousBot",
        "reddit:Reddit-Book-Bot",
        "reddit:sneakpeekbot",
        "reddit:wikipedia_answer_bot",
    ]


@pytest.mark.corpora
def test_the_kept_uncleaned_manifests_are_the_views_without_the_cleaning(corpora):
    """The manifests the stale -all runs were made on: the view's builder with no pool cleaning
    rebuilds them byte for byte, and with it, the committed manifests."""
    from harness.data.builtin import all_view_collection

    for c in ("reddit-xsub-all", "blogs-xtopic-all"):
        view = all_view_collection(c.removesuffix("-all"), corpora)
        for seed in SEEDS:
            kept = (RECORD / f"{c}-uncleaned" / f"seed-{seed}.json").read_text(encoding="utf-8")
            assert build_split(view, seed, pool_cleaning=False).to_json() == kept
            assert build_split(view, seed).to_json() == (RECORD / c / f"seed-{seed}.json").read_text(encoding="utf-8")
