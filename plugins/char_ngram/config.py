from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CharNgramConfig:
    """Character n-gram TF-IDF (scikit-learn's TfidfVectorizer), cosine similarity.

    Case and punctuation are kept on purpose: capitalisation and punctuation habits are
    style. The idf is fitted on each split's candidate pool (the index), never on queries.
    """

    ngram_min: int = 1
    ngram_max: int = 4
    analyzer: str = "char"  # "char" or "char_wb" (n-grams inside word boundaries)
    lowercase: bool = False
    sublinear_tf: bool = True
    min_df: int = 2
    max_features: int | None = None

    def __post_init__(self):
        if not 1 <= self.ngram_min <= self.ngram_max:
            raise ValueError(f"need 1 <= ngram_min <= ngram_max, got {self.ngram_min}..{self.ngram_max}")
        if self.analyzer not in ("char", "char_wb"):
            raise ValueError(f"analyzer must be 'char' or 'char_wb', got {self.analyzer!r}")
        if self.min_df < 1:
            raise ValueError(f"min_df must be at least 1 (a document count), got {self.min_df}")
        if self.max_features is not None and self.max_features < 1:
            raise ValueError(f"max_features must be at least 1 or None, got {self.max_features}")
