"""A collection: the documents a split is drawn from, and which of them are background.

Foreground authors are those with documents in two or more genres; they supply queries and
needles. Background documents (one-genre authors, and every document of a background file)
are only ever candidates: the haystack.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from harness.data.documents import Document, document_from_record
from harness.data.jsonl import iter_jsonl
from harness.errors import DataError


@dataclass(frozen=True)
class GivenSplit:
    """A split that ships with the data (HIATUS TA1 folders), before the evaluation layer reads it.

    queries: (documentID, authorIDs, genre label) in manifest order; needles: query -> candidate ids.
    """

    queries: tuple[tuple[str, tuple[str, ...], str], ...]
    candidates: tuple[str, ...]
    needles: Mapping[str, tuple[str, ...]]
    builder: Mapping[str, object]


@dataclass(frozen=True)
class Collection:
    """Documents by id (file order), plus the ids that may never be queries.

    `given_splits` is set for data that ships already split (HIATUS TA1 folders); the split
    builder then returns those instead of sampling. `split_defaults` and `derivation`: see
    harness.data.role_collections.
    """

    name: str
    documents: Mapping[str, Document]
    background_ids: frozenset[str] = frozenset()
    sources: tuple[str, ...] = ()
    given_splits: Mapping[int, GivenSplit] | None = field(default=None, compare=False)
    # Split settings this collection defaults to (author_fraction, pool, dissimilarity), used
    # where the caller gives none; and what was derived to build it (topic labels), which the
    # split builder copies into every manifest.
    split_defaults: Mapping[str, Any] = field(default_factory=dict, compare=False)
    derivation: Mapping[str, object] = field(default_factory=dict, compare=False)

    def author_genres(self) -> dict[str, dict[str, list[str]]]:
        """author -> genre -> document ids, over non-background documents only."""
        table: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        for doc in self.documents.values():
            if doc.documentID in self.background_ids:
                continue
            for author in doc.authorIDs:
                table[author][doc.genre].append(doc.documentID)
        return {a: dict(g) for a, g in table.items()}

    def foreground_authors(self) -> list[str]:
        """Sorted ids of authors with documents in two or more genres."""
        return sorted(a for a, genres in self.author_genres().items() if len(genres) >= 2)

    def fingerprint(self) -> str:
        """sha256 over every document's id, authors, genre, background flag and text hash."""
        h = hashlib.sha256()
        for doc_id in sorted(self.documents):
            d = self.documents[doc_id]
            row = [d.documentID, list(d.authorIDs), d.genre, doc_id in self.background_ids, d.text_sha256]
            h.update(json.dumps(row, ensure_ascii=False).encode("utf-8") + b"\n")
        return h.hexdigest()


def read_documents(paths: Iterable[str | Path]) -> dict[str, Document]:
    """Read canonical JSONL files in order; duplicate ids across or within files are errors."""
    return read_documents_by_file(paths)[0]


def read_documents_by_file(paths: Iterable[str | Path]) -> tuple[dict[str, Document], dict[str, int]]:
    """Like read_documents, plus the index of the file each document came from."""
    docs: dict[str, Document] = {}
    seen_at: dict[str, str] = {}
    origin: dict[str, int] = {}
    for index, path in enumerate(paths):
        for lineno, record in iter_jsonl(path):
            where = f"{path}:{lineno}"
            doc = document_from_record(record, where)
            if doc.documentID in docs:
                raise DataError(
                    f"{where}: duplicate documentID {doc.documentID!r} (first seen at {seen_at[doc.documentID]})"
                )
            docs[doc.documentID] = doc
            seen_at[doc.documentID] = where
            origin[doc.documentID] = index
    return docs, origin


def load_collection(
    name: str,
    files: Sequence[str | Path],
    background_files: Sequence[str | Path] = (),
    *,
    explicit_foreground: bool = False,
) -> Collection:
    """Build a collection from canonical JSONL files.

    With `explicit_foreground`, `files` hold only foreground documents (the HIATUS
    foreground/background layout) and an author there with a single genre is an error;
    otherwise one-genre authors in `files` simply become background.
    """
    if not files:
        raise DataError(f"collection {name!r}: no document files given")
    docs, origin = read_documents_by_file([*files, *background_files])
    extra = {d for d, i in origin.items() if i >= len(files)}
    collection = Collection(
        name=name,
        documents=docs,
        background_ids=frozenset(extra),
        sources=tuple(str(p) for p in [*files, *background_files]),
    )
    genres = collection.author_genres()
    if explicit_foreground:
        single = sorted(a for a, g in genres.items() if len(g) < 2)
        if single:
            only = next(iter(genres[single[0]]))
            raise DataError(
                f"collection {name!r}: foreground author {single[0]!r} has documents in only one genre ({only!r})"
                f"{f' (and {len(single) - 1} more such authors)' if len(single) > 1 else ''}; "
                "a foreground author needs documents in two or more genres"
            )
    else:
        background_authors = {a for a, g in genres.items() if len(g) < 2}
        ids = {d for a in background_authors for g in genres[a].values() for d in g}
        # A co-authored document stays foreground if any of its authors is foreground.
        fg_docs = {d for a, g in genres.items() if len(g) >= 2 for ids_ in g.values() for d in ids_}
        collection = Collection(
            name=name,
            documents=docs,
            background_ids=frozenset(extra) | frozenset(ids - fg_docs),
            sources=collection.sources,
        )
    if not collection.foreground_authors():
        raise DataError(
            f"collection {name!r}: no author has documents in two or more genres, so there is nothing to query "
            f"(read {len(docs)} documents from {', '.join(collection.sources)})"
        )
    return collection
