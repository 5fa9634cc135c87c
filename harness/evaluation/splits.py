"""Seeded query/candidate splits (the paper's Appendix B) and their manifests.

For a seed S, a local `random.Random(S)` (never global randomness, never set order):
  1. samples round(author_fraction * F) of the F foreground authors (sorted ids);
  2. for each sampled author (sorted), picks one of their genres uniformly (sorted names)
     -- every genre qualifies, since a foreground author by definition also writes in another;
  3. every document of that author in that genre becomes a query, ranked on its own;
  4. the candidate pool is every other document of the collection: the sampled authors'
     documents in other genres (the needles), all background documents, and the documents
     of foreground authors that were not sampled.

Co-authored documents (several authorIDs): a document is a needle of a query when it shares
at least one author with the query and is in another genre. A candidate in the query's
genre sharing an author with a query is left out of the pool (neither a needle nor a fair
distractor). When co-authorship ties sampled authors together, a needle can itself be
claimed as a query, which may leave a query with no needle; such a query is set aside
(neither query nor candidate), deterministically, and the split keeps the rest.


Non-sampled foreground authors stay in the pool on purpose (pool "all", the harness's
original choice): they write in several genres just like the needles' authors, so they are the
hardest distractors a system meets, and keeping them makes the pool nearly the same across
seeds. Pool "paper" is Appendix B as written: the sampled authors' other-genre documents and
every background document, nothing else; HRS-style collections default to it.

A collection may also set a query-needle dissimilarity rule (harness.evaluation.dissimilarity):
queries whose nearest needle is lexically too close are dropped after step 3, and the manifest
records the rule and what it removed. A collection without a rule may instead ask for each query's
largest query-needle cosine to be recorded (split default `needle_cosine`: the rule's measure, no
threshold), so a view of all queries can be cut into strata afterwards. A collection may also cap the documents per
(author, genre) (harness.evaluation.author_cap): before step 1, the seed keeps at most N documents of each larger
cell and leaves the rest out of the split. Settings not given by the caller come from the
collection's `split_defaults`, else the defaults below. A manifest built with the legacy
settings (pool "all", no rule, no collection defaults) keeps the original builder record, so
older manifests stay byte-identical.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from harness.data.collection import Collection
from harness.errors import DataError, HarnessError

SEEDS = (0, 1001, 2001, 3001)
DEFAULT_AUTHOR_FRACTION = 0.5
POOLS = ("all", "paper")
DEFAULT_POOL = "all"
BUILDER = "appendix-b"
BUILDER_VERSION = 1


@dataclass(frozen=True)
class Query:
    documentID: str
    authorIDs: tuple[str, ...]
    genre: str


@dataclass(frozen=True)
class Split:
    """One manifest: which documents are queries, which are candidates, and each query's needles."""

    collection: str
    seed: int
    queries: tuple[Query, ...]
    candidates: tuple[str, ...]
    needles: Mapping[str, tuple[str, ...]]
    builder: Mapping[str, Any]
    source_sha256: str

    def content(self) -> dict[str, Any]:
        """The manifest without its own hash, in a canonical order."""
        return {
            "builder": dict(self.builder),
            "candidates": list(self.candidates),
            "collection": self.collection,
            "counts": {
                "queries": len(self.queries),
                "candidates": len(self.candidates),
                "needles": sum(len(v) for v in self.needles.values()),
                "query_authors": len({a for q in self.queries for a in q.authorIDs}),
            },
            "needles": {q: list(v) for q, v in sorted(self.needles.items())},
            "queries": [
                {"documentID": q.documentID, "authorIDs": list(q.authorIDs), "genre": q.genre} for q in self.queries
            ],
            "seed": self.seed,
            "source_sha256": self.source_sha256,
        }

    @functools.cached_property
    def sha256(self) -> str:  # computed once: a large manifest takes a while to serialise
        return hashlib.sha256(_dump(self.content()).encode("utf-8")).hexdigest()

    def to_json(self) -> str:
        return _dump({**self.content(), "sha256": self.sha256})

    @property
    def query_genres(self) -> dict[str, str]:
        return {q.documentID: q.genre for q in self.queries}


