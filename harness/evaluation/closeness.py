"""How close the haystack is to the queries, per split: the table beside the split counts.

In HRS the distractors are semantically close to the query and the needle. This measures it
cheaply and deterministically on a CPU, with LSA: word TF-IDF over the whole collection
(documentID order, English stop words removed, sublinear tf), truncated SVD to 100 dimensions
(randomized, seed 0), rows L2-normalised, cosine. Per split:

- haystack-nearest: the share of queries whose nearest candidate is not one of their needles
  (= 1 - Success@1 of the LSA ranker);
- the median and mean rank of the first needle under LSA.

LSA is derived from the same word counts as the dissimilarity rule, so on a collection with
that rule it is biased towards "far"; the leaderboard's per-collection page adds the same two
figures under all-mpnet-base-v2 (the paper's SBERT) from the committed `sbert` run.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from harness.data.collection import Collection

LSA_DIMS = 100
_CACHE: dict[str, tuple] = {}


def lsa_vectors(collection: Collection) -> tuple[dict[str, int], np.ndarray]:
    key = collection.fingerprint()
    if key not in _CACHE:
        from sklearn.decomposition import TruncatedSVD
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.preprocessing import normalize

        ids = sorted(collection.documents)
        x = TfidfVectorizer(
            lowercase=True, stop_words="english", sublinear_tf=True, min_df=2, max_df=0.5
        ).fit_transform([collection.documents[i].fullText for i in ids])
        z = normalize(
            TruncatedSVD(
                n_components=min(LSA_DIMS, x.shape[1] - 1), algorithm="randomized", n_iter=7, random_state=0
            ).fit_transform(x)
        )
        _CACHE.clear()
        _CACHE[key] = ({d: i for i, d in enumerate(ids)}, z.astype(np.float32))
    return _CACHE[key]


def closeness(collection: Collection, split) -> dict[str, float]:
    row, z = lsa_vectors(collection)
    cands = list(split.candidates)
    c = z[[row[d] for d in cands]]
    index = {d: i for i, d in enumerate(cands)}
    ranks = []
    nearest_haystack = 0
    for start in range(0, len(split.queries), 512):
        block = split.queries[start : start + 512]
        scores = z[[row[q.documentID] for q in block]] @ c.T
        for q, s in zip(block, scores):
            needle_idx = [index[n] for n in split.needles[q.documentID]]
            best_needle = s[needle_idx].max()
            rank = int((s > best_needle).sum()) + 1
            ranks.append(rank)
            nearest_haystack += rank > 1
    r = np.asarray(ranks)
    return {
        "haystack_nearest": nearest_haystack / len(r),
        "median_first_needle_rank": float(np.median(r)),
        "mean_first_needle_rank": float(r.mean()),
    }


def closeness_table(collection: Collection, splits: Sequence) -> str:
    from tabulate import tabulate

    rows = []
    for s in sorted(splits, key=lambda s: s.seed):
        m = closeness(collection, s)
        rows.append(
            [
                s.collection,
                s.seed,
                f"{100 * m['haystack_nearest']:.1f}",
                f"{m['median_first_needle_rank']:.0f}",
                f"{m['mean_first_needle_rank']:.0f}",
            ]
        )
    return tabulate(
        rows,
        headers=[
            "collection",
            "seed",
            "queries whose nearest candidate is haystack (LSA) %",
            "first-needle rank, median (LSA)",
            "first-needle rank, mean (LSA)",
        ],
        tablefmt="github",
        disable_numparse=True,
    )
