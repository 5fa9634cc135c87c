"""Character n-gram TF-IDF: texts counted once per collection; each pool's idf and scores from the counts.

scikit-learn's TfidfVectorizer, fitted on a candidate pool, spends nearly all its time in
Python, cutting every text into n-grams and counting them, and it does so again for every
split seed although the seeds' pools are nearly the same documents. Here:

- `KeyedCounts` (or `NgramCounts`) counts each distinct text once;
- `CountMatrix` keeps every text counted so far as a row of one sparse matrix whose columns
  are the terms in sorted order (the order TfidfVectorizer numbers its vocabulary in), and
  the document frequencies over all its rows;
- `PoolTfidf` takes one pool (a seed's candidates): its document frequencies are the
  collection's corrected for the rows the pool leaves out (or holds twice), its vocabulary and
  idf scikit-learn's on them; every row's tf x idf is normalised at once, and the scores of the
  queries against the candidates come from one sparse x dense product (`Blocked`).

The scores are those of the per-seed TfidfVectorizer (`(Q @ C.T).toarray()`), bit for bit:

- tf, idf and tf x idf are the same float32 operations on the same values, and the L2
  normalisation is scikit-learn's own `normalize`;
- that adds a row's float32 squares into a double in the row's storage order, which for a
  fitted pool is the order the pool first met its terms, here term order. Every weight of a
  vocabulary term is at least 1 (tf >= 1, idf >= 1), so every square is a float32 >= 1, a
  multiple of 2**-23: while a row's sum stays below 2**30 every partial sum is a multiple of
  2**-23 below 2**53 * 2**-23, exact in a double, and the norm is the same in any order. A row
  that might pass the bound raises `NotExact` (the system then fits TfidfVectorizer itself);
  with the default sublinear tf no real text comes near it;
- scipy's sparse product adds the float32 products of a query row and a candidate row one at a
  time in ascending term order. scipy's csr x dense kernel (`csr_matvecs`, Y += A @ X) adds,
  for each candidate, its terms' products in ascending term order too, the products with a
  query's absent terms being +0, which leave a float32 sum unchanged; `Blocked` runs it block
  of terms after block of terms into one output, so each score still gets its additions in
  that order: the same additions, the same bits.

What exactness costs: the product has to be that kernel, a float32 multiply-add per candidate
term and query (about 0.2 s a seed on pan19-en's 100 queries x 5,500 documents), not a BLAS
product or per-block partial sums added afterwards, whose other order of additions would change
the last bit of some scores; and rows are normalised in full even though only the queries'
terms are scored. tests/plugins/test_char_ngram.py compares vectors, scores and rankings with
TfidfVectorizer fitted on each pool.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import scipy.sparse as sp

try:  # Y += A @ X for a CSR matrix A and dense X, Y: the kernel behind scipy's `csr @ dense`, which
    # returns a new Y; blocks of columns must add into one Y (see Blocked)
    from scipy.sparse._sparsetools import csr_matvecs as _csr_matvecs
except ImportError:  # pragma: no cover - the system then fits TfidfVectorizer per pool
    _csr_matvecs = None

# A row whose float32 squares add up to less than this has an L2 norm that does not depend on
# the order of addition (see the module docstring; 2**30 is the bound, halved for margin).
EXACT_NORM2 = float(2**29)
# Columns per block of Blocked: the queries' block of dense vectors (BLOCK_TERMS x queries x 4 bytes,
# 400 KiB for 100 queries) stays in a core's L2 cache while every candidate row reads from it; blocks
# widen where their row pointers (blocks x rows) would pass MAX_BLOCK_POINTERS.
BLOCK_TERMS = 1024
MAX_BLOCK_POINTERS = 2**23


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
    """n-gram counts of every text seen, under one growing vocabulary of strings (ids in order of
    arrival), and each id's position in the vocabulary sorted by term (Python string order, as
    CountVectorizer sorts). For any analyzer; `KeyedCounts` is the fast path for analyzer="char"."""

    version = None  # ids never change

    def __init__(self, analyzer):
        """analyzer: text -> list of n-grams (TfidfVectorizer.build_analyzer(), or char_analyzer)."""
        from collections import defaultdict

        self.analyze = analyzer
        self.vocabulary: dict[str, int] = defaultdict()
        self.vocabulary.default_factory = self.vocabulary.__len__  # a new term gets the next id
        self._rows: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._sorted_ids = np.zeros(0, dtype=np.int64)  # ids in term order
        self._sorted_terms: list[str] = []
        self._rank = np.zeros(0, dtype=np.int64)  # id -> position in term order

    def prepare(self, texts: Sequence[str]) -> None:
        for t in texts:
            self.row(t)

    def row(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """(ids, counts) of one text, counted once."""
        from collections import Counter

        cached = self._rows.get(text)
        if cached is not None:
            return cached
        counter = Counter(self.analyze(text))
        out = (
            np.fromiter(map(self.vocabulary.__getitem__, counter), dtype=np.int64, count=len(counter)),
            np.fromiter(counter.values(), dtype=np.intc, count=len(counter)),
        )
        self._rows[text] = out
        return out

    def recode(self, ids: np.ndarray, since) -> np.ndarray:
        return ids

    def order_key(self, ids: np.ndarray) -> np.ndarray:
        """Values whose order is the terms' order; terms added since the last call are sorted alone
        and merged in."""
        known, size = len(self._rank), len(self.vocabulary)
        if known < size:
            from bisect import bisect_left

            terms = list(self.vocabulary)  # insertion order = id order
            new = sorted(range(known, size), key=terms.__getitem__)
            old_terms = self._sorted_terms
            where = np.fromiter((bisect_left(old_terms, terms[i]) for i in new), dtype=np.int64, count=len(new))
            self._sorted_ids = np.insert(self._sorted_ids, where, np.asarray(new, dtype=np.int64))
            self._sorted_terms = [terms[i] for i in self._sorted_ids]
            self._rank = np.empty(size, dtype=np.int64)
            self._rank[self._sorted_ids] = np.arange(size)
        return self._rank[ids]


class AlphabetFull(Exception):
    """More distinct characters than 16-bit slots hold: use NgramCounts."""


class KeyedCounts:
    """Counts for analyzer="char" with n-grams of at most 4 characters, without a Python string per n-gram.

    A text becomes its characters' ranks in a sorted alphabet (1.., 16 bits each) and an n-gram
    the 64-bit number of its ranks, first character highest, absent ones 0: equal n-grams get
    equal numbers and numeric order is the strings' order, so the numbers serve as term ids and
    sort keys at once. New characters extend the alphabet and renumber every cached row and
    key (`version` counts the renumberings; the renumbering keeps the order).
    """

    def __init__(self, vectorizer):
        lo, hi = vectorizer.ngram_range
        if vectorizer.analyzer != "char" or hi > 4:
            raise ValueError("KeyedCounts reads analyzer='char' with ngram_max <= 4")
        self.lo, self.hi = lo, hi
        self._preprocess, self._decode, self._white = (
            vectorizer.build_preprocessor(),
            vectorizer.decode,
            vectorizer._white_spaces,
        )
        self.alpha = np.zeros(0, dtype=np.uint32)  # sorted code points; a character's slot value is its index + 1
        self._rows: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._version = 0

    @property
    def version(self) -> int:
        return self._version

    def _codes(self, text: str) -> np.ndarray:
        t = self._white.sub(" ", self._preprocess(self._decode(text)))
        return np.frombuffer(t.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)  # lone surrogates too

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
        """(keys in ascending order, counts) of one text's n-grams."""
        import pandas as pd

        slots = np.searchsorted(self.alpha, codes).astype(np.uint64) + np.uint64(1)
        size = len(slots)
        parts = []
        for n in range(self.lo, min(self.hi, size) + 1):
            key = np.zeros(size - n + 1, dtype=np.uint64)
            for j in range(n):
                key |= slots[j : size - n + 1 + j] << np.uint64(16 * (3 - j))
            parts.append(key)
        if not parts:
            return np.zeros(0, np.uint64), np.zeros(0, np.intc)
        codes_, uniques = pd.factorize(np.concatenate(parts), sort=True)
        return np.asarray(uniques, dtype=np.uint64), np.bincount(codes_, minlength=len(uniques)).astype(np.intc)

    def row(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        self.prepare([text])
        return self._rows[text]

    @staticmethod
    def order_key(keys: np.ndarray) -> np.ndarray:
        return keys


def counter_for(vectorizer) -> KeyedCounts | NgramCounts:
    """The fast numeric counter where it applies (analyzer="char", n <= 4), else the string one."""
    try:
        return KeyedCounts(vectorizer)
    except ValueError:
        return NgramCounts(char_analyzer(vectorizer))


class CountMatrix:
    """The n-gram counts of every text added, as the rows of one CSR matrix (texts x terms) whose
    columns are the terms in sorted order and whose rows list their terms in that order.

    Adding texts counts only those not seen; new terms renumber the columns (order kept), and
    `generation` counts the additions. `tf(sublinear)` and `document_frequency(rows)` are what
    each pool needs from it.
    """

    def __init__(self, vectorizer, counter: KeyedCounts | NgramCounts | None = None):
        self._vectorizer = vectorizer
        self.counter = counter_for(vectorizer) if counter is None else counter
        self._version = self.counter.version
        self._row_of: dict[str, int] = {}
        self._terms = np.zeros(0, dtype=np.uint64 if isinstance(self.counter, KeyedCounts) else np.int64)
        self.indptr = np.zeros(1, dtype=np.int64)
        self.indices = np.zeros(0, dtype=np.int32)
        self.counts = np.zeros(0, dtype=np.intc)
        self._cache: dict = {}  # tf arrays and document frequencies, dropped when rows are added
        self.generation = 0

    @property
    def n_rows(self) -> int:
        return len(self.indptr) - 1

    @property
    def n_terms(self) -> int:
        return len(self._terms)

    def rows(self, texts: Sequence[str]) -> np.ndarray:
        """Each text's row (add the texts first)."""
        return np.fromiter(map(self._row_of.__getitem__, texts), dtype=np.int64, count=len(texts))

    def add(self, texts: Sequence[str]) -> None:
        """Count the texts not counted yet and append them as rows."""
        new = [t for t in dict.fromkeys(texts) if t not in self._row_of]
        if not new:
            return
        try:
            self.counter.prepare(new)
        except AlphabetFull:  # more characters than keys hold: recount everything as strings
            old, generation = list(self._row_of), self.generation
            self.__init__(self._vectorizer, NgramCounts(char_analyzer(self._vectorizer)))
            self.generation = generation
            self.add(old + new)
            return
        if self._version != self.counter.version:  # the alphabet grew: same terms, same order, new keys
            self._terms = self.counter.recode(self._terms, self._version)
            self._version = self.counter.version
        self._append(new)

    def _append(self, texts: list[str]) -> None:
        import pandas as pd

        rows = [self.counter.row(t) for t in texts]
        lens = np.fromiter((len(r[0]) for r in rows), dtype=np.int64, count=len(rows))
        ids = np.concatenate([r[0] for r in rows])
        counts = np.concatenate([r[1] for r in rows]).astype(np.intc, copy=False)
        codes, uniques = pd.factorize(ids, sort=False)
        # merge the new terms into the sorted vocabulary: position of every old and new term
        every = np.concatenate([self._terms, np.asarray(uniques, dtype=self._terms.dtype)])
        keys = self.counter.order_key(every)
        order = np.argsort(keys, kind="stable")
        first = np.ones(len(order), dtype=bool)
        first[1:] = keys[order[1:]] != keys[order[:-1]]
        position = np.empty(len(order), dtype=np.int64)
        position[order] = np.cumsum(first) - 1
        n_old = len(self._terms)
        self._terms = every[order[first]]
        index_dtype = np.int32 if max(len(self._terms), len(self.indices) + len(ids)) < 2**31 else np.int64
        old_indices = self.indices
        if n_old and position[n_old - 1] != n_old - 1:  # new terms sort before old ones: renumber
            old_indices = position[:n_old].astype(index_dtype)[old_indices]
        block = sp.csr_array(
            (
                counts,
                position[n_old:][codes].astype(index_dtype),
                np.concatenate([[0], np.cumsum(lens)]).astype(index_dtype),
            ),
            shape=(len(rows), len(self._terms)),
        )
        block.sort_indices()  # a no-op for KeyedCounts, whose rows come sorted
        self.indices = np.concatenate([old_indices.astype(index_dtype, copy=False), block.indices])
        self.counts = np.concatenate([self.counts, block.data])
        self.indptr = np.concatenate([self.indptr, self.indptr[-1] + block.indptr[1:].astype(np.int64)])
        self._row_of.update(zip(texts, range(self.n_rows - len(texts), self.n_rows)))
        self._cache.clear()
        self.generation += 1

    def matrix(self, rows: np.ndarray, data: np.ndarray) -> sp.csr_array:
        """The given rows (in that order) with `data` (one value per stored count) as values."""
        index_dtype = self.indices.dtype
        full = sp.csr_array(
            (data, self.indices, self.indptr.astype(index_dtype, copy=False)),
            shape=(self.n_rows, self.n_terms),
            copy=False,
        )
        if len(rows) == self.n_rows and np.array_equal(rows, np.arange(self.n_rows)):
            return full
        return full[rows]

    def blocked(self) -> Blocked:
        """The entries laid out by blocks of columns (cached until rows are added)."""
        if "blocked" not in self._cache:
            self._cache["blocked"] = Blocked(self)
        return self._cache["blocked"]

    def tf(self, sublinear: bool) -> np.ndarray:
        """float32 tf of every stored count (cached until rows are added)."""
        if ("tf", sublinear) not in self._cache:
            self._cache["tf", sublinear] = term_frequency(self.counts, sublinear)
        return self._cache["tf", sublinear]

    def tf_squares(self, sublinear: bool) -> np.ndarray:
        """Per row, the sum of its squared tf (float64): times the largest idf squared, it bounds the
        row's squared norm (cached until rows are added)."""
        if ("tf2", sublinear) not in self._cache:
            tf = self.tf(sublinear).astype(np.float64)
            self._cache["tf2", sublinear] = np.bincount(
                np.repeat(np.arange(self.n_rows), np.diff(self.indptr)), weights=tf * tf, minlength=self.n_rows
            )
        return self._cache["tf2", sublinear]

    def document_frequency(self, pool_rows: np.ndarray) -> np.ndarray:
        """Documents of the pool (rows, repeats counted) holding each term: the collection's
        frequencies corrected by the rows whose multiplicity in the pool is not one."""
        if "df" not in self._cache:
            self._cache["df"] = np.bincount(self.indices, minlength=self.n_terms)
        times = np.bincount(pool_rows, minlength=self.n_rows)
        odd = np.flatnonzero(times != 1)
        if 2 * len(odd) > self.n_rows:  # a small pool: count it directly
            return np.bincount(self.matrix(pool_rows, self.counts).indices, minlength=self.n_terms)
        x = self.matrix(odd, self.counts)
        fix = np.bincount(x.indices, weights=np.repeat(times[odd] - 1.0, np.diff(x.indptr)), minlength=self.n_terms)
        return self._cache["df"] + fix.astype(np.int64)


def term_frequency(counts: np.ndarray, sublinear: bool) -> np.ndarray:
    """float32 tf of counts, as TfidfTransformer computes it from a float32 count matrix."""
    tf = counts.astype(np.float32)
    if sublinear:
        np.log(tf, tf)
        tf += 1.0
    return tf


class Blocked:
    """A CountMatrix's entries ordered by block of `width` columns, then row, then column.

    Block b is a CSR matrix (all rows x the block's columns): `indptr[b]`, and `local` (column
    minus the block's first) over `bounds[b]:bounds[b + 1]`; `order` maps these positions to
    the CountMatrix's entries. A product of the matrix with a dense operand, block after block
    into one output, reads one block of the operand at a time (it stays in the core's cache)
    while every row still meets its terms in ascending order. Blocks are BLOCK_TERMS wide, or
    wider where their row pointers would pass MAX_BLOCK_POINTERS.
    """

    def __init__(self, counts: CountMatrix):
        n_rows, index_dtype = counts.n_rows, counts.indices.dtype
        self.n_blocks = max(1, min(-(-counts.n_terms // BLOCK_TERMS), MAX_BLOCK_POINTERS // (n_rows + 1)))
        self.width = max(1, -(-counts.n_terms // self.n_blocks))
        self.n_rows = n_rows
        block = counts.indices // self.width
        self.order = np.argsort(block.astype(np.int16 if self.n_blocks < 2**15 else np.int64), kind="stable").astype(
            index_dtype
        )  # a radix sort for 16-bit keys
        row = np.repeat(np.arange(n_rows, dtype=np.int64), np.diff(counts.indptr))
        per_row = np.bincount(block.astype(np.int64) * n_rows + row, minlength=self.n_blocks * n_rows)
        self.indptr = np.zeros((self.n_blocks, n_rows + 1), dtype=index_dtype)
        np.cumsum(per_row.reshape(self.n_blocks, n_rows), axis=1, out=self.indptr[:, 1:])
        self.bounds = np.concatenate([[0], np.cumsum(self.indptr[:, -1], dtype=np.int64)])
        self.local = (counts.indices[self.order] % self.width).astype(index_dtype)

    def entries(self, b: int) -> slice:
        return slice(int(self.bounds[b]), int(self.bounds[b + 1]))


class NotExact(Exception):
    """A row's L2 norm could depend on the order of addition (see the module docstring)."""


class PoolTfidf:
    """A TfidfVectorizer fitted on one pool (rows of a CountMatrix), from the collection's counts.

    `vocabulary` (the kept terms, column numbers of the CountMatrix) and `idf` are the fitted
    vectorizer's; `vectors(rows)` is its transform of those rows (sorted indices), `scores` the
    cosine of queries against candidates, as `(transform(queries) @ fit_transform(pool).T)`.
    """

    def __init__(
        self,
        counts: CountMatrix,
        pool_rows: np.ndarray,
        *,
        min_df: int = 1,
        max_features: int | None = None,
        sublinear_tf: bool = False,
    ):
        self.counts, self.sublinear_tf, self.generation = counts, sublinear_tf, counts.generation
        n = len(pool_rows)
        df = counts.document_frequency(pool_rows)
        if not df.any():
            raise ValueError("empty vocabulary; perhaps the documents only contain stop words")
        mask = (df >= min_df) & (df > 0)  # max_df is 1.0: no term is in more than all documents
        if max_features is not None and mask.sum() > max_features:
            # CountVectorizer._limit_features: the column sums of the float32 count matrix, as scipy adds them
            tfs = np.asarray(counts.matrix(pool_rows, counts.counts.astype(np.float32)).sum(axis=0)).ravel()
            keep = (-tfs[mask]).argsort()[:max_features]  # the same array as scikit-learn sorts, so the same ties
            limited = np.zeros(len(mask), dtype=bool)
            limited[np.flatnonzero(mask)[keep]] = True
            mask = limited
        if not mask.any():
            raise ValueError("After pruning, no terms remain. Try a lower min_df or a higher max_df.")
        self.vocabulary = np.flatnonzero(mask)
        # TfidfTransformer.fit (smooth idf), in float32 as it computes it for a float32 matrix
        dfs = df[mask].astype(np.float32)
        dfs += 1.0
        idf = np.full_like(dfs, fill_value=n + 1, dtype=np.float32)
        idf /= dfs
        np.log(idf, out=idf)
        idf += 1.0
        self.idf = idf
        self._idf_of_term = np.zeros(counts.n_terms, dtype=np.float32)  # 0 outside the vocabulary
        self._idf_of_term[self.vocabulary] = idf

    def _check_exact(self, rows: np.ndarray) -> None:
        """NotExact if a row's squared norm could reach EXACT_NORM2: a bound first (every weight is at
        most tf x the largest idf, and a hair more for float32 rounding), the sum itself where it fails."""
        bound = self.counts.tf_squares(self.sublinear_tf)[rows] * (float(self.idf.max()) ** 2 * (1 + 2**-20))
        suspects = rows[bound >= EXACT_NORM2]
        if len(suspects):
            x = self.counts.matrix(suspects, self.counts.tf(self.sublinear_tf))
            w = x.data * self._idf_of_term[x.indices]
            norm2 = np.bincount(np.repeat(np.arange(len(suspects)), np.diff(x.indptr)), weights=w * w)
            if norm2.max() >= EXACT_NORM2:
                raise NotExact(f"a row's squared norm is {norm2.max():.3g}, not below {EXACT_NORM2:.3g}")

    def _normalised(self) -> sp.csr_array:
        """Every CountMatrix row's L2-normalised TF-IDF vector over all its columns (terms outside the
        vocabulary stored as zeros): tf x idf, then scikit-learn's normalize, as TfidfTransformer does.
        (Check the rows with _check_exact.)"""
        from sklearn.preprocessing import normalize

        self._check_current()
        c = self.counts
        w = sp.csr_array(
            (c.tf(self.sublinear_tf) * self._idf_of_term[c.indices], c.indices, c.indptr.astype(c.indices.dtype)),
            shape=(c.n_rows, c.n_terms),
            copy=False,
        )
        return normalize(w, norm="l2", copy=False)  # in place on the new data; the indices are only read

    def vectors(self, rows: np.ndarray) -> sp.csr_array:
        """The rows' L2-normalised TF-IDF vectors over `vocabulary` (the vectorizer's transform, indices sorted)."""
        self._check_exact(rows)
        x = self._normalised()[rows]
        column = np.full(self.counts.n_terms, -1, dtype=np.int64)
        column[self.vocabulary] = np.arange(len(self.vocabulary))
        x.eliminate_zeros()  # the terms outside the vocabulary
        return sp.csr_array((x.data, column[x.indices], x.indptr), shape=(len(rows), len(self.vocabulary)))

    def scores(
        self, query_rows: np.ndarray, cand_rows: np.ndarray, *, lanes: int | None = None
    ) -> Iterator[tuple[int, np.ndarray]]:
        """(first query, float32 scores of a block of queries x all candidates) blocks, in query order.

        Every CountMatrix row's vector times a dense block of up to `lanes` queries' vectors (default:
        256, fewer where the output, rows x lanes, would pass 64 MiB), block of terms after block of
        terms (Blocked) into one float32 output, with scipy's csr x dense kernel. Raises NotExact,
        before any block, where a norm could differ from scikit-learn's.
        """
        if _csr_matvecs is None:
            raise NotExact("scipy's csr_matvecs kernel is missing: no product adds blocks into one output")
        self._check_exact(np.concatenate([query_rows, cand_rows]))
        vec = self._normalised()
        blocked = self.counts.blocked()
        values = vec.data[blocked.order]  # in blocked order
        lanes = lanes or max(1, min(256, 2**24 // max(1, blocked.n_rows)))
        return self._products(vec, blocked, values, query_rows, cand_rows, lanes)

    def _products(self, vec, blocked: Blocked, values, query_rows, cand_rows, lanes):
        for start in range(0, len(query_rows), lanes):
            rows = query_rows[start : start + lanes]
            at = _entries(vec.indptr, rows)
            lane = np.repeat(np.arange(len(rows)), vec.indptr[rows + 1] - vec.indptr[rows])
            keep = vec.data[at] > 0  # the vocabulary's terms
            column, lane, q_values = vec.indices[at[keep]], lane[keep], vec.data[at[keep]]
            by_term = np.argsort(column, kind="stable")
            column, lane, q_values = column[by_term], lane[by_term], q_values[by_term]
            cuts = np.searchsorted(column, np.arange(blocked.n_blocks + 1) * blocked.width)
            out = np.zeros((blocked.n_rows, len(rows)), dtype=np.float32)
            dense = np.zeros((blocked.width, len(rows)), dtype=np.float32)  # the queries' vectors, one block
            for b in np.flatnonzero(np.diff(cuts)):  # the blocks holding some query term
                q = slice(cuts[b], cuts[b + 1])
                terms = column[q] % blocked.width
                dense[terms, lane[q]] = q_values[q]
                at = blocked.entries(b)
                _csr_matvecs(
                    blocked.n_rows,
                    blocked.width,
                    len(rows),
                    blocked.indptr[b],
                    blocked.local[at],
                    values[at],
                    dense.ravel(),
                    out.ravel(),
                )  # out += block @ dense, each row's terms in order
                dense[terms] = 0.0
            yield start, np.ascontiguousarray(out[cand_rows].T)

    def _check_current(self) -> None:
        if self.counts.generation != self.generation:
            raise ValueError(
                "texts were added to the counts after this pool was fitted (its columns moved): "
                "add the queries' texts before fitting the pool"
            )


def _entries(indptr: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Positions of the stored entries of the given rows of a CSR matrix, row after row."""
    starts, lengths = indptr[rows], indptr[rows + 1] - indptr[rows]
    offsets = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    return np.arange(lengths.sum()) + offsets
