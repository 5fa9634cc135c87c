"""Surface topics: clusters of a derived topic labelling that group texts by how they are written
(an encoding fault, a spelling habit, another language, lists of numbers), not by what they are
about. A query "cross-topic" from such a cluster is often cross-spelling, which an authorship
system may solve by the spelling alone.

A collection declares them beside its topic labels, in `<manifests>/<collection>/topic-kinds.json`
(the `-all` view reads its collection's): each cluster's kind and what it holds, tied to the labels
by their sha256. The page section reports every run's pooled Success@8 on the queries that touch a
surface cluster (the query's topic or any of its needles' is one) and on the rest. The split is
unchanged: the section says how much of a score comes from such queries.
"""

from __future__ import annotations

import math
from pathlib import Path

from harness.data.jsonl import read_json
from harness.errors import DataError
from harness.evaluation.manifests import manifest_path, read_manifest
from harness.reports.significance import first_ranks_by_key, pooled_success_at_8

KINDS_FILE = "topic-kinds.json"
LABELS_FILE = "topic-labels.json"
ALL_VIEW = "-all"


def declared_kinds(collection: str, splits_dir: Path | None) -> tuple[dict, dict] | None:
    """(the declaration, the topic labels file it is tied to), or None when the collection declares none."""
    if splits_dir is None:
        return None
    folder = Path(splits_dir) / collection.removesuffix(ALL_VIEW)
    kinds_path, labels_path = folder / KINDS_FILE, folder / LABELS_FILE
    if not kinds_path.is_file():
        return None
    kinds, labels = read_json(kinds_path, "topic kinds"), read_json(labels_path, "topic labels")
    if not isinstance(kinds, dict) or not isinstance(kinds.get("kinds"), dict):
        raise DataError(f"{kinds_path}: not a topic-kinds file (an object with 'kinds' is expected)")
    if kinds.get("labels_sha256") != labels.get("labels_sha256"):
        raise DataError(
            f"{kinds_path}: declared for labels {kinds.get('labels_sha256')}, but {labels_path} "
            f"holds labels {labels.get('labels_sha256')}"
        )
    unknown = sorted(set(kinds["kinds"]) - set(labels.get("top_terms", {})))
    if unknown:
        raise DataError(f"{kinds_path}: {', '.join(unknown)} is not a topic of {labels_path}")
    return kinds, labels


def touching(collection: str, seeds, splits_dir: Path, surface: set[str], labels: dict[str, str]) -> tuple[set, int]:
    """((seed, query) keys whose query or any needle is in a surface topic, all queries over the seeds)."""
    keys, total = set(), 0
    for seed in sorted(seeds):
        split = read_manifest(manifest_path(splits_dir, collection, seed))
        total += len(split.queries)
        for q in split.queries:
            if labels.get(q.documentID) in surface or any(
                labels.get(n) in surface for n in split.needles[q.documentID]
            ):
                keys.add((seed, q.documentID))
    return keys, total


def _s8(results: list[dict], keys, inside: bool) -> str:
    """Pooled Success@8 on the queries in `keys` (inside) or on the others, as a page cell."""
    scored = set(first_ranks_by_key(results))
    value, n = pooled_success_at_8(results, scored & keys if inside else scored - keys)
    return "—" if not n else f"{100 * value:.1f}"


def surface_topics_section(runs: dict, names: list[str], collection: str, splits_dir: Path | None) -> str:
    from harness.foundation.markdown_table import markdown_table

    found = declared_kinds(collection, splits_dir)
    names = [n for n in names if (collection, n) in runs]
    if found is None or not names or splits_dir is None:
        return ""
    kinds, labelled = found
    surface, top = set(kinds["kinds"]), labelled["top_terms"]
    seeds = sorted({r["seed"] for n in names for r in runs[(collection, n)]})
    keys, total = touching(collection, seeds, Path(splits_dir), surface, labelled["labels"])
    declared = markdown_table(
        [[t, k["kind"], k["what"], ", ".join(top[t])] for t, k in sorted(kinds["kinds"].items())],
        headers=["topic", "kind", "what it holds", "top terms"],
        disable_numparse=True,
    )
    rows = [[n, _s8(runs[(collection, n)], keys, True), _s8(runs[(collection, n)], keys, False)] for n in names]
    share = 100 * len(keys) / total if total else math.nan
    table = markdown_table(
        rows,
        headers=[
            "run",
            f"S@8 touching a surface topic ({len(keys)} queries)",
            f"S@8 on the rest ({total - len(keys)} queries)",
        ],
        disable_numparse=True,
    )
    return (
        "## Surface topics\n\n"
        f"{len(surface)} of the topic labelling's clusters group texts by how they are written, not by what "
        f"they are about ({KINDS_FILE} beside the labels). {len(keys)} of the {total} queries over seeds "
        f"{' '.join(map(str, seeds))} ({share:.0f}%) touch one: the query's topic or a needle's is a surface "
        'topic, so for them "cross-topic" may mean "cross-spelling". Pooled Success@8 on those queries and '
        f"on the rest; the split is unchanged.\n\n{declared}\n\n{table}\n\n"
    )
