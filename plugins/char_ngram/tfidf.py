"""Character n-gram TF-IDF whose expensive part, reading the texts, is done once per text.

scikit-learn's TfidfVectorizer, fitted on a candidate pool, spends nearly all its time in
Python, cutting every text into n-grams and counting them. The four split seeds' pools of a
collection are nearly the same documents, so `NgramCounts` counts each distinct text once
(a global n-gram vocabulary grows as texts arrive) and `PoolTfidf` builds each pool's
TF-IDF matrix from the cached counts with array operations only.

The result is the fitted TfidfVectorizer's, bit for bit: the pool's vocabulary is numbered
in first-seen order as scikit-learn numbers it, pruned by min_df / max_features and sorted
by term with the same array operations, and the idf, sublinear tf and L2 normalisation are
scikit-learn's own TfidfTransformer. tests/test_char_ngram.py compares the matrices exactly,
so idf stays fitted on each pool and the rankings stay the per-seed rankings.
"""
from __future__ import annotations

from numbers import Integral
from typing import Sequence

import numpy as np
import scipy.sparse as sp


def char_analyzer(vectorizer):
    """The vectorizer's analyzer; for analyzer="char" an equivalent one whose n-gram loop runs in C
    (map over slices) rather than Python: the same n-grams in the same order (n, then position)."""
    analyze = vectorizer.build_analyzer()
    if vectorizer.analyzer != "char":
        return analyze
    preprocess = vectorizer.build_preprocessor()
    white = vectorizer._white_spaces
    lo, hi = vectorizer.ngram_range

    def fast(doc: str) -> list[str]:
        text = white.sub(" ", preprocess(vectorizer.decode(doc)))
        size = len(text)
        grams: list[str] = []
        for n in range(lo, min(hi + 1, size + 1)):
            if n == 1:
                grams.extend(text)
            else:
                grams.extend(map(text.__getitem__, map(slice, range(size - n + 1), range(n, size + 1))))
        return grams

    return fast


