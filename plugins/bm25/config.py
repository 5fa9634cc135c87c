from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BM25Config:
    """BM25 Okapi as in rank-bm25's BM25Okapi. The paper states no k1 or b: these are this harness's
    settings.

    Tokenization: lowercase, then Unicode word runs (regex \\w+: letters, digits, underscore);
    punctuation is dropped, nothing is stemmed or removed.
    epsilon: negative idf values are floored at epsilon * mean idf (rank-bm25's rule).
    """

    k1: float = 0.25
    b: float = 0.75
    epsilon: float = 0.25

    def __post_init__(self):
        if self.k1 < 0 or not 0 <= self.b <= 1:
            raise ValueError(f"need k1 >= 0 and 0 <= b <= 1, got k1={self.k1}, b={self.b}")
