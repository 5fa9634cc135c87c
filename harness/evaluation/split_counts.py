"""What a set of splits holds, counted: queries, candidates, needles and the settings per collection
and seed, as the markdown table of the docs and `aa-harness split`.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from harness.evaluation.split import BUILDER, Split
from harness.evaluation.split_settings import DEFAULT_POOL


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
