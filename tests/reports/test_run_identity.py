"""Every row says what it is: full backbone ids with quantization, and a generated "differs from the paper" cell."""

import re

import pytest

from harness.reports.run_identity import (
    backbone_label,
    differs_from_paper,
    identity_table,
    run_identity,
)
from tests.conftest import committed_record

# A backbone named by less than its full hub id: an id's tail without its organisation, or a family name alone.
BARE = [
    (re.compile(r"(?<![\w/-])Qwen2\.5"), "Qwen/Qwen2.5-Coder-"),
    (re.compile(r"(?<![\w/-])all-mpnet-base-v2"), "sentence-transformers/"),
    (re.compile(r"(?<![\w/-])all-MiniLM-L6-v2"), "sentence-transformers/"),
    (re.compile(r"(?<![\w/-])SmolLM2"), "HuggingFaceTB/"),
]
GGUF = re.compile(r"[\w.-]+/[\w.-]+-GGUF(?! \()")


def _retriever(**card):
    base = {
        "system": "sadiri-v2-retriever",
        "config": {
            "backbone": "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF",
            "bf16": True,
            "lr": 1e-4,
            "similarity": "cosine",
        },
        "extra": {
            "trained": True,
            "model_card": {
                "similarity": "cosine",
                "author_fraction": 1.0,
                "recipe": {"lr": 1e-4, "epochs": 1, "similarity": "cosine"},
                "global_batch": {
                    "per_batch": 16,
                    "grad_accumulation": 1,
                    "per_optimizer_step": 16,
                    "unit": "authors",
                },
                "training_data": {"sha256": "f8b69e03cbac" + "0" * 52, "authors": 3733},
                **card,
            },
        },
    }
    return base


def test_backbone_label_names_the_quantization_and_compute_dtype():
    assert backbone_label(_retriever()) == "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF (Q4_K_M GGUF, dequantized to bf16)"
    assert backbone_label({"system": "sbert", "config": {}}) == "sentence-transformers/all-mpnet-base-v2"
    assert backbone_label({"system": "bm25", "config": {}}) == "—"


def test_differs_from_the_paper_lists_each_deviation():
    cell = differs_from_paper(_retriever())
    for part in (
        "backbone 1.54B (paper: Qwen3 0.6B–8B or Mistral-Nemo 12B)",
        "similarity cosine (paper: dot)",
        "lr 0.0001 (paper: 1e-05)",
        "global batch 16 × accumulation 1 authors (paper: 64 × 1; 16 a GPU on 4 GPUs, whether gathered across GPUs "
        "not stated in the paper; here 1 GPU)",
        "training authors 3,733 (paper: 197,559)",
        "backbone code-tuned instruct, Q4_K_M GGUF (paper: base, dense weights)",
    ):
        assert part in cell, cell
    assert "epochs" not in cell and "training sources" not in cell  # one epoch, as the paper; sources unknown
    sourced = differs_from_paper(_retriever(), {"f8b69e03cbac": ["blogs", "reddit"]})
    assert "training sources 2: blogs, reddit (paper: 8)" in sourced
    reranker = {
        "system": "sadiri-v2-reranker",
        "config": {
            "backbone": "Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF",
            "first_stage": "r",
        },
        "extra": {
            "model_card": {
                "author_fraction": 1.0,
                "recipe": {"lr": 1e-4},
                "global_batch": {
                    "per_optimizer_step": 4,
                    "grad_accumulation": 1,
                    "unit": "queries",
                },
                "training_data": {"sha256": "ab", "authors": 3733},
            }
        },
    }
    cell = differs_from_paper(reranker)
    assert "Mistral-Nemo-Base-2407, 12B" in cell and "author fraction 1 (paper: 0.1)" in cell
    assert "global batch 4 × accumulation 1 queries (paper: 4 × 10)" in cell
    assert "first stage r (paper: the Mistral-Nemo 12B retriever's top 100)" in cell
    assert differs_from_paper({"system": "sbert", "config": {}}) == "—"
    assert differs_from_paper({"system": "bm25", "config": {"k1": 0.25}}) == (
        "k1 0.25 (paper: not stated; this harness's setting)"
    )
    untrained = differs_from_paper(
        {
            "system": "sadiri-v2-retriever",
            "config": {"backbone": "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF", "projection_init": "default"},
        }
    )
    assert "an untrained projection (default init) added by this harness" in untrained
    luar = differs_from_paper(
        {
            "system": "luar",
            "config": {},
            "extra": {"model_card": {"recipe": {"lr": 2e-5, "epochs": 4, "authors_per_batch": 64}}},
        }
    )
    assert "recipe this harness's (lr 2e-05, 4 epochs, 64 authors a batch; paper: not stated)" in luar
    assert differs_from_paper({"system": "char-ngram", "config": {}}) == "not in the paper"


def test_training_data_made_before_decontamination_is_said_on_the_row():
    before = {"f8b69e03cbac": "why"}
    ident = run_identity("x", _retriever(), before)
    assert ident.training_data == "f8b69e03cbac, 3,733 authors (before decontamination)"
    assert ident.origin == "trained here"
    assert "(before decontamination)" not in run_identity("x", _retriever(), {}).training_data
    table = identity_table({("c", "x"): [_retriever()]}, ["x"], before)
    assert "before decontamination" in table and "why" in table


@pytest.mark.slow
def test_generated_pages_name_every_backbone_by_its_full_id(tmp_path):
    from harness.reports.leaderboard import leaderboard_files, record_board, write_pages

    write_pages(leaderboard_files(record_board(committed_record(), plots=False)), tmp_path)
    pages = [
        tmp_path / "main.md",
        tmp_path / "rerank.md",
        tmp_path / "per-genre.md",
        *sorted((tmp_path / "collections").glob("*.md")),
    ]
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for pattern, prefix in BARE:
            for m in pattern.finditer(text):
                assert text[: m.start()].endswith(prefix), (
                    f"{page.name}: bare backbone label at {text[m.start() - 40 : m.end() + 20]!r}"
                )
    main, rerank = (
        (tmp_path / "main.md").read_text(),
        (tmp_path / "rerank.md").read_text(),
    )
    assert "## What each run is" in main
    if "No reranker run is current" in rerank:  # the record's reranker runs all wait to be rerun
        assert "## Stale runs" in rerank and "+reranker" in rerank
    else:
        assert "## What each run is" in rerank
        assert "Mistral-Nemo-Base-2407" in rerank and "Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF (" in rerank
    section = main[main.index("## What each run is") :]
    assert not GGUF.search(section), "a GGUF backbone without its quantization"


def test_the_training_sets_record_is_read_bounded_and_a_bad_one_is_one_line(tmp_path):
    from harness.errors import DataError
    from harness.reports.run_identity import load_training_sources

    assert load_training_sources(None) == {}
    path = tmp_path / "training-sets.json"
    path.write_text('{"sets": {"ab12": {"sources": ["blogs"]}}}', encoding="utf-8")
    assert load_training_sources(path) == {"ab12": ["blogs"]}
    for bad in ('{"sets": []}', "[" * 100_000, b"\xff"):
        path.write_bytes(bad if isinstance(bad, bytes) else bad.encode())
        with pytest.raises(DataError) as e:
            load_training_sources(path)
        assert len(str(e.value).splitlines()) == 1 and str(path) in str(e.value)
    assert load_training_sources(committed_record().registries.training_sets)["1f236d79d3e9"][0].startswith("blogs")
