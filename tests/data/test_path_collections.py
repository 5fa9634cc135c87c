"""Collections given as files: named, their manifests kept beside the runs; built-in collections use the record."""

from __future__ import annotations

from pathlib import Path

from harness.cli import main
from harness.plugins import load_registry
from tests.conftest import RECORD, doc, write_jsonl


def _tiny(path: Path, texts_suffix: str) -> Path:
    recs = [doc(1, "a", "g1"), doc(2, "a", "g2"), doc(3, "b", "g1"), doc(4, "b", "g2"), doc(5, "c", "g1")]
    for r in recs:
        r["fullText"] += texts_suffix
    return write_jsonl(path, recs)


def test_path_collections_are_named_and_keep_their_manifests_apart(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    first, second = _tiny(tmp_path / "a" / "tiny.jsonl", " one"), _tiny(tmp_path / "b" / "tiny.jsonl", " two")
    runs = tmp_path / "my-runs"
    common = ["--seeds", "0", "--runs-dir", str(runs), "--no-progress"]
    assert main(["run", "bm25", "--collection", str(first), *common]) == 0
    assert (tmp_path / "my-runs-splits" / "tiny" / "seed-0.json").is_file()
    assert not (tmp_path / "splits").exists() and not (RECORD / "tiny").exists()
    capsys.readouterr()
    assert main(["run", "bm25", "--collection", str(second), *common]) == 2
    err = capsys.readouterr().err
    assert "--name-collection" in err and "--splits-dir" in err
    assert err.index("--name-collection") < err.index("--overwrite")  # the safe choices first
    assert main(["run", "bm25", "--collection", str(second), "--name-collection", "tiny-b", *common]) == 0
    assert (runs / "tiny-b" / "bm25" / "seed-0.json").is_file()
    assert (tmp_path / "my-runs-splits" / "tiny-b" / "seed-0.json").is_file()


def test_registered_collections_use_the_committed_manifests_wherever_run(tmp_path, monkeypatch):
    from harness.runs.job import split_places

    monkeypatch.chdir(tmp_path)
    places = split_places(load_registry(), "demo", tmp_path / "runs", None)
    assert places.record == RECORD and places.folder == tmp_path / "runs-splits"
