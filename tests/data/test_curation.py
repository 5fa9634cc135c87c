"""Curation steps on hand-made documents."""

import gzip
import json

import numpy as np
import pytest

from harness.data.anonymize import anonymize, replace_patterns
from harness.data.curation import (
    CurationSettings,
    curate,
    keep_author_counts,
    keep_dissimilar_pairs,
    keep_long,
)
from harness.data.documents import Document
from tests.conftest import write_jsonl


def _doc(i, author, words=400, text=None):
    return Document(f"d{i}", (author,), text or " ".join(["word"] * words), "blog:x")


def test_min_words_counts_whitespace_tokens():
    docs = [_doc(1, "a", 349), _doc(2, "a", 350), _doc(3, "b", text="x  \n ".join(["w"] * 350))]
    assert [d.documentID for d in keep_long(docs, 350)] == ["d2", "d3"]


def test_author_document_counts():
    docs = (
        [_doc(i, "one") for i in range(1)]
        + [_doc(10 + i, "two") for i in range(2)]
        + [_doc(100 + i, "many") for i in range(51)]
    )
    kept = {d.authorIDs[0] for d in keep_author_counts(docs, 2, 50)}
    assert kept == {"two"}


def test_most_dissimilar_pair_is_kept_only_below_threshold():
    # author a: d1, d2 near-identical, d3 orthogonal to both -> keeps (d1, d3) or (d2, d3) at cosine 0
    # author b: all similar (cosine 0.9+) -> dropped
    vec = {"d1": [1, 0, 0], "d2": [0.99, 0.1, 0], "d3": [0, 0, 1], "d4": [1, 0.1, 0], "d5": [1, 0.2, 0]}
    docs = [_doc(1, "a"), _doc(2, "a"), _doc(3, "a"), _doc(4, "b"), _doc(5, "b")]
    kept = keep_dissimilar_pairs(docs, lambda texts: np.array([vec[d.documentID] for d in docs]), 0.2)
    assert sorted(d.documentID for d in kept) == ["d1", "d3"]


def test_patterns_are_replaced():
    text = "Mail me at jane.roe@example.org, call (555) 123-4567 or +44 20 7946 0958; host 10.0.0.12 is down."
    out = replace_patterns(text)
    assert out == "Mail me at EMAIL_ADDRESS, call PHONE_NUMBER or PHONE_NUMBER; host IP_ADDRESS is down."
    assert replace_patterns("In 2004 I wrote 350 words on 3.5 days.") == "In 2004 I wrote 350 words on 3.5 days."


def test_person_names_by_ner():
    pytest.importorskip("spacy")
    try:
        out = anonymize(["Yesterday John Smith met Mary Jones in Boston; write to john@smith.com."])[0]
    except Exception as e:  # no English model installed
        pytest.skip(str(e))
    assert "John" not in out and "Mary Jones" not in out and "Boston" in out
    assert "PERSON" in out and "EMAIL_ADDRESS" in out and "PERSON_" not in out


def test_curate_end_to_end_with_report(tmp_path):
    recs = []
    for a in range(4):
        for j in range(3):
            recs.append(
                {
                    "documentID": f"a{a}d{j}",
                    "authorIDs": [f"a{a}"],
                    "genre": "blog:x",
                    "fullText": f"Doc {j} by author {a}, mail a{a}@x.org. "
                    + " ".join(["word"] * (400 if j < 2 else 10)),
                }
            )
    src = write_jsonl(tmp_path / "in.jsonl", recs)
    out = tmp_path / "curated.jsonl.gz"
    vecs = {0: [1, 0], 1: [0, 1]}  # the two long documents of every author are orthogonal

    def embed(texts):
        return np.array([vecs[int(t.split()[1])] for t in texts], dtype=float)

    report = curate([src], out, CurationSettings(ner="none"), embed=embed, log=lambda *_: None)
    steps = {s["step"]: s for s in report["steps"]}
    assert steps["min_words"]["removed_documents"] == 4 and steps["min_words"]["removed_authors"] == 0
    assert steps["dissimilar_pair"]["documents"] == 8 and steps["anonymize"]["replaced"]["EMAIL_ADDRESS"] == 8
    lines = [json.loads(x) for x in gzip.open(out, "rt")]
    assert len(lines) == 8 and all("EMAIL_ADDRESS" in x["fullText"] for x in lines)
    assert (tmp_path / "curated.report.json").is_file()


def test_pairs_file_from_one_curation_reproduces_it_without_embedding(tmp_path):
    import gzip
    import json

    from harness.errors import DataError

    recs = [
        {
            "documentID": f"a{a}d{j}",
            "authorIDs": [f"a{a}"],
            "genre": "blog:x",
            "fullText": f"Doc {j} by author {a}. " + " ".join(["word"] * 400),
        }
        for a in range(5)
        for j in range(3)
    ]
    src = write_jsonl(tmp_path / "in.jsonl", recs)
    angle = {0: [1, 0], 1: [0.6, 0.8], 2: [0, 1]}  # docs 0 and 2 orthogonal: cosine 0 < 0.2

    def embed(texts):
        return np.array([angle[int(t.split()[1])] for t in texts], dtype=float)

    first = curate([src], tmp_path / "one.jsonl.gz", CurationSettings(ner="none"), embed=embed, log=lambda *_: None)
    pairs = tmp_path / "one.pairs.jsonl.gz"
    rows = [json.loads(line) for line in gzip.open(pairs, "rt")]
    assert [r["pair"] for r in rows] == [[f"a{a}d0", f"a{a}d2"] for a in range(5)]
    assert first["authors_below_threshold"]["0.2"] == {"all": 5, "blog": 5}
    again = curate(
        [src], tmp_path / "two.jsonl.gz", CurationSettings(ner="none"), pairs_file=pairs, log=lambda *_: None
    )
    assert gzip.open(tmp_path / "one.jsonl.gz", "rt").read() == gzip.open(tmp_path / "two.jsonl.gz", "rt").read()
    assert again["steps"][3]["documents"] == 10
    recs[0]["fullText"] += " changed"
    changed = write_jsonl(tmp_path / "changed.jsonl", recs)
    with pytest.raises(DataError, match="a0d0"):
        curate(
            [changed], tmp_path / "three.jsonl.gz", CurationSettings(ner="none"), pairs_file=pairs, log=lambda *_: None
        )


def test_curation_says_what_it_embeds_and_shows_a_bar(tmp_path, capsys):
    recs = [
        {
            "documentID": f"a{a}d{j}",
            "authorIDs": [f"a{a}"],
            "genre": "blog:x",
            "fullText": f"Doc {j} by {a}. " + " ".join(["word"] * 400),
        }
        for a in range(3)
        for j in range(2)
    ]
    src = write_jsonl(tmp_path / "in.jsonl", recs)
    lines: list[str] = []
    curate(
        [src],
        tmp_path / "out.jsonl.gz",
        CurationSettings(ner="none"),
        embed=lambda texts: np.array([[1.0, float(t.split()[1] == "1")] for t in texts]),
        log=lines.append,
    )
    assert any(line.startswith("curate: embedding 6 documents for the dissimilar-pair step") for line in lines)
    assert any(line.startswith("curate: replacing personal information in") for line in lines)
    assert "curate: embed" in capsys.readouterr().err
