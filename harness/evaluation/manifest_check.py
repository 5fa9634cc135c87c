"""A split manifest is accepted when the builder, given the data and the manifest's own settings and
seed, builds the same manifest.

The sha256 inside a manifest only says the file is whole: anyone who edits it can reseal it. The
builder is deterministic and the manifest records its settings (author fraction, pool,
dissimilarity rule), so rebuilding it from the collection is a check no edit survives. A passed
check is remembered in the cache folder under the collection's fingerprint and the manifest
file's sha256, so it costs the build once; the record carries an HMAC under the user's key
(harness.foundation.user_key), so a record planted in the cache grants nothing.

Without the data (a results folder read on a machine without the corpus) the checks that need
no data still apply: the file's own sha256, the seed and collection against the file's place,
and the split's structural guarantees (check_split without documents).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

from harness.errors import DataError

log = logging.getLogger(__name__)

CHECKS_FOLDER = "manifest-checks"


def cache_dir() -> Path:
    """Where passed checks are remembered: <cache>/manifest-checks (see harness.foundation.locations)."""
    from harness.foundation.locations import cache_dir as cache

    return cache() / CHECKS_FOLDER


def _parts(split) -> tuple[str, str, str]:
    return (split.collection, str(split.source_sha256), split.sha256)


def is_checked(split) -> bool:
    """Whether this manifest passed the rebuild check here before (no data needed to ask): a
    record under its key whose HMAC the user's key makes."""
    from harness.foundation.user_key import verify

    try:
        record = json.loads(_key(split).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(record, dict) and verify(record.get("hmac"), *_parts(split))


def _key(split) -> Path:
    """The passed check of this manifest on data of this fingerprint (the one the manifest records,
    which the caller compares with the data's before it rebuilds)."""
    h = hashlib.sha256(f"{split.collection}\0{split.source_sha256}\0{split.sha256}".encode()).hexdigest()
    return cache_dir() / f"{h}.json"


def record_checked(split) -> None:
    try:
        from harness.foundation.atomic import atomic_write_text
        from harness.foundation.user_key import sign

        atomic_write_text(
            _key(split),
            json.dumps(
                {
                    "collection": split.collection,
                    "seed": split.seed,
                    "manifest_sha256": split.sha256,
                    "pid": os.getpid(),
                    "hmac": sign(*_parts(split)),
                }
            )
            + "\n",
        )
    except OSError as e:  # a read-only cache costs the rebuild next time, nothing else
        log.debug("manifest check not cached (%s)", e)


def compare_rebuilt(split, rebuilt, where: str) -> None:
    """DataError unless the rebuilt split is the manifest's."""
    if rebuilt is None or rebuilt.sha256 != split.sha256:
        raise DataError(
            f"{where}: the builder, given the data and this manifest's settings and seed, builds another "
            f"split ({_first_difference(split, rebuilt)}); the manifest was edited, or the data changed: "
            "rebuild it with `aa-harness split --overwrite`"
        )


def _first_difference(split, rebuilt) -> str:
    if rebuilt is None:
        return "none for this seed"
    a, b = split.content(), rebuilt.content()
    for k in ("queries", "candidates", "needles", "builder", "counts", "source_sha256"):
        if a.get(k) != b.get(k):
            return f"its {k} differ"
    return "its content differs"
