"""What a reranker has already worked out, kept for the rest of its life: each text's token ids and
each pair's score.

A reranker rescoring a collection's seeds meets the same documents and pairs again and again: on
blogs-xtopic-all the four seeds' top-100 lists hold 570,200 pairs, 364,660 of them distinct, over
about 10,000 documents, and tokenizing a query's hundred candidates anew costs tens of
milliseconds of host time during which the GPU waits. Keys are the texts themselves, so two
documents with one text share their entries and a document id can never point at another text.
A remembered score is the number computed the first time for that pair, not a recomputation.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np


class TokenMemo:
    """tokenize(texts, max_length) -> id lists, each text tokenized once per max_length."""

    def __init__(self, tokenize: Callable[[list[str], int], list[list[int]]]):
        self._tokenize = tokenize
        self._ids: dict[tuple[int, str], np.ndarray] = {}  # int32 arrays: a tenth of a list's memory

    def __call__(self, texts: Sequence[str], max_length: int) -> list[list[int]]:
        new = list(dict.fromkeys(t for t in texts if (max_length, t) not in self._ids))
        if new:
            for text, ids in zip(new, self._tokenize(new, max_length)):
                self._ids[max_length, text] = np.asarray(ids, dtype=np.int32)
        return [self._ids[max_length, t].tolist() for t in texts]

    def __len__(self) -> int:
        return len(self._ids)


class ScoreMemo:
    """Pair scores by (query text, candidate text); `split` says which pairs still need scoring."""

    def __init__(self) -> None:
        self._scores: dict[tuple[str, str], np.float32] = {}
        self.scored = 0  # pairs computed, over the memo's life
        self.reused = 0  # pairs asked for and not computed (met before, or twice in one list)

    def split(self, query: str, candidates: Sequence[str]) -> tuple[np.ndarray, list[int]]:
        """(scores with NaN where unknown, the indices still to score: each new text once)."""
        out = np.full(len(candidates), np.nan, dtype=np.float32)
        todo, first = [], {}
        for i, c in enumerate(candidates):
            s = self._scores.get((query, c))
            if s is not None:
                out[i] = s
            elif c not in first:
                first[c] = i
                todo.append(i)
        self.reused += len(candidates) - len(todo)
        return out, todo

    def fill(self, query: str, candidates: Sequence[str], out: np.ndarray, todo: list[int], scores) -> np.ndarray:
        """Record the scores of `todo` and complete `out` (a repeated candidate text too)."""
        for i, s in zip(todo, np.asarray(scores, dtype=np.float32)):
            self._scores[query, candidates[i]] = s
        for i, c in enumerate(candidates):
            if np.isnan(out[i]):
                out[i] = self._scores[query, c]
        self.scored += len(todo)
        return out