class NgramCounts:
    """n-gram counts of every text seen, under one growing vocabulary (global ids), and the
    vocabulary's order by term (kept up to date by merging in new terms)."""

    def __init__(self, analyzer):
        """analyzer: text -> list of n-grams (TfidfVectorizer.build_analyzer(), or char_analyzer)."""
        from collections import defaultdict

        self.analyze = analyzer
        self.vocabulary: dict[str, int] = defaultdict()
        self.vocabulary.default_factory = self.vocabulary.__len__  # a new term gets the next id
        self._rows: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._sorted_ids = np.zeros(0, dtype=np.int64)  # global ids in term order
        self._sorted_terms: list[str] = []
        self._rank = np.zeros(0, dtype=np.int64)  # global id -> position in term order

    def __len__(self) -> int:
        return len(self._rows)

    @property
    def size(self) -> int:
        return len(self.vocabulary)

    def row(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """(global ids in the order the text first uses them, counts) of one text, counted once."""
        from collections import Counter

        cached = self._rows.get(text)
        if cached is not None:
            return cached
        counter = Counter(self.analyze(text))  # keys in first-use order, as CountVectorizer numbers them
        out = (np.fromiter(map(self.vocabulary.__getitem__, counter), dtype=np.int64, count=len(counter)),
               np.fromiter(counter.values(), dtype=np.int64, count=len(counter)))
        self._rows[text] = out
        return out

    def stacked(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(global ids, counts, indptr) of the texts' rows laid end to end."""
        rows = [self.row(t) for t in texts]
        indptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum([len(r[0]) for r in rows], out=indptr[1:])
        if not rows:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), indptr
        return np.concatenate([r[0] for r in rows]), np.concatenate([r[1] for r in rows]), indptr

    def prepare(self, texts: Sequence[str]) -> None:
        """Nothing to do before counting (the keyed counts extend their alphabet here)."""

    def order_key(self, ids: np.ndarray) -> np.ndarray:
        """Values whose order is the terms' order."""
        return self.term_rank()[ids]

    def recode(self, ids: np.ndarray, since) -> np.ndarray:
        return ids

    @property
    def version(self):
        return None

    def term_rank(self) -> np.ndarray:
        """Position of each global id in the vocabulary sorted by term (Python string order, as
        CountVectorizer sorts); terms added since the last call are sorted alone and merged in."""
        known = len(self._rank)
        if known < self.size:
            from bisect import bisect_left

            terms = list(self.vocabulary)  # insertion order = id order
            new = sorted(range(known, self.size), key=terms.__getitem__)
            old_terms = self._sorted_terms
            where = np.fromiter((bisect_left(old_terms, terms[i]) for i in new), dtype=np.int64, count=len(new))
            self._sorted_ids = np.insert(self._sorted_ids, where, np.asarray(new, dtype=np.int64))
            self._sorted_terms = [terms[i] for i in self._sorted_ids]
            self._rank = np.empty(self.size, dtype=np.int64)
            self._rank[self._sorted_ids] = np.arange(self.size)
        return self._rank


class AlphabetFull(Exception):
    """More distinct characters than 16-bit slots hold: use NgramCounts."""


class KeyedCounts:
    """Counts for analyzer="char" with n-grams of at most 4 characters, without a Python string per n-gram.

    A text becomes its characters' ranks in a sorted alphabet (1.., 16 bits each) and an n-gram
    the 64-bit number of its ranks, first character highest, absent ones 0: equal n-grams get
    equal numbers and numeric order is the strings' order, so the numbers serve as term ids and
    sort keys at once. A text's row lists its n-grams in first-use order (n, then position),
    as CountVectorizer's counting does. New characters extend the alphabet and renumber every
    cached row (`version` counts the renumberings).
    """

    def __init__(self, vectorizer):
        lo, hi = vectorizer.ngram_range
        if vectorizer.analyzer != "char" or hi > 4:
            raise ValueError("KeyedCounts reads analyzer='char' with ngram_max <= 4")
        self.lo, self.hi = lo, hi
        self._preprocess, self._decode, self._white = vectorizer.build_preprocessor(), vectorizer.decode, vectorizer._white_spaces
        self.alpha = np.zeros(0, dtype=np.uint32)  # sorted code points; a character's slot value is its index + 1
        self._rows: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._version = 0

    def __len__(self) -> int:
        return len(self._rows)

    @property
    def version(self) -> int:
        return self._version

    def _codes(self, text: str) -> np.ndarray:
        t = self._white.sub(" ", self._preprocess(self._decode(text)))
        return np.frombuffer(t.encode("utf-32-le"), dtype=np.uint32)

    def prepare(self, texts: Sequence[str]) -> None:
        """Count the texts not seen yet, first extending the alphabet by their new characters."""
        new = list(dict.fromkeys(t for t in texts if t not in self._rows))
        if not new:
            return
        codes = [self._codes(t) for t in new]
        seen = np.unique(np.concatenate(codes)) if codes else np.zeros(0, np.uint32)
        missing = np.setdiff1d(seen, self.alpha, assume_unique=True)
        if len(missing):
            alpha = np.union1d(self.alpha, missing).astype(np.uint32)
            if len(alpha) >= 0xFFFF:
                raise AlphabetFull(f"{len(alpha)} distinct characters")
            remap = np.zeros(len(self.alpha) + 1, dtype=np.uint64)
            remap[1:] = np.searchsorted(alpha, self.alpha).astype(np.uint64) + 1
            self.alpha, self._remap = alpha, remap
            if self._rows:
                self._rows = {t: (self._renumber(k, remap), c) for t, (k, c) in self._rows.items()}
            self._version += 1
        for t, c in zip(new, codes):
            self._rows[t] = self._count(c)

    @staticmethod
    def _renumber(keys: np.ndarray, remap: np.ndarray) -> np.ndarray:
        out = np.zeros_like(keys)
        for j in range(4):
            shift = np.uint64(16 * (3 - j))
            out |= remap[(keys >> shift) & np.uint64(0xFFFF)] << shift
        return out

    def recode(self, keys: np.ndarray, since: int) -> np.ndarray:
        """Keys numbered under alphabet version `since`, renumbered to the current one (one step only)."""
        if since == self._version:
            return keys
        if since != self._version - 1:
            raise ValueError("keys are more than one alphabet change old")
        return self._renumber(keys, self._remap)

    def _count(self, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        import pandas as pd

        slots = np.searchsorted(self.alpha, codes).astype(np.uint64) + np.uint64(1)
        size = len(slots)
        parts = []
        for n in range(self.lo, min(self.hi, size) + 1):
            key = np.zeros(size - n + 1, dtype=np.uint64)
            for j in range(n):
                key |= slots[j:size - n + 1 + j] << np.uint64(16 * (3 - j))
            parts.append(key)
        if not parts:
            return np.zeros(0, np.uint64), np.zeros(0, np.intc)
        codes_, uniques = pd.factorize(np.concatenate(parts), sort=False)
        return np.asarray(uniques, dtype=np.uint64), np.bincount(codes_, minlength=len(uniques)).astype(np.intc)

    def row(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        self.prepare([text])
        return self._rows[text]

    def stacked(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        self.prepare(texts)
        rows = [self._rows[t] for t in texts]
        indptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum([len(r[0]) for r in rows], out=indptr[1:])
        if not rows:
            return np.zeros(0, np.uint64), np.zeros(0, np.intc), indptr
        return np.concatenate([r[0] for r in rows]), np.concatenate([r[1] for r in rows]), indptr

    @staticmethod
    def order_key(keys: np.ndarray) -> np.ndarray:
        return keys


def _first_seen(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(local id of each entry, global id of each local id): ids numbered in order of first appearance."""
    import pandas as pd

    codes, uniques = pd.factorize(ids, sort=False)
    return codes.astype(np.int64, copy=False), np.asarray(uniques, dtype=ids.dtype)


def _csr(data, indices, indptr, n_cols: int, dtype) -> sp.csr_array:
    index_dtype = np.int32 if indptr[-1] <= np.iinfo(np.int32).max else np.int64
    x = sp.csr_array((data.astype(np.intc, copy=False), indices.astype(index_dtype, copy=False),
                      indptr.astype(index_dtype, copy=False)),
                     shape=(len(indptr) - 1, n_cols), dtype=dtype)
    x.sort_indices()
    return x


class PoolTfidf:
    """A TfidfVectorizer fitted on one pool, built from cached counts.

    `matrix` is fit_transform(pool texts); `transform(texts)` is the vectorizer's transform.
    """

    def __init__(self, counts: "NgramCounts | KeyedCounts", pool: Sequence[str], *, min_df=1, max_df=1.0, max_features=None,
                 sublinear_tf: bool = False, dtype=np.float64):
        from sklearn.feature_extraction.text import TfidfTransformer

        self.counts = counts
        self.dtype = dtype
        ids, values, indptr = counts.stacked(pool)
        self.version = counts.version
        if len(ids) == 0:
            raise ValueError("empty vocabulary; perhaps the documents only contain stop words")
        # the pool's own numbering: terms in the order the pool first uses them (CountVectorizer's)
        local, by_first = _first_seen(ids)
        n_doc = len(indptr) - 1
        high = max_df if isinstance(max_df, Integral) else max_df * n_doc
        low = min_df if isinstance(min_df, Integral) else min_df * n_doc
        if high < low:
            raise ValueError("max_df corresponds to < documents than min_df")
        terms = by_first  # term id of each column of x
        if max_features is not None:
            x = _csr(values, local, indptr, len(by_first), dtype)
            x, terms = self._sort(x, terms)
            x, terms = self._limit(x, terms, high, low, max_features)
        else:
            # _limit_features before the matrix exists: dropping the rare terms' entries and numbering
            # the kept columns in order is what X[:, kept] does to the sorted matrix, on fewer entries
            dfs = np.bincount(local, minlength=len(by_first))
            mask = (dfs <= high) & (dfs >= low)
            if not mask.any():
                raise ValueError("After pruning, no terms remain. Try a lower min_df or a higher max_df.")
            new_col = np.cumsum(mask) - 1
            keep = mask[local]
            row_of = np.repeat(np.arange(n_doc), np.diff(indptr))
            kept_ptr = np.zeros(n_doc + 1, dtype=np.int64)
            np.cumsum(np.bincount(row_of[keep], minlength=n_doc), out=kept_ptr[1:])
            x = _csr(values[keep], new_col[local[keep]], kept_ptr, int(mask.sum()), dtype)
            terms = terms[mask]
            x, terms = self._sort(x, terms)
        self.matrix_counts = x
        by_id = np.argsort(terms, kind="stable")  # term ids sorted, and their columns, for lookups
        self._ids, self._cols = terms[by_id], by_id
        self.n_features = len(terms)
        self.tfidf = TfidfTransformer(norm="l2", use_idf=True, smooth_idf=True, sublinear_tf=sublinear_tf)
        self.tfidf.fit(x)
        self.matrix = self.tfidf.transform(x, copy=False)

    def _sort(self, x, terms):
        """CountVectorizer._sort_features: columns renumbered in term order (rows not re-sorted)."""
        order = np.argsort(self.counts.order_key(terms), kind="stable")
        map_index = np.empty(len(terms), dtype=x.indices.dtype)
        map_index[order] = np.arange(len(terms), dtype=x.indices.dtype)
        x.indices = map_index.take(x.indices, mode="clip")
        return x, terms[order]

    @staticmethod
    def _limit(x, terms, high, low, limit):
        """CountVectorizer._limit_features: drop columns outside [low, high] documents, keep the `limit` most frequent."""
        dfs = np.bincount(x.indices, minlength=x.shape[1])  # sklearn's _document_frequency of a CSR matrix
        mask = np.ones(len(dfs), dtype=bool)
        if high is not None:
            mask &= dfs <= high
        if low is not None:
            mask &= dfs >= low
        if limit is not None and mask.sum() > limit:
            tfs = np.asarray(x.sum(axis=0)).ravel()
            mask_inds = (-tfs[mask]).argsort()[:limit]
            new_mask = np.zeros(len(dfs), dtype=bool)
            new_mask[np.where(mask)[0][mask_inds]] = True
            mask = new_mask
        kept = np.where(mask)[0]
        if len(kept) == 0:
            raise ValueError("After pruning, no terms remain. Try a lower min_df or a higher max_df.")
        return x[:, kept], terms[kept]

    def transform(self, texts: Sequence[str]):
        """TfidfVectorizer.transform: counts of the pool's vocabulary only, then the pool's idf."""
        ids, values, indptr = self.counts.stacked(texts)
        if self.version != self.counts.version:  # new characters renumbered the keys: renumber the pool's too
            self._ids = self.counts.recode(self._ids, self.version)
            self.version = self.counts.version
        at = np.minimum(np.searchsorted(self._ids, ids), len(self._ids) - 1)
        keep = self._ids[at] == ids  # terms outside the pool's vocabulary are dropped
        cols = self._cols[at]
        row_of = np.repeat(np.arange(len(texts)), np.diff(indptr))
        kept_per_row = np.bincount(row_of[keep], minlength=len(texts))
        new_ptr = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum(kept_per_row, out=new_ptr[1:])
        x = _csr(values[keep], cols[keep], new_ptr, self.n_features, self.dtype)
        return self.tfidf.transform(x, copy=False)
