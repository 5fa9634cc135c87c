"""Pool cleaning for the views that keep every query (the `-all` views): bots and near-copies out.

A view with no dissimilarity rule keeps queries that are not authorship problems at all:
- **bots**: an account whose posts are one template ("Here's a sneak peek of /r/…", "This comment
  was left automatically") is found by its template, by any system, whatever the genre;
- **near-copies**: a query whose needle is the same text posted twice (a cross-post) is found by
  any lexical system, and measures copy detection, not authorship.

The rules are stated so that anyone can check them against the data:
- a bot is an author whose id (after its namespace, `reddit:`) ends in "bot", case ignored, and
  one of whose documents says it is automated ("I am a bot", "I'm a robot", "left automatically",
  "beep boop") or names the account itself (a bot's footer links to its own page). Both are
  needed: an id alone ("yungrobot") is a person's name. Every document of a bot leaves the split
  after the seed's draws, so every other query and needle stays as it was;
- a near-copy is a query whose closest needle has a word TF-IDF cosine at or above
  `near_copy_cosine` (the measure of harness.evaluation.dissimilarity, fitted on every document);
  the query is dropped, its needles stay in the pool as candidates of other queries.

The manifest records the rule, the bot authors found and what each part removed, and the
manifest check rebuilds it byte for byte.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any, Mapping, Sequence

from harness.data.collection import Collection
from harness.errors import HarnessError

SETTING = "pool_cleaning"
_SAYS_AUTOMATED = re.compile(
    r"\bI am a bot\b|\bI'?m a (?:ro)?bot\b|\bleft automatically\b|\bbeep\W+boop\b", re.IGNORECASE
)


@dataclass(frozen=True)
class PoolCleaning:
    bots: bool = True
    near_copy_cosine: float = 0.65  # 1 or more: no near-copy rule

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_value(cls, value: Any) -> PoolCleaning | None:
        """The rule from a split setting: a mapping of its fields, a PoolCleaning, or None/False for none."""
        if value is None or value is False:
            return None
        if isinstance(value, PoolCleaning):
            return value
        if not isinstance(value, Mapping):
            raise HarnessError(f"{SETTING} must be a table of bots (true/false) and near_copy_cosine, got {value!r}")
        unknown = sorted(set(value) - set(cls.__dataclass_fields__) - set(_RECORDED))
        if unknown:
            raise HarnessError(f"{SETTING}: unknown key(s) {', '.join(unknown)} (known: bots, near_copy_cosine)")
        bots, cosine = value.get("bots", True), value.get("near_copy_cosine", 0.65)
        if not isinstance(bots, bool):
            raise HarnessError(f"{SETTING}.bots must be true or false, got {bots!r}")
        if isinstance(cosine, bool) or not isinstance(cosine, (int, float)) or not 0 < cosine:
            raise HarnessError(
                f"{SETTING}.near_copy_cosine must be a cosine above 0 (1 or more: no near-copy rule), got {cosine!r}"
            )
        return cls(bots, float(cosine))


# What the builder adds beside the rule in a manifest (read back as the rule, these are ignored).
_RECORDED = ("bot_authors", "bot_candidates_removed", "queries_dropped_as_bots", "queries_dropped_near_copy")


def bot_authors(collection: Collection) -> list[str]:
    """The authors the bot rule finds (foreground and background), sorted."""
    texts: dict[str, list[str]] = {}
    for doc in collection.documents.values():
        for a in doc.authorIDs:
            if a.rsplit(":", 1)[-1].lower().endswith("bot"):
                texts.setdefault(a, []).append(doc.fullText)
    return sorted(
        a
        for a, ts in texts.items()
        if any(_SAYS_AUTOMATED.search(t) or a.rsplit(":", 1)[-1].lower() in t.lower() for t in ts)
    )


def remove_bots(
    collection: Collection,
    rule: PoolCleaning,
    needles: dict[str, tuple[str, ...]],
    candidates: Sequence[str],
    builder: dict[str, Any],
) -> tuple[dict[str, tuple[str, ...]], list[str]]:
    """(needles, candidates) without any document of a bot; a query left with no needle is dropped."""
    bots = bot_authors(collection) if rule.bots else []
    bot_set = set(bots)
    gone = {d for d, doc in collection.documents.items() if bot_set.intersection(doc.authorIDs)}
    kept = {q: tuple(n for n in ns if n not in gone) for q, ns in needles.items() if q not in gone}
    kept = {q: ns for q, ns in kept.items() if ns}
    builder[SETTING] = {
        **rule.as_dict(),
        "bot_authors": bots,
        "bot_candidates_removed": len(gone & set(candidates)),
        "queries_dropped_as_bots": len(needles) - len(kept),
    }
    return kept, [c for c in candidates if c not in gone]


def drop_near_copies(
    collection: Collection, rule: PoolCleaning, needles: dict[str, tuple[str, ...]], builder: dict[str, Any]
) -> dict[str, tuple[str, ...]]:
    """The queries whose closest needle is below the near-copy cosine; the recorded per-query
    cosines, if any, are kept for the queries that stay."""
    from harness.evaluation.dissimilarity import DissimilarityRule, max_needle_cosine

    recorded = (builder.get("needle_cosine") or {}).get("by_query")
    closest = recorded if recorded is not None else max_needle_cosine(collection, needles, DissimilarityRule())
    kept = {q: ns for q, ns in needles.items() if closest[q] < rule.near_copy_cosine}
    builder[SETTING]["queries_dropped_near_copy"] = len(needles) - len(kept)
    if recorded is not None:
        builder["needle_cosine"]["by_query"] = {q: v for q, v in recorded.items() if q in kept}
    return kept


def recorded_rule(builder: Mapping[str, Any]) -> dict[str, Any] | None:
    """The rule a manifest was built with (without what it removed), or None."""
    rec = builder.get(SETTING)
    return {k: rec[k] for k in PoolCleaning.__dataclass_fields__ if k in rec} if isinstance(rec, Mapping) else None
