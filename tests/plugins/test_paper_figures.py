"""The paper's figures in plugins/paper/reported.py match an independent transcription of its tables, a
Markdown file named by $AA_HARNESS_PAPER_TRANSCRIPTION (skipped without it)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from plugins.paper.reported import TABLE1, TABLE2

PAPER = (
    Path(os.environ.get("AA_HARNESS_PAPER_TRANSCRIPTION", ""))
    if os.environ.get("AA_HARNESS_PAPER_TRANSCRIPTION")
    else None
)
NO_PAPER = PAPER is None or not PAPER.is_file()


def _rows(section: str) -> list[list[str]]:
    assert PAPER is not None
    text = PAPER.read_text(encoding="utf-8").split(section, 1)[1].split("\n## ", 1)[0]
    rows = [
        [c.strip() for c in line.strip().strip("|").split("|")] for line in text.splitlines() if line.startswith("|")
    ]
    return [r for r in rows[2:]]  # header and rule first


def _number(cell: str) -> float:
    return float(re.match(r"[\d.]+", cell).group())


@pytest.mark.skipif(NO_PAPER, reason="$AA_HARNESS_PAPER_TRANSCRIPTION names no transcription file")
def test_table1_matches_the_transcription():
    rows = _rows("## Table 1")
    assert [(r[0], r[1], *map(_number, r[2:])) for r in rows] == [tuple(r) for r in TABLE1]


@pytest.mark.skipif(NO_PAPER, reason="$AA_HARNESS_PAPER_TRANSCRIPTION names no transcription file")
def test_table2_matches_the_transcription():
    rows = _rows("## Table 2")
    assert [(r[0], *map(_number, r[1:])) for r in rows] == [tuple(r) for r in TABLE2]
