"""The settings a split is built with: the seeds, the author fraction, the candidate pool, the
query-needle dissimilarity rule, the per-(author, genre) cap and pool cleaning.

Settings not given by the caller come from the collection's `split_defaults`, else the defaults
here. `legacy` settings (pool "all", nothing else) keep the original builder record, so older
manifests stay byte-identical.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from harness.data.collection import Collection
from harness.errors import HarnessError

SEEDS = (0, 1001, 2001, 3001)
DEFAULT_AUTHOR_FRACTION = 0.5
POOLS = ("all", "paper")
DEFAULT_POOL = "all"


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
