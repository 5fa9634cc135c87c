"""HRS-like collections from one pool file whose records carry a `role` field.

`role: background` documents are haystack. `role: foreground` authors with documents in two or
more genres give queries and needles; a foreground author with a single genre is haystack too
(the Appendix-B rule). With `topics`, the genre of every document is replaced by a topic label
derived from the text over the whole pool (harness.data.topic_labels): the single-genre corpus
becomes a cross-topic one, and the labelling (settings and a fingerprint of the labels) is
recorded in `Collection.derivation`, from where the split builder copies it into each manifest.

`split_defaults` are the split settings the collection was measured with and is published at
(author fraction, candidate pool, query-needle dissimilarity rule); `aa-harness split` and
`run` use them unless told otherwise.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Mapping

from harness.data.collection import Collection, read_documents
from harness.data.topic_labels import TopicSettings, load_or_derive
from harness.errors import DataError


def role_collection(
    name: str,
    path: str | Path,
    *,
    topics: TopicSettings | None = None,
    labels_path: Path | None = None,
    split_defaults: Mapping[str, object] | None = None,
) -> Collection:
    docs = read_documents([path])
    roles = {d: doc.extra.get("role") for d, doc in docs.items()}
    bad = sorted({str(r) for r in roles.values()} - {"foreground", "background"})
    if bad:
        raise DataError(f"{path}: every record needs role 'foreground' or 'background' (found {', '.join(bad)})")
    derivation: dict[str, object] = {}
    if topics is not None:
        labels = load_or_derive({d: doc.fullText for d, doc in docs.items()}, topics, labels_path)
        docs = {d: replace(doc, genre=labels.labels[d]) for d, doc in docs.items()}
        derivation["topic_labels"] = labels.summary()
    background = {d for d, r in roles.items() if r == "background"}
    genres: dict[str, set[str]] = {}
    for d, doc in docs.items():
        if d not in background:
            for a in doc.authorIDs:
                genres.setdefault(a, set()).add(doc.genre)
    multi = {a for a, g in genres.items() if len(g) >= 2}
    # A foreground author writing in one genre only cannot give a cross-genre query: haystack.
    background |= {d for d, doc in docs.items() if d not in background and not set(doc.authorIDs) & multi}
    collection = Collection(
        name=name,
        documents=docs,
        background_ids=frozenset(background),
        sources=(str(path),),
        split_defaults=dict(split_defaults or {}),
        derivation=derivation,
    )
    if not collection.foreground_authors():
        raise DataError(f"collection {name!r}: no foreground author has documents in two or more genres")
    return collection
