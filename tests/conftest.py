from __future__ import annotations

import gzip
import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if importlib.util.find_spec("aa_harness_bench") is None:  # the bench distribution, from the checkout when not installed
    sys.path.append(str(ROOT / "benchmarks"))
# The public corpora, found as users find them: through $AA_HARNESS_CORPORA (tests that need them skip without it).
CORPORA = Path(os.environ["AA_HARNESS_CORPORA"]) if os.environ.get("AA_HARNESS_CORPORA") else None
RECORD = ROOT / "splits"

# The tests never write into the user's per-user folders: their home is a fresh temporary
# folder; the development cache (model copies, embeddings) is the checkout's.
os.environ["AA_HARNESS_HOME"] = tempfile.mkdtemp(prefix="aa-harness-test-home-")
os.environ.setdefault("AA_HARNESS_CACHE", str(ROOT / ".cache"))
for _var in ("AA_HARNESS_RUNS_DIR", "AA_HARNESS_DEBUG"):
    os.environ.pop(_var, None)


def local_model(ref: str) -> Path:
    """A local copy of a hub model, found the way the CLI finds it (never the hub); skips when absent."""
    from harness.neural.models import ModelNotFoundError, resolve_model

    try:
        return Path(resolve_model(ref, hub=False))
    except ModelNotFoundError as e:
        pytest.skip(str(e))


def committed_record():
    """The committed leaderboard's record (leaderboards/record.toml): its runs, registries and pages folder."""
    from harness.reports.record import read_record

    return read_record(ROOT / "leaderboards" / "record.toml")


def write_record(folder: Path, **paths) -> Path:
    """A record file in `folder` naming each key's path (absolute, so the file may lie anywhere)."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = "".join(f"{key} = {json.dumps(str(Path(value).absolute()))}\n" for key, value in paths.items())
    (folder / "record.toml").write_text(lines, encoding="utf-8")
    return folder / "record.toml"


def install_bench_entry_point(folder: Path, monkeypatch) -> None:
    """The bench distribution's entry point, as `pip install -e ./benchmarks` records it (its code is on the
    path from the checkout when not installed): the `bench` verb and the leaderboard's performance page."""
    dist = folder / "site" / "aa_harness_bench-0.1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: aa-harness-bench\nVersion: 0.1.0\n")
    (dist / "entry_points.txt").write_text("[aa_harness]\nbench = aa_harness_bench.plugin\n")
    monkeypatch.syspath_prepend(str(folder / "site"))
    monkeypatch.delenv("AA_HARNESS_DISABLE_PLUGIN_AUTOLOAD", raising=False)


@pytest.fixture
def bench_installed(tmp_path_factory, monkeypatch):
    """The bench distribution installed for this test (install_bench_entry_point)."""
    install_bench_entry_point(tmp_path_factory.mktemp("bench"), monkeypatch)


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
    return {
        "documentID": f"d{i}",
        "authorIDs": [author],
        "genre": genre,
        "fullText": text or f"text number {i} by {author} about {genre}",
    }


@pytest.fixture
def small_collection_file(tmp_path):
    """Two multi-genre authors, one single-genre author, as a canonical JSONL file."""
    recs = [
        doc(1, "a", "g1"),
        doc(2, "a", "g2"),
        doc(3, "a", "g2"),
        doc(4, "b", "g1"),
        doc(5, "b", "g3"),
        doc(6, "c", "g1"),
        doc(7, "c", "g1"),
    ]
    return write_jsonl(tmp_path / "small.jsonl", recs)


@pytest.fixture(scope="session")
def corpora():
    if CORPORA is None or not (CORPORA / "pan19-en.jsonl.gz").is_file():
        pytest.skip(f"public corpora not found ($AA_HARNESS_CORPORA: {CORPORA or 'not set'})")
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


# torch 2.11's varlen_attn keywords: a (-1, 0) window for causal, a scale, no enable_gqa
VARLEN_2_11 = frozenset(
    {"query", "key", "value", "cu_seq_q", "cu_seq_k", "max_q", "max_k", "return_aux", "scale", "window_size"}
)


@pytest.fixture
def cpu_varlen_kernel(monkeypatch):
    """The speed layer's CUDA attention path on the CPU: `_varlen_attention` calls torch's
    `varlen_attn` as it does on a GPU in bf16, here a stand-in computing the per-sequence SDPA, with
    torch 2.11's keywords (no enable_gqa, so the first call probes grouped-query support).
    install(native_gqa): whether the stand-in takes fewer key/value heads than query heads (the
    flash kernel does) or refuses them. The probe's answer starts undecided and is restored after."""
    from torch.nn.attention import varlen

    from harness.neural.fast import fused_decoder

    def install(native_gqa: bool = True):
        calls = []

        def varlen_attn(q, k, v, cu_q, cu_k, max_q, max_k, *, scale=None, window_size=(-1, -1), **kwargs):
            assert tuple(window_size) == (-1, 0) and not kwargs
            if not native_gqa and k.shape[1] != q.shape[1]:
                raise RuntimeError("number of heads in key/value must equal the query's")
            calls.append(q.shape)
            return fused_decoder._per_sequence_attention(q, k, v, cu_q, cu_k, scale)

        monkeypatch.setattr(varlen, "varlen_attn", varlen_attn)
        monkeypatch.setattr(fused_decoder, "_use_varlen_kernel", lambda q: True)
        monkeypatch.setattr(fused_decoder, "_varlen_options", lambda: VARLEN_2_11)
        monkeypatch.setattr(fused_decoder, "_GQA_NATIVE", None)
        return calls

    return install
