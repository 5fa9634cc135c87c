"""Each kind of bad input gets a clear error naming where and what, and writes nothing."""

import gzip

import pytest

from harness.cli import main
from harness.data.collection import load_collection
from harness.errors import DataError, UnknownNameError
from harness.plugins import load_registry
from tests.conftest import doc, write_jsonl


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
