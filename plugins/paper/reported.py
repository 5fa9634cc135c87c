"""Figures the SADIRI-v2 paper reports for HIATUS HRS1/HRS2: REPORTED, not reproduced here.

Source: Agarwal, Barry, Fincke, Miller, "Cross-Genre Authorship Attribution via LLM-Based
Retrieve-and-Rerank", arXiv:2510.16819 (2025), transcribed from its tables. These numbers live only on the
"reported" page: no result table of this harness ever shows them, since they come from restricted data.
"""

from __future__ import annotations

PAPER = "Agarwal et al. 2025, arXiv:2510.16819"

# Percentages, mean over the four split seeds.
TABLE1_COLUMNS = (
    "framework",
    "model / params",
    "HRS1 S@8",
    "HRS1 S@100",
    "HRS1 MRR@20",
    "HRS2 S@8",
    "HRS2 S@100",
    "HRS2 MRR@20",
)
TABLE1 = [
    ("BM25", "—", 0.0, 0.0, 0.0, 0.0, 5.7, 0.0),
    ("SBERT", "all-mpnet-base-v2 / 0.1B", 0.2, 3.1, 0.3, 0.7, 3.4, 0.2),
    ("LUAR", "RoBERTa-base / 0.1B", 7.2, 25.3, 3.7, 18.2, 49.5, 12.3),
    ("SADIRI", "RoBERTa-large / 0.3B", 26.0, 62.8, 14.8, 34.0, 58.2, 18.6),
    ("SADIRI-v2", "Qwen3 / 0.6B", 27.5, 67.3, 16.8, 30.6, 64.2, 19.4),
    ("SADIRI-v2", "Qwen3 / 1.7B", 32.2, 77.5, 18.2, 37.1, 65.7, 23.3),
    ("SADIRI-v2", "Qwen3 / 4B", 32.7, 78.7, 18.7, 46.2, 74.7, 30.6),
    ("SADIRI-v2", "Qwen3 / 8B", 35.7, 83.8, 21.9, 51.7, 77.3, 33.4),
    ("SADIRI-v2", "Mistral-Nemo / 12B", 42.1, 84.9, 24.0, 59.9, 84.2, 45.6),
]

# Reranker (Mistral-Nemo-Base-2407 + LoRA) on the 12B retriever's top 100; m = 12 negatives split evenly.
TABLE2_COLUMNS = ("negatives", "HRS1 S@8", "HRS1 MRR@20", "HRS2 S@8", "HRS2 MRR@20")
TABLE2 = [
    ("retriever alone", 42.1, 24.0, 59.9, 45.6),
    ("n(r)", 40.2, 26.9, 66.4, 49.1),
    ("n(d_q)", 34.8, 17.7, 58.8, 30.6),
    ("n(d_q+)", 44.1, 27.6, 66.7, 54.2),
    ("n(r) + n(d_q)", 47.0, 30.8, 66.7, 51.6),
    ("n(r) + n(d_q+)", 44.0, 27.7, 67.4, 50.9),
    ("n(d_q) + n(d_q+)", 46.6, 30.6, 68.0, 53.5),
    ("n(r) + n(d_q) + n(d_q+)", 48.3, 31.1, 68.4, 53.1),
]

TEST_SETS_COLUMNS = (
    "collection",
    "foreground docs / authors",
    "background docs / authors",
    "genres",
    "queries / candidates per seed (0, 1001, 2001, 3001)",
    "median length",
)
TEST_SETS = [
    (
        "HRS1",
        "855 / 114",
        "37,084 / 16,313",
        "board-game reviews, citizen journalism, instructions, literature forums, STEM forums",
        "119/34,370, 112/34,157, 104/33,150, 129/31,139",
        "about 600 words",
    ),
    (
        "HRS2",
        "631 / 37",
        "10,842 / 2,581",
        "pet posts, personal tales, product reviews, obituaries, movie reviews",
        "72/7,357, 74/7,393, 76/7,464, 75/7,365",
        "about 200 words",
    ),
]

RECIPES = [
    "Training set: 197,559 authors × 2 documents (395,118) from 8 web sources; curation: ≥ 350 words, "
    "2–50 documents per author, the most dissimilar pair by all-mpnet-base-v2 kept if below 0.2, PII replaced.",
    "Retrievers: Adam, lr 1e-5, tau 0.01, bf16, gradient checkpointing. SADIRI: 4 epochs, 74 authors per GPU "
    "batch. SADIRI-v2: 1 epoch, 16 authors per GPU batch, LoRA r 16, alpha 32, dropout 0.05 on q/k/v/o/gate/up/down, "
    "projection to E/2 with bias, dot product. 4 × RTX A6000; the 12B retriever takes about 15 hours.",
    "Reranker: Mistral-Nemo-Base-2407 + the same LoRA, lr 1e-4, tau 1.0, one query per GPU batch, m = 12, "
    "gradient accumulation 10, 10% of the retriever's training authors; about 60 hours on 4 × RTX A6000.",
]


def render_reported(header: str) -> str:
    """The "reported" page: the paper's Table 1, Table 2, test collections and recipes, as transcribed."""
    from harness.api import markdown_table

    def table(columns, rows):
        return markdown_table([list(r) for r in rows], headers=list(columns), floatfmt=".1f", disable_numparse=True)

    recipes = "\n".join(f"- {r}" for r in RECIPES)
    return (
        f"{header}# Figures reported by the paper (not reproduced here)\n\n"
        f"From {PAPER}, on the restricted HIATUS data; percentages, mean over the four split seeds. "
        "Listed for reference only: no table of this harness's own results shows them.\n\n"
        f"## Table 1: retrievers\n\n{table(TABLE1_COLUMNS, TABLE1)}\n\n"
        "## Table 2: reranker (Mistral-Nemo-Base-2407 + LoRA) on the 12B retriever's top 100\n\n"
        "Success@100 is the retriever's (reranking the top 100 cannot change it).\n\n"
        f"{table(TABLE2_COLUMNS, TABLE2)}\n\n"
        f"## Test collections\n\n{table(TEST_SETS_COLUMNS, TEST_SETS)}\n\n"
        f"## Training data and recipes\n\n{recipes}\n"
    )
