"""Building a seeded query/candidate split (the paper's Appendix B) from a collection and a seed.

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
collection's `split_defaults`, else the defaults of harness.evaluation.split_settings. A manifest built with the legacy
settings (pool "all", no rule, no collection defaults) keeps the original builder record, so
older manifests stay byte-identical.
"""

from __future__ import annotations

import random
from typing import Any, Mapping, Sequence

from harness.data.collection import Collection
from harness.errors import DataError, HarnessError
from harness.evaluation.split import BUILDER, BUILDER_VERSION, Query, Split, check_split
from harness.evaluation.split_settings import SplitSettings, split_settings


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
