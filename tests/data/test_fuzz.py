"""Property-based tests (hypothesis) over the JSONL reader and the split builder.

Random records either load and give manifests whose invariants hold, or fail with a
HarnessError; never another exception. Bounded to run in CI in well under a minute.
"""

from __future__ import annotations

import gzip
import json
import string
import tempfile
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from harness.data.collection import load_collection
from harness.errors import HarnessError
from harness.evaluation.manifests import split_from_manifest
from harness.evaluation.split import check_split
from harness.evaluation.split_builder import build_split

FUZZ = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None, derandomize=True
)

GOOD_NAMES = ["a", "b", "c", "d", "e", " a", "b "]
GOOD_GENRES = ["blog", " blog", "blog\n", "news", "Mail", "mail", "e\u0301", "\u00e9", "two  words", "two words"]
names = st.sampled_from(GOOD_NAMES + [""])
genres = st.sampled_from(GOOD_GENRES + ["", "   "])
texts = st.one_of(st.text(min_size=0, max_size=12), st.sampled_from(["some text", "x", "  "]))
junk = st.one_of(
    st.none(), st.integers(-3, 3), st.floats(allow_nan=True), st.booleans(), st.lists(st.integers(), max_size=2)
)


def good_record(i: int):
    """A canonical record, though genres and authors may carry stray whitespace or co-authors."""
    return st.fixed_dictionaries(
        {
            "documentID": st.just(f"d{i}"),
            "authorIDs": st.one_of(
                st.lists(st.sampled_from(GOOD_NAMES), min_size=1, max_size=3), st.sampled_from(GOOD_NAMES)
            ),
            "fullText": st.sampled_from(["some text", "x", "more words here", "caf\u00e9 \U0001f600"]),
            "genre": st.sampled_from(GOOD_GENRES),
        },
        optional={"extra": st.one_of(junk, st.text(max_size=4))},
    )


BAD_FIELDS = {
    "documentID": st.one_of(st.sampled_from(["d0", "d1", "", " "]), junk),
    "authorIDs": st.one_of(st.sampled_from(["", " ", []]), junk, st.lists(junk, min_size=1, max_size=2)),
    "fullText": st.one_of(st.sampled_from(["", "  \n"]), junk),
    "genre": st.one_of(st.sampled_from(["", "   "]), junk),
}


@st.composite
def jsonl_files(draw):
    """A file of good records, half the time with one corruption: a wrong field, a missing field,
    a line that is not JSON or not an object, a blank line, a BOM, gzip, truncated gzip."""
    n = draw(st.integers(1, 14))
    records = [draw(good_record(i)) for i in range(n)]
    lines = [json.dumps(r) for r in records]
    corruption = draw(st.sampled_from([None, None, None, "field", "drop", "garbage", "array", "blank", "truncate"]))
    at = draw(st.integers(0, n - 1))
    if corruption == "field":
        key = draw(st.sampled_from(sorted(BAD_FIELDS)))
        lines[at] = json.dumps({**records[at], key: draw(BAD_FIELDS[key])})
    elif corruption == "drop":
        key = draw(st.sampled_from(sorted(BAD_FIELDS)))
        lines[at] = json.dumps({k: v for k, v in records[at].items() if k != key})
    elif corruption == "garbage":
        lines[at] = draw(st.sampled_from(['{"documentID": "d1", oops', "nan", "{", "\x00", '"str"', "\ufeff{}"]))
    elif corruption == "array":
        lines[at] = "[1, 2]"
    elif corruption == "blank":
        lines.insert(at, "   ")
    body = "\n".join(lines) + "\n"
    bom = draw(st.booleans())
    gz = draw(st.booleans()) or corruption == "truncate"
    return body, bom, gz, corruption == "truncate"


def _write(tmp: Path, body: str, bom: bool, gz: bool, truncate: bool) -> Path:
    data = (b"\xef\xbb\xbf" if bom else b"") + body.encode("utf-8", "surrogatepass")
    path = tmp / ("c.jsonl.gz" if gz else "c.jsonl")
    if gz:
        data = gzip.compress(data, mtime=0)
        if truncate:
            data = data[: max(1, len(data) // 2)]
    path.write_bytes(data)
    return path


def _invariants(split, collection):
    docs = collection.documents
    cands = set(split.candidates)
    assert len(cands) == len(split.candidates) and split.queries
    assert set(split.needles) == {q.documentID for q in split.queries}
    for q in split.queries:
        assert q.documentID in docs and q.documentID not in cands
        assert q.genre == docs[q.documentID].genre == q.genre.strip()
        assert split.needles[q.documentID]
        for n in split.needles[q.documentID]:
            assert n in cands and n in docs
            assert set(docs[n].authorIDs) & set(docs[q.documentID].authorIDs), "a needle shares an author"
            assert docs[n].genre != q.genre, "a needle is in another genre"
    assert all(c in docs for c in cands)


@FUZZ
@given(jsonl_files(), st.sampled_from([0, 1, 1001]), st.sampled_from([0.5, 1.0, 0.3]))
def test_random_records_load_and_split_or_fail_with_a_harness_error(file, seed, fraction):
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(Path(tmp), *file)
        try:
            collection = load_collection("fuzz", [path])
        except HarnessError:
            event("rejected by the reader")
            return
        try:
            split = build_split(collection, seed, fraction)
        except HarnessError:
            event("rejected by the split builder")
            return
        event("split built")
        _invariants(split, collection)
        check_split(split, collection)
        again = split_from_manifest(json.loads(split.to_json()), "round trip")  # the manifest reads back
        assert again.sha256 == split.sha256
        assert build_split(collection, seed, fraction).to_json() == split.to_json()  # deterministic


@FUZZ
@given(
    st.lists(
        st.tuples(
            st.sampled_from("abcdef"),
            st.lists(st.sampled_from("abcdef"), max_size=2),
            st.sampled_from(["g1", "g2", "g3", " g1", "g2 "]),
        ),
        min_size=2,
        max_size=25,
    ),
    st.integers(0, 5000),
    st.sampled_from([0.5, 1.0]),
)
def test_co_authored_collections_always_give_valid_manifests(docs, seed, fraction):
    """Well-formed records with co-authors: every seed builds, or says there is nothing to query."""
    lines = [
        json.dumps(
            {
                "documentID": f"d{i}",
                "authorIDs": sorted({a, *co}),
                "genre": g,
                "fullText": f"text {i} {string.ascii_letters[i % 52]}",
            }
        )
        for i, (a, co, g) in enumerate(docs)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(Path(tmp), "\n".join(lines) + "\n", False, False, False)
        try:
            collection = load_collection("fuzz", [path])
        except HarnessError as e:
            assert "no author has documents in two or more genres" in str(e)
            return
        try:
            split = build_split(collection, seed, fraction)
        except HarnessError as e:
            assert "no query has a needle" in str(e)
            event("no query has a needle")
            return
        event("split built")
        _invariants(split, collection)
