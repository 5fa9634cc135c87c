"""The splits a run uses: the committed manifest when there is one, checked against the data (its
settings, its structure, and that the builder rebuilds it), else a fresh build written to the
splits folder.

Published numbers are tied to the committed split, so a manifest that does not match the data or the
asked-for settings is an error, never silently replaced.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from harness.data.collection import Collection
from harness.errors import DataError, HarnessError
from harness.evaluation.manifests import manifest_path, read_manifest, write_manifest, write_manifests
from harness.evaluation.split import BUILDER, Split, check_split
from harness.evaluation.split_builder import build_split
from harness.evaluation.split_settings import DEFAULT_POOL, split_settings


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
