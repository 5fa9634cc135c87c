"""The query-needle dissimilarity rule: a query is kept only if every needle is far from it.

Topic labels alone leave the task solvable by topic: an author's posts share names, places and
pet subjects across topic clusters, so BM25 finds the needle. In the spirit of the paper's
curation (an author's most dissimilar pair), a split drops each query whose most similar needle
has a word TF-IDF cosine at or above `threshold`. Queries, not needles, are dropped, so the pool
never holds a same-author document that does not count as a needle.

The measure is lexical on purpose: it targets exactly what BM25 and character n-grams exploit
(shared words and names), it runs in seconds on a CPU, and it is deterministic (sparse sums,
no GPU kernels), so a manifest is byte-identical on any machine. TF-IDF is fitted on every
document of the collection in documentID order (lowercased word runs of 2+ characters, English
stop words removed, sublinear tf, rows L2-normalised).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping, Sequence

from harness.data.collection import Collection

_CACHE: dict[tuple, tuple] = {}


@dataclass(frozen=True)
class DissimilarityRule:
    threshold: float = 0.05
    measure: str = "word-tfidf-cosine"
    stop_words: str = "english"
    sublinear_tf: bool = True
    min_df: int = 1

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> DissimilarityRule:
        return cls(**{k: v for k, v in obj.items() if k in cls.__dataclass_fields__})


def tfidf_matrix(collection: Collection, rule: DissimilarityRule):
    """(row index by documentID, L2-normalised TF-IDF rows) over the whole collection; cached per data."""
    key = (collection.fingerprint(), rule.stop_words, rule.sublinear_tf, rule.min_df)
    if key not in _CACHE:
        import numpy as np
        from sklearn.feature_extraction.text import TfidfVectorizer

        ids = sorted(collection.documents)
        vec = TfidfVectorizer(
            lowercase=True,
            stop_words=rule.stop_words or None,
            sublinear_tf=rule.sublinear_tf,
            min_df=rule.min_df,
            dtype=np.float64,
        )
        x = vec.fit_transform([collection.documents[i].fullText for i in ids]).tocsr()
        _CACHE.clear()
        _CACHE[key] = ({d: i for i, d in enumerate(ids)}, x)
    return _CACHE[key]


def max_needle_cosine(
    collection: Collection, needles: Mapping[str, Sequence[str]], rule: DissimilarityRule
) -> dict[str, float]:
    """Per query, the largest cosine between it and any of its needles."""
    row, x = tfidf_matrix(collection, rule)
    out = {}
    for q in sorted(needles):
        sims = (x[row[q]] @ x[[row[n] for n in needles[q]]].T).toarray().ravel()
        # rounded so that the last bits of a float sum cannot move a query across the threshold
        out[q] = round(float(sims.max()), 9) if sims.size else 0.0
    return out
