"""Rules shared by the builders: pool buckets by hash, and decontamination as shipped data."""

from __future__ import annotations

import hashlib
import json
from functools import cache
from importlib import resources

# What the decontamination list (package data beside this module) is called.
DECONTAMINATION = "decontamination.json"


def bucket(salt: str, key: str) -> float:
    """A stable draw in [0, 1) for `key`: the first 32 bits of sha256("<salt>:<key>") over 2**32.

    Pools (reserved, evaluation, training, background) are cut on it, so an author's pool depends
    on nothing but their id."""
    return int(hashlib.sha256(f"{salt}:{key}".encode()).hexdigest()[:8], 16) / 2**32


@cache
def removed_authors(stem: str) -> frozenset[str]:
    """The author ids decontamination removed from the file `stem` (empty for files it did not touch).

    The step compared training documents with evaluation documents, some of them in reserved
    pools that are not distributed, so it cannot be re-run from the public sources; its result,
    author ids only, ships with the package."""
    text = resources.files("harness.data.builders").joinpath(DECONTAMINATION).read_text(encoding="utf-8")
    return frozenset(json.loads(text)["removed_author_ids"].get(stem, ()))


def decontaminate(stem: str, records: list[dict]) -> list[dict]:
    """`records` without any document of an author decontamination removed from `stem`; order kept."""
    drop = removed_authors(stem)
    return [r for r in records if not drop.intersection(r["authorIDs"])]
