"""Figures the SADIRI-v2 paper reports for HIATUS HRS1/HRS2: REPORTED, not reproduced here.

Source: Agarwal, Barry, Fincke, Miller, "Cross-Genre Authorship Attribution via LLM-Based
Retrieve-and-Rerank", arXiv:2510.16819 (2025). Only figures read from the paper's text
are listed; add a row only with the table or page it comes from.
"""
from __future__ import annotations

PAPER = "Agarwal et al. 2025, arXiv:2510.16819"

# (what, collection, metric, value, where in the paper)
REPORTED = [
    ("SADIRI-v2 gain over previous state of the art", "HRS1", "success@8", "+22.3 points", "abstract"),
    ("SADIRI-v2 gain over previous state of the art", "HRS2", "success@8", "+34.4 points", "abstract"),
]

NOTE = (
    "The per-system values of the paper's Table 1 (BM25, SBERT, LUAR, SADIRI, SADIRI-v2 on HRS1/HRS2) "
    "and Table 2 (reranker negative sampling) could not be read in the environment this harness was "
    "built in, so they are not listed; add them to harness/reports/reported.py with their table reference."
)
