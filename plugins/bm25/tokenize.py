"""The BM25 tokenizer: lowercased Unicode word runs."""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+")


def tokenize(text: str) -> list[str]:
    return _WORD.findall(text.lower())
