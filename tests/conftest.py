from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPORA = Path(os.environ.get("AA_HARNESS_CORPORA", ROOT.parent / "shared" / "corpora"))


def local_model(ref: str) -> Path:
    """A local copy of a hub model, found the way the CLI finds it (never the hub); skips when absent."""
    from harness.neural.models import ModelNotFoundError, resolve_model

    try:
        return Path(resolve_model(ref, hub=False))
    except ModelNotFoundError as e:
        pytest.skip(str(e))


def write_jsonl(path: Path, records, *, gz: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(lines)
    else:
        path.write_text(lines, encoding="utf-8")
    return path


def doc(i, author, genre, text=None):
    return {"documentID": f"d{i}", "authorIDs": [author], "genre": genre,
            "fullText": text or f"text number {i} by {author} about {genre}"}


@pytest.fixture
def small_collection_file(tmp_path):
    """Two multi-genre authors, one single-genre author, as a canonical JSONL file."""
    recs = [doc(1, "a", "g1"), doc(2, "a", "g2"), doc(3, "a", "g2"), doc(4, "b", "g1"), doc(5, "b", "g3"),
            doc(6, "c", "g1"), doc(7, "c", "g1")]
    return write_jsonl(tmp_path / "small.jsonl", recs)


@pytest.fixture(scope="session")
def corpora():
    if not (CORPORA / "pan19-en.jsonl.gz").is_file():
        pytest.skip(f"public corpora not found at {CORPORA}")
    return CORPORA


@pytest.fixture(scope="session")
def minilm():
    return local_model("sentence-transformers/all-MiniLM-L6-v2")


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory):
    pytest.importorskip("transformers")
    from tests.tiny_models import tiny_bert

    return tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture(scope="session")
def tiny_qwen3_dir(tmp_path_factory):
    pytest.importorskip("transformers")
    from tests.tiny_models import tiny_qwen3

    return tiny_qwen3(tmp_path_factory.mktemp("tiny-qwen3"))


@pytest.fixture
def isolated_cache(tmp_path, monkeypatch):
    """Embedding cache in a temporary folder."""
    monkeypatch.setenv("AA_HARNESS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"