def _dump(obj: Any) -> str:
    return json.dumps(obj, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


@dataclass(frozen=True)
class SplitSettings:
    author_fraction: float
    pool: str
    dissimilarity: Any  # DissimilarityRule | None
    max_per_author_genre: int | None = None  # harness.evaluation.author_cap; None: no cap
    pool_cleaning: Any = None  # harness.evaluation.pool_cleaning.PoolCleaning | None

    @property
    def legacy(self) -> bool:
        return (
            self.pool == DEFAULT_POOL
            and self.dissimilarity is None
            and self.max_per_author_genre is None
            and self.pool_cleaning is None
        )


def split_settings(
    collection: Collection,
    author_fraction: float | None = None,
    pool: str | None = None,
    dissimilarity: Any = None,
    max_per_author_genre: int | None = None,
    pool_cleaning: Any = None,
) -> SplitSettings:
    """The caller's settings, else the collection's `split_defaults`, else the harness defaults.
    max_per_author_genre: None takes the collection's, 0 is no cap; pool_cleaning: None takes the
    collection's, False is none."""
    from harness.evaluation import pool_cleaning as cleaning
    from harness.evaluation.author_cap import SETTING, check_cap
    from harness.evaluation.dissimilarity import DissimilarityRule

    d = collection.split_defaults
    fraction = (
        author_fraction if author_fraction is not None else float(d.get("author_fraction", DEFAULT_AUTHOR_FRACTION))
    )
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction <= 1:
        raise HarnessError(f"author fraction must be in (0, 1], got {fraction!r}")
    cap = check_cap(max_per_author_genre if max_per_author_genre is not None else d.get(SETTING))
    pool = pool or str(d.get("pool", DEFAULT_POOL))
    if pool not in POOLS:
        raise HarnessError(f"unknown candidate pool {pool!r} (known: {', '.join(POOLS)})")
    rule = dissimilarity if dissimilarity is not None else d.get("dissimilarity")
    if isinstance(rule, Mapping):
        rule = DissimilarityRule.from_dict(rule)
    if rule is not None and rule is not False and rule.threshold >= 1:
        rule = None  # a cosine threshold of 1 or more removes nothing: no rule
    clean = cleaning.PoolCleaning.from_value(pool_cleaning if pool_cleaning is not None else d.get(cleaning.SETTING))
    return SplitSettings(fraction, pool, rule or None, cap, clean)


def build_split(
    collection: Collection,
    seed: int,
    author_fraction: float | None = None,
    *,
    pool: str | None = None,
    dissimilarity: Any = None,
    max_per_author_genre: int | None = None,
    pool_cleaning: Any = None,
) -> Split:
    """Sample a split from `collection` with seed `seed` (see the module docstring).

    author_fraction, pool ("all" or "paper"), dissimilarity (a DissimilarityRule, or False
    for none), max_per_author_genre (0 for none) and pool_cleaning (False for none) default to the
    collection's split_defaults. The steps, in order: cap the documents per (author, genre), sample
    the authors, pick their queries, make the candidate pool, find each query's needles, take bots
    out, apply the collection's rule, drop near-copies; the seeded generator is read by the
    sampling and the picking only.
    """
    if collection.given_splits is not None:
        return _given_split(collection, seed)
    settings = split_settings(collection, author_fraction, pool, dissimilarity, max_per_author_genre, pool_cleaning)
    source = collection
    left_out: frozenset[str] = frozenset()
    if settings.max_per_author_genre is not None:
        from harness.evaluation.author_cap import left_out_by_cap, without

        left_out = left_out_by_cap(source, settings.max_per_author_genre, seed)
        collection = without(source, left_out)
    rng = random.Random(seed)
    sampled = _sample_authors(collection, settings.author_fraction, rng)
    query_genre = _pick_queries(collection, sampled, rng)
    candidates, pool_sizes = _candidate_pool(collection, query_genre, sampled, settings.pool)
    needles = _find_needles(collection, query_genre, candidates, seed)
    builder: dict[str, Any] = {"name": BUILDER, "version": BUILDER_VERSION, "author_fraction": settings.author_fraction}
    if not settings.legacy or collection.split_defaults or collection.derivation:
        builder.update(pool=settings.pool, pool_sizes=pool_sizes)
        if collection.derivation:
            builder["derivation"] = dict(collection.derivation)
    if settings.max_per_author_genre is not None:
        builder.update(max_per_author_genre=settings.max_per_author_genre, left_out_by_cap=len(left_out))
    if settings.pool_cleaning is not None:  # after the draws, so every other query stays as it was
        from harness.evaluation.pool_cleaning import remove_bots

        needles, candidates = remove_bots(source, settings.pool_cleaning, needles, candidates, builder)
    needles = _apply_rule(source, settings, needles, builder)  # the rule's measure is fitted on every document
    if settings.pool_cleaning is not None:
        from harness.evaluation.pool_cleaning import drop_near_copies

        needles = drop_near_copies(source, settings.pool_cleaning, needles, builder)
    docs = collection.documents
    split = Split(
        collection=collection.name,
        seed=seed,
        queries=tuple(Query(q, docs[q].authorIDs, query_genre[q]) for q in sorted(needles)),
        candidates=tuple(candidates),
        needles=needles,
        builder=builder,
        source_sha256=source.fingerprint(),
    )
    check_split(split, source)
    return split


def _given_split(collection: Collection, seed: int) -> Split:
    """A collection that ships its splits (HRS): the one of this seed, as given."""
    assert collection.given_splits is not None
    if seed not in collection.given_splits:
        have = ", ".join(str(s) for s in sorted(collection.given_splits))
        raise HarnessError(
            f"collection {collection.name!r} ships fixed splits for seed(s) {have}; there is none for seed {seed}"
        )
    given = collection.given_splits[seed]
    return Split(
        collection=collection.name,
        seed=seed,
        queries=tuple(Query(*q) for q in given.queries),
        candidates=given.candidates,
        needles=given.needles,
        builder=given.builder,
        source_sha256=collection.fingerprint(),
    )


def _sample_authors(collection: Collection, author_fraction: float, rng: random.Random) -> list[str]:
    """Step 1: round(author_fraction * F) of the F foreground authors, at least one, sorted."""
    foreground = collection.foreground_authors()
    n = max(1, round(author_fraction * len(foreground)))
    return sorted(rng.sample(foreground, n))


def _pick_queries(collection: Collection, sampled: Sequence[str], rng: random.Random) -> dict[str, str]:
    """Steps 2 and 3: one genre per sampled author; every document of theirs in it is a query.
    Returns each query's genre by document id."""
    genres = collection.author_genres()
    query_genre: dict[str, str] = {}
    for author in sampled:
        genre = rng.choice(sorted(genres[author]))
        for doc_id in genres[author][genre]:
            if doc_id not in query_genre:  # a co-authored document is claimed once
                query_genre[doc_id] = genre
    return query_genre


def _candidate_pool(
    collection: Collection, query_genre: Mapping[str, str], sampled: Sequence[str], pool: str
) -> tuple[list[str], dict[str, int]]:
    """Step 4: the candidates (sorted ids) and the sizes of both pools ("all" and "paper")."""
    docs = collection.documents
    # Same-genre documents sharing an author with a query are neither needles nor fair
    # distractors; with single-author documents these are exactly the other queries.
    query_authors_by_genre: dict[str, set[str]] = {}
    for q, genre in query_genre.items():
        query_authors_by_genre.setdefault(genre, set()).update(docs[q].authorIDs)
    candidates = sorted(
        d
        for d, doc in docs.items()
        if d not in query_genre and not (set(doc.authorIDs) & query_authors_by_genre.get(doc.genre, set()))
    )
    keep = set(sampled)
    paper = [d for d in candidates if d in collection.background_ids or set(docs[d].authorIDs) & keep]
    return (paper if pool == "paper" else candidates), {"all": len(candidates), "paper": len(paper)}


def _find_needles(
    collection: Collection, query_genre: Mapping[str, str], candidates: Sequence[str], seed: int
) -> dict[str, tuple[str, ...]]:
    """Each query's needles: candidates sharing an author with it, in another genre. A query with
    none (possible only through co-authorship) is set aside; no query with a needle is an error."""
    docs = collection.documents
    by_author: dict[str, list[str]] = {}
    for c in candidates:
        for a in docs[c].authorIDs:
            by_author.setdefault(a, []).append(c)
    needles = {}
    for q in sorted(query_genre):
        found = {c for a in docs[q].authorIDs for c in by_author.get(a, ()) if docs[c].genre != query_genre[q]}
        if found:
            needles[q] = tuple(sorted(found))
    if not needles:
        raise DataError(
            f"collection {collection.name!r} seed {seed}: no query has a needle "
            "(a needle shares an author with its query and is in another genre)"
        )
    return needles


def _apply_rule(
    collection: Collection, settings: SplitSettings, needles: dict[str, tuple[str, ...]], builder: dict[str, Any]
) -> dict[str, tuple[str, ...]]:
    """The collection's query-needle dissimilarity rule: the queries it keeps (with their needles),
    and in `builder` the rule and what it removed. Without a rule, every query is kept, and a
    collection that asks for it gets each query's largest needle cosine recorded."""
    if settings.dissimilarity is None:
        if collection.split_defaults.get("needle_cosine") is not None:
            builder["needle_cosine"] = record_needle_cosine(
                collection, needles, collection.split_defaults["needle_cosine"]
            )
        return needles
    from harness.evaluation.dissimilarity import max_needle_cosine

    docs = collection.documents
    rule = settings.dissimilarity
    closest = max_needle_cosine(collection, needles, rule)
    kept = sorted(q for q in needles if closest[q] < rule.threshold)
    builder["dissimilarity"] = {
        **rule.as_dict(),
        "queries_before": len(needles),
        "query_authors_before": len({a for q in needles for a in docs[q].authorIDs}),
        "queries_dropped": len(needles) - len(kept),
    }
    return {q: needles[q] for q in kept}


def record_needle_cosine(
    collection: Collection, needles: Mapping[str, Sequence[str]], measure: Mapping[str, Any]
) -> dict[str, Any]:
    """The rule's measure without its threshold, and each query's largest query-needle cosine under it:
    a view with no rule keeps every query and records what the rule would have seen."""
    from harness.evaluation.dissimilarity import DissimilarityRule, max_needle_cosine

    rule = DissimilarityRule.from_dict(measure)
    settings = {k: v for k, v in rule.as_dict().items() if k != "threshold"}
    return {**settings, "by_query": max_needle_cosine(collection, needles, rule)}


def check_split(split: Split, collection: Collection | None = None) -> None:
    """The guarantees every split must meet; a violation is a bug or a corrupted manifest."""
    where = f"split {split.collection!r} seed {split.seed}"
    cands = set(split.candidates)
    if len(cands) != len(split.candidates):
        raise DataError(f"{where}: duplicate candidate ids")
    qids = [q.documentID for q in split.queries]
    if len(set(qids)) != len(qids):
        raise DataError(f"{where}: duplicate query ids")
    if not qids:
        raise DataError(f"{where}: no queries")
    docs = collection.documents if collection is not None else None
    if docs is not None:
        missing = [d for d in [*qids, *split.candidates] if d not in docs]
        if missing:
            raise DataError(
                f"{where}: {len(missing)} document id(s) of the manifest are not in the collection (first: {missing[0]!r}); "
                "the manifest was built from other data"
            )
    extra = sorted(set(split.needles) - set(qids))
    if extra:
        raise DataError(f"{where}: needles listed for {extra[0]!r}, which is not a query")
    for q in split.queries:
        needles = split.needles.get(q.documentID, ())
        if not needles:
            raise DataError(f"{where}: query {q.documentID!r} has no needle")
        if q.documentID in cands:
            raise DataError(f"{where}: query {q.documentID!r} is also a candidate")
        if len(set(needles)) != len(needles):
            raise DataError(f"{where}: query {q.documentID!r} lists a needle twice")
        if docs is not None and set(q.authorIDs) != set(docs[q.documentID].authorIDs):
            raise DataError(
                f"{where}: query {q.documentID!r} has authors {list(q.authorIDs)} in the manifest, "
                f"{list(docs[q.documentID].authorIDs)} in the collection"
            )
        builder_genres = docs is not None and split.builder.get("name") == BUILDER
        if builder_genres and docs is not None and q.genre != docs[q.documentID].genre:
            raise DataError(
                f"{where}: query {q.documentID!r} has genre {q.genre!r} in the manifest, "
                f"{docs[q.documentID].genre!r} in the collection"
            )
        for n in needles:
            if n not in cands:
                raise DataError(f"{where}: needle {n!r} of query {q.documentID!r} is not a candidate")
            if docs is None:
                continue
            if not set(docs[n].authorIDs) & set(docs[q.documentID].authorIDs):
                raise DataError(
                    f"{where}: needle {n!r} of query {q.documentID!r} shares no author with it "
                    f"({list(docs[n].authorIDs)} vs {list(docs[q.documentID].authorIDs)})"
                )
            if builder_genres and docs[n].genre == q.genre:
                raise DataError(f"{where}: needle {n!r} shares its query's genre {q.genre!r}")


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def check_place(split: Split, path: Path, collection: str | None = None) -> None:
    """The manifest's seed and collection are the ones its file name and folder say (or `collection`,
    for a folder of a collection's earlier manifests kept under another name)."""
    path = Path(path)
    if path.name != f"seed-{split.seed}.json":
        raise DataError(
            f"{path}: the manifest is of seed {split.seed}, but the file is named {path.name} "
            f"(copied by hand? seed-{split.seed}.json is its name)"
        )
    if (collection or path.parent.name) != split.collection:
        raise DataError(
            f"{path}: the manifest is of collection {split.collection!r}, but lies in folder {path.parent.name!r}"
        )


def _rebuilt(split: Split, collection: Collection, where: str) -> Split | None:
    """The builder's split for the manifest's recorded settings and seed."""
    from harness.evaluation.dissimilarity import DissimilarityRule
    from harness.evaluation.pool_cleaning import recorded_rule

    if collection.given_splits is not None:
        return build_split(collection, split.seed) if split.seed in collection.given_splits else None
    b = split.builder
    if b.get("name") != BUILDER:
        raise DataError(
            f"{where}: builder {b.get('name')!r} is not this harness's {BUILDER!r}, so it cannot be rebuilt"
        )
    rule = b.get("dissimilarity")
    try:
        return build_split(
            collection,
            split.seed,
            b.get("author_fraction"),
            pool=b.get("pool", DEFAULT_POOL),
            dissimilarity=DissimilarityRule.from_dict(rule) if isinstance(rule, dict) else False,
            max_per_author_genre=b.get("max_per_author_genre") or 0,
            pool_cleaning=recorded_rule(b) or False,
        )
    except (HarnessError, TypeError, ValueError, KeyError) as e:
        raise DataError(f"{where}: rebuilding it from its builder record fails ({e})") from None


def check_by_rebuilding(split: Split, path: Path, collection: Collection) -> None:
    """DataError unless the builder, given the data and the manifest's settings and seed, builds this
    manifest (see harness.evaluation.manifest_check; a passed check is cached)."""
    from harness.evaluation import manifest_check

    if split.source_sha256 != collection.fingerprint():
        raise DataError(f"{path}: built from other documents than collection {collection.name!r} has now")
    if manifest_check.is_checked(split):
        return
    manifest_check.compare_rebuilt(split, _rebuilt(split, collection, str(path)), str(path))
    manifest_check.record_checked(split)


def split_from_manifest(obj: Mapping[str, Any], where: str) -> Split:
    if not isinstance(obj, dict):
        raise DataError(f"{where}: not a split manifest (a JSON object is expected)")
    queries, needles = obj.get("queries"), obj.get("needles")
    well_typed = (
        isinstance(obj.get("collection"), str)
        and isinstance(obj.get("seed"), int)
        and not isinstance(obj.get("seed"), bool)
        and _strings(obj.get("candidates"))
        and isinstance(queries, list)
        and all(
            isinstance(q, dict)
            and isinstance(q.get("documentID"), str)
            and _strings(q.get("authorIDs"))
            and isinstance(q.get("genre"), str)
            for q in queries
        )
        and isinstance(needles, dict)
        and all(_strings(v) for v in needles.values())
        and isinstance(obj.get("builder", {}), dict)
        and isinstance(obj.get("source_sha256", ""), str)
    )
    if not well_typed:
        raise DataError(
            f"{where}: not a split manifest (collection and seed, candidates as a list of ids, queries "
            "as {documentID, authorIDs, genre}, needles as lists of ids)"
        )
    try:
        split = Split(
            collection=obj["collection"],
            seed=int(obj["seed"]),
            queries=tuple(Query(q["documentID"], tuple(q["authorIDs"]), q["genre"]) for q in obj["queries"]),
            candidates=tuple(obj["candidates"]),
            needles={k: tuple(v) for k, v in obj["needles"].items()},
            builder=obj.get("builder", {}),
            source_sha256=obj.get("source_sha256", ""),
        )
    except (KeyError, TypeError, ValueError) as e:
        raise DataError(f"{where}: not a split manifest ({type(e).__name__}: {e})") from None
    if obj.get("sha256") != split.sha256:
        raise DataError(f"{where}: sha256 does not match the manifest content (edited by hand or truncated?)")
    return split


def manifest_path(splits_dir: Path, collection: str, seed: int) -> Path:
    return Path(splits_dir) / collection / f"seed-{seed}.json"


def find_manifest(places: Sequence[Path], collection: str, seed: int) -> Path:
    """The first of `places` holding the manifest; a missing one is one line naming --splits-dir."""
    for place in places:
        path = manifest_path(place, collection, seed)
        if path.is_file():
            return path
    raise DataError(
        f"{manifest_path(places[-1], collection, seed)}: split manifest of {collection!r} seed {seed} "
        f"not found (looked in {', '.join(str(p) for p in places)}); name its folder with --splits-dir"
    )


def read_manifest(path: Path, collection: str | None = None) -> Split:
    """A manifest whose sha256 and place (seed and collection against the file name and folder) check
    out; its structure is check_split's, and rebuilding it from the data check_by_rebuilding's."""
    from harness.data.jsonl import read_json

    split = split_from_manifest(read_json(path, "split manifest"), str(path))
    check_place(split, Path(path), collection)
    return split


def write_manifest(split: Split, splits_dir: Path) -> Path:
    return write_manifests([split], splits_dir)[0]


def write_manifests(splits: Sequence[Split], splits_dir: Path) -> list[Path]:
    """The manifests of several seeds, written as one set (a crash leaves all old or all new)."""
    from harness.output_set import write_output_set

    if not splits:
        return []
    return write_output_set(splits_dir, {f"{s.collection}/seed-{s.seed}.json": s.to_json() for s in splits})


def get_split(
    collection: Collection,
    seed: int,
    splits_dir: Path,
    *,
    record: Path | None = None,
    author_fraction: float | None = None,
    write: bool = True,
    pool: str | None = None,
    dissimilarity: Any = None,
    max_per_author_genre: int | None = None,
    pool_cleaning: Any = None,
) -> Split:
    """The committed manifest when there is one (checked against the data), else a fresh build.

    record: a read-only folder looked in first (the harness's own record); a fresh build is
    written only into `splits_dir`. A manifest built from different data, or with a different
    author fraction, is an error rather than silently replaced: published numbers are tied to
    the committed split.
    """
    from harness.evaluation.pool_cleaning import recorded_rule

    path = manifest_path(splits_dir, collection.name, seed)
    if record is not None and manifest_path(record, collection.name, seed).exists():
        path = manifest_path(record, collection.name, seed)
    if path.exists():
        split = read_manifest(path)
        if collection.given_splits is None:
            if split.source_sha256 != collection.fingerprint():
                raise DataError(
                    f"{path}: built from different documents than collection {collection.name!r} has now. "
                    f"If this is another collection that happens to share the name, give it its own name "
                    f"(--name-collection NAME for a file) or its own --splits-dir DIR; only if the data of "
                    f"{collection.name!r} changed on purpose, rebuild with `aa-harness split --overwrite` "
                    "(this replaces the old manifests, and results made on them no longer match)"
                )
            want = split_settings(collection, author_fraction, pool, dissimilarity, max_per_author_genre, pool_cleaning)
            if split.builder.get("author_fraction") != want.author_fraction:
                raise DataError(
                    f"{path}: built with author fraction {split.builder.get('author_fraction')}, asked for {want.author_fraction}"
                )
            if split.builder.get("pool", DEFAULT_POOL) != want.pool:
                raise DataError(
                    f"{path}: built with candidate pool {split.builder.get('pool', DEFAULT_POOL)!r}, "
                    f"asked for {want.pool!r}"
                )
            have_rule = split.builder.get("dissimilarity")
            want_rule = want.dissimilarity.as_dict() if want.dissimilarity is not None else None
            if (have_rule is None) != (want_rule is None) or (
                have_rule is not None
                and want_rule is not None
                and {k: have_rule.get(k) for k in want_rule} != want_rule
            ):
                raise DataError(f"{path}: built with dissimilarity rule {have_rule}, asked for {want_rule}")
            have_clean = recorded_rule(split.builder)
            want_clean = want.pool_cleaning.as_dict() if want.pool_cleaning is not None else None
            if have_clean != want_clean:
                raise DataError(f"{path}: built with pool cleaning {have_clean}, asked for {want_clean}")
            have_cap = split.builder.get("max_per_author_genre")
            if have_cap != want.max_per_author_genre:
                raise DataError(
                    f"{path}: built with {_cap_words(have_cap)} per (author, genre), asked for "
                    f"{_cap_words(want.max_per_author_genre)} (--max-per-author-genre)"
                )
        check_split(split, collection)
        check_by_rebuilding(split, path, collection)
        return split
    split = build_split(
        collection,
        seed,
        author_fraction,
        pool=pool,
        dissimilarity=dissimilarity,
        max_per_author_genre=max_per_author_genre,
        pool_cleaning=pool_cleaning,
    )
    if write:
        write_manifest(split, splits_dir)
    return split


def get_splits(
    collection: Collection,
    seeds: Sequence[int],
    splits_dir: Path,
    *,
    record: Path | None = None,
    author_fraction: float | None = None,
    pool: str | None = None,
    dissimilarity: Any = None,
    max_per_author_genre: int | None = None,
) -> list[Split]:
    """get_split for each seed, writing no manifest unless every requested seed builds."""
    splits = [
        get_split(
            collection,
            seed,
            splits_dir,
            record=record,
            author_fraction=author_fraction,
            write=False,
            pool=pool,
            dissimilarity=dissimilarity,
            max_per_author_genre=max_per_author_genre,
        )
        for seed in seeds
    ]

    def have(split) -> bool:
        in_record = record is not None and manifest_path(record, split.collection, split.seed).exists()
        return in_record or manifest_path(splits_dir, split.collection, split.seed).exists()

    write_manifests([s for s in splits if not have(s)], splits_dir)  # one set
    return splits


def _cap_words(cap: Any) -> str:
    return "no cap on the documents" if cap is None else f"at most {cap} documents"


def largest_author_share(split: Split) -> tuple[str, int]:
    """The author with the most queries in the split, and how many (a co-authored query counts for each author)."""
    per: dict[str, int] = {}
    for q in split.queries:
        for a in q.authorIDs:
            per[a] = per.get(a, 0) + 1
    return min(per.items(), key=lambda kv: (-kv[1], kv[0]))


def counts_table(splits: Sequence[Split]) -> str:
    """Queries and candidates per collection and seed, as a markdown table (like the paper's)."""
    from tabulate import tabulate

    rows = []
    for s in sorted(splits, key=lambda s: (s.collection, s.seed)):
        c = s.content()["counts"]
        b = s.builder
        sizes = b.get("pool_sizes")
        rule = b.get("dissimilarity")
        cap = b.get("max_per_author_genre")
        top = largest_author_share(s)[1]
        rows.append(
            [
                s.collection,
                s.seed,
                c["query_authors"],
                c["queries"],
                f"{top} ({100 * top / c['queries']:.0f}%)",
                c["candidates"],
                c["needles"],
                b.get("author_fraction", "—"),
                b.get("pool", DEFAULT_POOL) if b.get("name") == BUILDER else "given",
                f"{cap} ({b.get('left_out_by_cap', 0)} left out)" if cap is not None else "—",
                f"{sizes['paper']} / {sizes['all']}" if sizes else "—",
                (
                    f"needle cos < {rule['threshold']}: dropped {rule['queries_dropped']} of {rule['queries_before']} "
                    f"queries, {rule['query_authors_before'] - c['query_authors']} of {rule['query_authors_before']} authors"
                )
                if rule
                else "—",
                _cleaning_words(b),
            ]
        )
    return tabulate(
        rows,
        headers=[
            "collection",
            "seed",
            "query authors",
            "queries",
            "largest author's queries",
            "candidates",
            "query-needle pairs",
            "author fraction",
            "pool",
            "max documents per (author, genre)",
            "pool size paper / all",
            "dissimilarity rule: dropped",
            "pool cleaning: dropped",
        ],
        tablefmt="github",
        disable_numparse=True,
    )


def _cleaning_words(builder: Mapping[str, Any]) -> str:
    rec = builder.get("pool_cleaning")
    if not isinstance(rec, Mapping):
        return "—"
    return (
        f"{rec['queries_dropped_as_bots']} queries of {len(rec['bot_authors'])} bots, "
        f"{rec['queries_dropped_near_copy']} near-copies (needle cos ≥ {rec['near_copy_cosine']})"
    )
