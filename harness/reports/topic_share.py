"""How much of a ranking's top k lies in the query's own genre (its topic or subreddit).

In a cross-genre split every needle is outside the query's genre, so each same-genre candidate
in the top k is a distractor by another author. A system that ranks by topic fills its top k
with them; one that ranks by style should not. The share is set beside its chance level (the
same-genre share of all candidates), so "ranks by topic" is a measured claim, not a guess.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import mean

from harness.errors import DataError


@dataclass(frozen=True)
class GenreShare:
    """One run on one seed: mean over queries of the same-genre share of the top k, and of all candidates."""

    top_k: float
    chance: float
    n_queries: int


def same_genre_share(
    rankings: Mapping[str, Sequence[tuple[str, float]]],
    query_genres: Mapping[str, str],
    candidates: Sequence[str],
    genre_of: Mapping[str, str],
    k: int,
    where: str,
) -> GenreShare:
    """The same-genre share of each query's top k (ranked order) and of the whole candidate pool.

    where: names the run and seed in errors (a candidate the collection does not know, a ranked
    query the split does not have).
    """
    if k < 1:
        raise DataError(f"{where}: k must be at least 1, got {k}")
    missing = [c for c in candidates if c not in genre_of]
    if missing:
        raise DataError(
            f"{where}: {len(missing)} candidate(s) are not in the collection, e.g. {missing[0]!r} "
            "(rankings made on other data?)"
        )
    pool: dict[str, int] = {}
    for c in candidates:
        pool[genre_of[c]] = pool.get(genre_of[c], 0) + 1
    tops, chances = [], []
    for query, ranked in rankings.items():
        if query not in query_genres:
            raise DataError(f"{where}: ranked query {query!r} is not a query of the split")
        genre = query_genres[query]
        top = [doc for doc, _ in ranked[:k]]
        if not top:
            continue
        unknown = next((d for d in top if d not in genre_of), None)
        if unknown is not None:
            raise DataError(f"{where}: query {query!r} ranks {unknown!r}, which is not in the collection")
        tops.append(sum(genre_of[d] == genre for d in top) / len(top))
        chances.append(pool.get(genre, 0) / len(candidates))
    if not tops:
        raise DataError(f"{where}: no query has a ranking")
    return GenreShare(top_k=mean(tops), chance=mean(chances), n_queries=len(tops))
