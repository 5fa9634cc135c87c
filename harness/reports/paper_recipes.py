"""The SADIRI-v2 paper's training recipes as values, by the paper's name for each: a system says which it
follows (SystemMeta.recipe) and the "differs from the paper" cells (harness.reports.run_identity) compare
its runs with it.

Source: Agarwal, Barry, Fincke, Miller, "Cross-Genre Authorship Attribution via LLM-Based
Retrieve-and-Rerank", arXiv:2510.16819 (2025). The figures the paper reports, and these recipes in
words, are the reported page of the built-in plugin `plugins.paper`.
"""

from __future__ import annotations

# Global batch = the per-GPU batch times the paper's 4 GPUs, in authors (retrievers) or queries
# (reranker); a key left out: the paper does not state it.
PAPER_TRAINING_AUTHORS = 197_559
PAPER_TRAINING_SOURCES = 8  # news, books, Reddit, book reviews, Amazon reviews, newsgroups, Wikipedia talk, PubMed

PAPER_RECIPES: dict[str, dict] = {
    "BM25": {"trained": False},
    "SBERT": {
        "trained": False,
        "backbone": "all-mpnet-base-v2, 0.1B",
        "backbone_ids": ("sentence-transformers/all-mpnet-base-v2",),
    },
    "LUAR": {
        "trained": True,
        "backbone": "RoBERTa-base, 0.1B",
        "training_sources": PAPER_TRAINING_SOURCES,
        "recipe_stated": False,
    },
    "SADIRI": {
        "trained": True,
        "backbone": "RoBERTa-large, 0.3B",
        "lr": 1e-5,
        "epochs": 4,
        "global_batch": 74 * 4,
        "grad_accumulation": 1,
        "author_fraction": 1.0,
        "training_authors": PAPER_TRAINING_AUTHORS,
        "training_sources": PAPER_TRAINING_SOURCES,
        "per_gpu": (74, 4),
    },
    "SADIRI-v2 retriever": {
        "trained": True,
        "backbone": "Qwen3 0.6B–8B or Mistral-Nemo 12B",
        "similarity": "dot",
        "lr": 1e-5,
        "epochs": 1,
        "global_batch": 16 * 4,
        "grad_accumulation": 1,
        "author_fraction": 1.0,
        "training_authors": PAPER_TRAINING_AUTHORS,
        "training_sources": PAPER_TRAINING_SOURCES,
        "per_gpu": (16, 4),
        "backbone_variant": "base, dense weights",
    },
    "SADIRI-v2 reranker": {
        "trained": True,
        "backbone": "Mistral-Nemo-Base-2407, 12B",
        "backbone_full_id": "mistralai/Mistral-Nemo-Base-2407",
        "lr": 1e-4,
        "global_batch": 1 * 4,
        "grad_accumulation": 10,
        "author_fraction": 0.1,
        "training_authors": round(0.1 * PAPER_TRAINING_AUTHORS),
        "training_sources": PAPER_TRAINING_SOURCES,
        "backbone_variant": "base, dense weights",
        "first_stage": "the Mistral-Nemo 12B retriever's top 100",
    },
}
